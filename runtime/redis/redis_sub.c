#include "redis/redis_sub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <ev.h>
#include <hiredis/hiredis.h>

struct redis_sub {
    struct ev_loop *loop;
    redisContext *c;     /* NULL once lost */
    ev_io io;
    redis_sub_fn *on_message, *on_lost;
    void *data;
};

/* Runs a command on the blocking context; returns its reply, or NULL with err set
 * (an error reply included). */
static redisReply *call(redisContext *c, int *refused, char *err, size_t errlen, const char *what,
                        int argc, const char **argv)
{
    redisReply *r = redisCommandArgv(c, argc, argv, NULL);
    if (!r) {
        snprintf(err, errlen, "%s: %s", what, c->errstr[0] ? c->errstr : "no reply");
    } else if (r->type == REDIS_REPLY_ERROR) {
        *refused = 1;
        snprintf(err, errlen, "%s: %.*s", what, (int)r->len, r->str);
        freeReplyObject(r);
        r = NULL;
    }
    return r;
}

static void lost(struct redis_sub *sub)
{
    ev_ref(sub->loop);
    ev_io_stop(sub->loop, &sub->io);
    redisFree(sub->c);
    sub->c = NULL;
    sub->on_lost(sub->data);
}

static void on_readable(struct ev_loop *loop, ev_io *io, int revents)
{
    (void)loop;
    (void)revents;
    struct redis_sub *sub = io->data;
    if (redisBufferRead(sub->c) != REDIS_OK) {
        lost(sub);
        return;
    }
    void *reply;
    while (sub->c && redisGetReplyFromReader(sub->c, &reply) == REDIS_OK && reply) {
        const redisReply *r = reply;
        int message = r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
                      r->element[0]->type == REDIS_REPLY_STRING &&
                      strcmp(r->element[0]->str, "message") == 0;
        freeReplyObject(reply);
        if (message)
            sub->on_message(sub->data);
    }
    if (sub->c && sub->c->err)
        lost(sub);
}

struct redis_sub *redis_sub_open(struct ev_loop *loop, const struct redis_settings *s,
                                 const char *channel, double timeout, redis_sub_fn *on_message,
                                 redis_sub_fn *on_lost, void *data, long long *client_id,
                                 int *refused, char *err, size_t errlen)
{
    *refused = 0;
    struct timeval tv = {(time_t)timeout, (suseconds_t)((timeout - (double)(time_t)timeout) * 1e6)};
    struct redis_sub *sub = calloc(1, sizeof *sub);
    redisReply *r = NULL;
    if (!sub) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    sub->c = s->path[0] ? redisConnectUnixWithTimeout(s->path, tv)
                        : redisConnectWithTimeout(s->host, s->port, tv);
    if (!sub->c || sub->c->err) {
        char where[320];
        config_describe_redis(s, where, sizeof where);
        snprintf(err, errlen, "cannot connect to Redis at %s: %s", where,
                 sub->c ? sub->c->errstr : "out of memory");
        goto fail;
    }
    redisSetTimeout(sub->c, tv);
    if (s->password[0]) {
        const char *auth[] = {"AUTH", s->username[0] ? s->username : s->password, s->password};
        if (!(r = call(sub->c, refused, err, errlen, "AUTH", s->username[0] ? 3 : 2, auth)))
            goto fail;
        freeReplyObject(r);
    }
    const char *id[] = {"CLIENT", "ID"};
    if (!(r = call(sub->c, refused, err, errlen, "CLIENT ID", 2, id)))
        goto fail;
    *client_id = r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
    freeReplyObject(r);
    const char *subscribe[] = {"SUBSCRIBE", channel};
    if (!(r = call(sub->c, refused, err, errlen, "SUBSCRIBE", 2, subscribe)))
        goto fail;
    freeReplyObject(r);

    sub->loop = loop;
    sub->on_message = on_message;
    sub->on_lost = on_lost;
    sub->data = data;
    ev_io_init(&sub->io, on_readable, sub->c->fd, EV_READ);
    sub->io.data = sub;
    ev_io_start(loop, &sub->io);
    ev_unref(loop);  /* a subscription alone does not keep the loop running */
    return sub;
fail:
    if (sub->c)
        redisFree(sub->c);
    free(sub);
    return NULL;
}

int redis_sub_alive(const struct redis_sub *sub)
{
    return sub && sub->c;
}

void redis_sub_close(struct redis_sub *sub)
{
    if (!sub)
        return;
    if (sub->c) {
        ev_ref(sub->loop);
        ev_io_stop(sub->loop, &sub->io);
        redisFree(sub->c);
    }
    free(sub);
}
