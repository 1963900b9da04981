#include "redis/redis_conn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ev.h>
#include <hiredis/adapters/libev.h>
#include <hiredis/async.h>

struct redis_conn {
    struct ev_loop *loop;
    redisAsyncContext *ac;       /* NULL while disconnected */
    struct redis_settings settings;
    const struct scripts *scripts;
    char label[16];
    char describe[300];
    redisAsyncContext *failed_ac;  /* a connection whose set-up failed, until it closes */
    unsigned long connects;        /* connections opened so far */
    char setup_error[600];         /* why, for the replies still pending on it */
};

/* One command in flight. For script calls it keeps a copy of the arguments so that
 * the call can be sent again after a NOSCRIPT reply. */
struct pending {
    struct redis_conn *conn;
    redis_conn_reply_fn *fn;
    void *data;
    const struct script *script;
    int argc;             /* script calls: EVALSHA sha numkeys args... */
    char **argv;
    size_t *argvlen;
    int retried;
};

static void on_connect(const redisAsyncContext *ac, int status)
{
    struct redis_conn *c = ac->data;
    if (status != REDIS_OK && c && c->ac == ac)
        c->ac = NULL;  /* hiredis frees ac after this callback */
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    (void)status;
    struct redis_conn *c = ac->data;
    if (c && c->ac == ac)
        c->ac = NULL;
    if (c && c->failed_ac == ac)
        c->failed_ac = NULL;
}

/* Replies to the set-up commands sent on connect (privdata: the command's name).
 * When one fails (wrong credentials, bad database, scripts not allowed), the
 * connection is closed: the commands queued behind it fail as lost with that
 * reason, and the next command connects again. */
static void on_setup_reply(redisAsyncContext *ac, void *r, void *privdata)
{
    const redisReply *reply = r;
    struct redis_conn *c = ac->data;
    if (!c || !reply || reply->type != REDIS_REPLY_ERROR || c->failed_ac == ac)
        return;
    snprintf(c->setup_error, sizeof c->setup_error, "Redis at %s refused %s: %.*s", c->describe,
             (const char *)privdata, (int)reply->len, reply->str);
    c->failed_ac = ac;
    if (c->ac == ac)
        c->ac = NULL;
    redisAsyncDisconnect(ac);
}

static int connect_now(struct redis_conn *c, char *err, size_t errlen)
{
    redisAsyncContext *ac = redisAsyncConnect(c->settings.host, c->settings.port);
    if (!ac) {
        snprintf(err, errlen, "%s: out of memory", c->describe);
        return -1;
    }
    if (ac->err) {
        snprintf(err, errlen, "cannot connect to Redis at %s: %s", c->describe, ac->errstr);
        redisAsyncFree(ac);
        return -1;
    }
    ac->data = c;
    c->connects++;
    redisLibevAttach(c->loop, ac);
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    if (c->settings.password[0]) {
        if (c->settings.username[0])
            redisAsyncCommand(ac, on_setup_reply, "AUTH", "AUTH %s %s", c->settings.username,
                              c->settings.password);
        else
            redisAsyncCommand(ac, on_setup_reply, "AUTH", "AUTH %s", c->settings.password);
    }
    if (c->settings.db)
        redisAsyncCommand(ac, on_setup_reply, "SELECT", "SELECT %d", c->settings.db);
    for (size_t i = 0; c->scripts && i < c->scripts->count; i++)
        redisAsyncCommand(ac, on_setup_reply, "SCRIPT LOAD", "SCRIPT LOAD %b",
                          c->scripts->items[i].text, c->scripts->items[i].len);
    c->ac = ac;
    return 0;
}

struct redis_conn *redis_conn_new(struct ev_loop *loop, const struct redis_settings *s,
                                  const struct scripts *scripts, const char *label)
{
    struct redis_conn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->loop = loop;
    c->settings = *s;
    c->scripts = scripts;
    snprintf(c->label, sizeof c->label, "%s", label);
    snprintf(c->describe, sizeof c->describe, "%s:%d/%d", s->host, s->port, s->db);
    return c;
}

const char *redis_conn_describe(const struct redis_conn *c)
{
    return c->describe;
}

static void pending_free(struct pending *p)
{
    if (p->argv) {
        for (int i = 0; i < p->argc; i++)
            free(p->argv[i]);
        free(p->argv);
        free(p->argvlen);
    }
    free(p);
}

static void on_reply(redisAsyncContext *ac, void *r, void *privdata);

static int send_pending(struct redis_conn *c, struct pending *p, int argc, const char **argv,
                        const size_t *argvlen, char *err, size_t errlen)
{
    if (!c->ac && connect_now(c, err, errlen))
        return -1;
    if (redisAsyncCommandArgv(c->ac, on_reply, p, argc, argv, argvlen) != REDIS_OK) {
        snprintf(err, errlen, "Redis at %s: %s", c->describe,
                 c->ac && c->ac->err ? c->ac->errstr : "connection is closing");
        return -1;
    }
    return 0;
}

static int is_noscript(const redisReply *reply)
{
    return reply && reply->type == REDIS_REPLY_ERROR && reply->str &&
           strncmp(reply->str, "NOSCRIPT", 8) == 0;
}

static void on_reply(redisAsyncContext *ac, void *r, void *privdata)
{
    struct pending *p = privdata;
    const redisReply *reply = r;
    struct redis_conn *c = p->conn;

    if (p->script && !p->retried && is_noscript(reply)) {
        char err[256];
        p->retried = 1;
        const char *load[] = {"SCRIPT", "LOAD", p->script->text};
        size_t loadlen[] = {6, 4, p->script->len};
        if (c->ac && redisAsyncCommandArgv(c->ac, on_setup_reply, "SCRIPT LOAD", 3, load, loadlen) == REDIS_OK &&
            send_pending(c, p, p->argc, (const char **)p->argv, p->argvlen, err, sizeof err) == 0)
            return;
    }
    if (reply && ac == c->failed_ac) {
        p->fn(p->data, NULL, c->setup_error);
    } else if (reply) {
        p->fn(p->data, reply, NULL);
    } else if (ac == c->failed_ac) {
        p->fn(p->data, NULL, c->setup_error);
    } else {
        char lost[700];
        snprintf(lost, sizeof lost, "Redis connection to %s lost: %s", c->describe,
                 ac && ac->err ? ac->errstr : "connection closed");
        p->fn(p->data, NULL, lost);
    }
    pending_free(p);
}

int redis_conn_command(struct redis_conn *c, int argc, const char **argv, const size_t *argvlen,
                       redis_conn_reply_fn *fn, void *data, char *err, size_t errlen)
{
    struct pending *p = calloc(1, sizeof *p);
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    p->conn = c;
    p->fn = fn;
    p->data = data;
    if (send_pending(c, p, argc, argv, argvlen, err, errlen)) {
        free(p);
        return -1;
    }
    return 0;
}

void redis_conn_flush(struct redis_conn *c)
{
    /* The context's own write, not redisAsyncHandleWrite: this may run inside one of
     * the context's callbacks, and hiredis' async layer frees the context on the
     * spot when that write fails. A failure here stays in c->ac->c.err, which the
     * async layer handles when the loop next reads or writes. */
    int done;
    if (c->ac && (c->ac->c.flags & REDIS_CONNECTED) &&
        !(c->ac->c.flags & (REDIS_DISCONNECTING | REDIS_FREEING)) && !c->ac->c.err)
        redisBufferWrite(&c->ac->c, &done);
}

unsigned long redis_conn_connects(const struct redis_conn *c)
{
    return c->connects;
}

int redis_conn_script(struct redis_conn *c, const struct script *sc, int nkeys, int argc,
                      const char **argv, const size_t *argvlen,
                      redis_conn_reply_fn *fn, void *data, char *err, size_t errlen)
{
    struct pending *p = calloc(1, sizeof *p);
    int total = argc + 3;
    char numkeys[16];
    snprintf(numkeys, sizeof numkeys, "%d", nkeys);
    if (!p || !(p->argv = calloc((size_t)total, sizeof *p->argv)) ||
        !(p->argvlen = calloc((size_t)total, sizeof *p->argvlen)))
        goto oom;
    p->conn = c;
    p->fn = fn;
    p->data = data;
    p->script = sc;
    p->argc = total;
    const char *head[] = {"EVALSHA", sc->sha, numkeys};
    for (int i = 0; i < total; i++) {
        const char *s = i < 3 ? head[i] : argv[i - 3];
        size_t len = i < 3 ? strlen(s) : argvlen[i - 3];
        if (!(p->argv[i] = malloc(len + 1)))
            goto oom;
        memcpy(p->argv[i], s, len);
        p->argv[i][len] = '\0';
        p->argvlen[i] = len;
    }
    if (send_pending(c, p, total, (const char **)p->argv, p->argvlen, err, errlen)) {
        pending_free(p);
        return -1;
    }
    return 0;
oom:
    if (p)
        pending_free(p);
    snprintf(err, errlen, "out of memory");
    return -1;
}

void redis_conn_free(struct redis_conn *c)
{
    if (!c)
        return;
    if (c->ac) {
        redisAsyncContext *ac = c->ac;
        c->ac = NULL;
        ac->data = NULL;
        redisAsyncFree(ac);
    }
    free(c);
}
