#include "redis/redis_sub.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <ev.h>
#include <hiredis/hiredis.h>

#include "redis/redis_tls.h"

struct redis_sub {
    struct ev_loop *loop;
    redisContext *c;     /* NULL once lost */
    SSL_CTX *tls;        /* with TLS: its context and session on c's socket */
    SSL *ssl;
    ev_io io;
    redis_sub_fn *on_message, *on_lost;
    void *data;
};

/* Notes a failure of c's TLS session (message why) as hiredis notes its own. */
static void tls_error(redisContext *c, const char *why)
{
    c->err = REDIS_ERR_IO;
    snprintf(c->errstr, sizeof c->errstr, "%.*s", (int)sizeof c->errstr - 1, why);
}

/* Sends argv through sub's TLS session and reads the reply (blocking, within the
 * socket's timeouts); NULL with the context's error set when it failed. */
static redisReply *tls_command(struct redis_sub *sub, int argc, const char **argv)
{
    char *cmd, why[600];
    int len = redisFormatCommandArgv(&cmd, argc, argv, NULL);
    if (len < 0) {
        tls_error(sub->c, "out of memory");
        return NULL;
    }
    for (int off = 0; off < len;) {
        int n = SSL_write(sub->ssl, cmd + off, len - off);
        if (n <= 0) {
            redis_tls_failure(sub->ssl, SSL_get_error(sub->ssl, n), "write", "the subscription", why,
                              sizeof why);
            tls_error(sub->c, why);
            redisFreeCommand(cmd);
            return NULL;
        }
        off += n;
    }
    redisFreeCommand(cmd);
    for (;;) {
        void *reply = NULL;
        if (redisReaderGetReply(sub->c->reader, &reply) != REDIS_OK) {
            tls_error(sub->c, "protocol error");
            return NULL;
        }
        if (reply)
            return reply;
        char buf[4096];
        int n = SSL_read(sub->ssl, buf, sizeof buf);
        if (n <= 0) {
            redis_tls_failure(sub->ssl, SSL_get_error(sub->ssl, n), "read", "the subscription", why,
                              sizeof why);
            tls_error(sub->c, why);
            return NULL;
        }
        redisReaderFeed(sub->c->reader, buf, (size_t)n);
    }
}

/* Runs a command on the blocking context; returns its reply, or NULL with err set
 * (an error reply included). */
static redisReply *call(struct redis_sub *sub, int *refused, char *err, size_t errlen,
                        const char *what, int argc, const char **argv)
{
    redisContext *c = sub->c;
    redisReply *r = sub->ssl ? tls_command(sub, argc, argv) : redisCommandArgv(c, argc, argv, NULL);
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

/* Ends sub's connection and TLS session, if any. */
static void end(struct redis_sub *sub)
{
    SSL_free(sub->ssl);
    sub->ssl = NULL;
    SSL_CTX_free(sub->tls);
    sub->tls = NULL;
    if (sub->c)
        redisFree(sub->c);
    sub->c = NULL;
}

static void lost(struct redis_sub *sub)
{
    ev_ref(sub->loop);
    ev_io_stop(sub->loop, &sub->io);
    end(sub);
    sub->on_lost(sub->data);
}

/* Reads what the TLS session has into the context's reader, until the socket (non-
 * blocking by now) would block. Returns -1 when the session ended or failed. */
static int tls_read(struct redis_sub *sub)
{
    char buf[16 * 1024];
    for (;;) {
        int n = SSL_read(sub->ssl, buf, sizeof buf);
        if (n > 0) {
            redisReaderFeed(sub->c->reader, buf, (size_t)n);
            continue;
        }
        int code = SSL_get_error(sub->ssl, n);
        return code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE ? 0 : -1;
    }
}

static void on_readable(struct ev_loop *loop, ev_io *io, int revents)
{
    (void)loop;
    (void)revents;
    struct redis_sub *sub = io->data;
    if (sub->ssl ? tls_read(sub) != 0 : redisBufferRead(sub->c) != REDIS_OK) {
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
    if (s->tls.enabled) {
        char where[320];
        config_describe_redis(s, where, sizeof where);
        if (!(sub->tls = redis_tls_context(s, err, errlen)) ||
            !(sub->ssl = redis_tls_session(sub->tls, s, sub->c->fd, err, errlen)))
            goto fail;
        int rc = SSL_connect(sub->ssl);
        if (rc != 1) {
            redis_tls_failure(sub->ssl, SSL_get_error(sub->ssl, rc), "handshake", where, err, errlen);
            goto fail;
        }
    }
    if (s->password[0]) {
        const char *auth[] = {"AUTH", s->username[0] ? s->username : s->password, s->password};
        if (!(r = call(sub, refused, err, errlen, "AUTH", s->username[0] ? 3 : 2, auth)))
            goto fail;
        freeReplyObject(r);
    }
    const char *id[] = {"CLIENT", "ID"};
    if (!(r = call(sub, refused, err, errlen, "CLIENT ID", 2, id)))
        goto fail;
    *client_id = r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
    freeReplyObject(r);
    const char *subscribe[] = {"SUBSCRIBE", channel};
    if (!(r = call(sub, refused, err, errlen, "SUBSCRIBE", 2, subscribe)))
        goto fail;
    freeReplyObject(r);
    /* a TLS session is read until it would block: what it holds is never left unread */
    if (sub->ssl && fcntl(sub->c->fd, F_SETFL, fcntl(sub->c->fd, F_GETFL) | O_NONBLOCK) < 0) {
        snprintf(err, errlen, "the subscription's socket: %s", strerror(errno));
        goto fail;
    }

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
    end(sub);
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
        end(sub);
    }
    free(sub);
}
