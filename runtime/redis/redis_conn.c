#include "redis/redis_conn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <ev.h>
#include <hiredis/adapters/libev.h>
#include <hiredis/async.h>

#include "redis/redis_stream.h"
#include "redis/redis_tls.h"
#include "redis/reply_limits.h"

/* One command in flight, or kept for the next connection. Script calls and kept
 * commands own a copy of their arguments (argv, argvlen and the bytes, in one
 * allocation), to be sent again after a NOSCRIPT reply or a lost connection. */
struct pending {
    struct redis_conn *conn;
    redis_conn_reply_fn *fn;
    void *data;
    const struct script *script;
    int keep;
    int retried;
    int argc;
    char **argv;
    size_t *argvlen;
    STAILQ_ENTRY(pending) link;  /* in conn->kept */
};


struct redis_conn {
    struct ev_loop *loop;
    redisAsyncContext *ac;         /* NULL while disconnected */
    struct redis_settings settings;
    const struct scripts *scripts;
    char describe[320];
    redisAsyncContext *failed_ac;  /* a connection whose set-up failed, until it closes */
    unsigned long connects;        /* connections opened so far */
    char setup_error[600];         /* why, for the replies still pending on it */
    STAILQ_HEAD(, pending) kept;   /* REDIS_CONN_KEEP commands for the next connection */
    int freeing;                   /* in redis_conn_free: nothing is kept any more */
    SLIST_HEAD(, redis_stream) streams;  /* of the connections still open */
    long long max_string;          /* see redis_conn_limit_strings */
    char max_string_what[64];
    SSL_CTX *tls;                  /* the connections' TLS context, or NULL without TLS */
    ev_timer connect_timer;        /* gives up a connection not up within CONNECT_TIMEOUT */
};

/* Seconds a new connection has to be up (TCP, and TLS's handshake): a host that is
 * gone answers nothing, and the kernel would try for minutes. */
#define CONNECT_TIMEOUT 5.0

static struct redis_stream *stream_of(const struct redis_conn *c, const redisAsyncContext *ac)
{
    struct redis_stream *s = NULL;
    if (c)
        SLIST_FOREACH(s, &c->streams, link)
            if (s->ac == ac)
                break;
    return s;
}

static void stream_drop(struct redis_conn *c, const redisAsyncContext *ac)
{
    struct redis_stream *s = stream_of(c, ac);
    if (s) {
        SLIST_REMOVE(&c->streams, s, redis_stream, link);
        redis_stream_close(s);
    }
}

/* The handshake of ac's TLS session failed (why): its commands fail as unsent, with
 * why as their message (redis_stream_refused_fn). */
static void tls_refused(void *owner, redisAsyncContext *ac, const char *why)
{
    struct redis_conn *c = owner;
    snprintf(c->setup_error, sizeof c->setup_error, "%s", why);
    c->failed_ac = ac;
    if (c->ac == ac)
        c->ac = NULL;
}

/* Moves ac's bytes through a stream of its own (redis_stream: reply_limits, TLS).
 * Returns 0, or -1 with err set when TLS could not be set up (without TLS, a
 * connection without a stream reads as hiredis reads). */
static int open_stream(struct redis_conn *c, redisAsyncContext *ac, char *err, size_t errlen)
{
    struct redis_stream *st = redis_stream_open(ac, c->tls, &c->settings, c->max_string, c->describe,
                                                tls_refused, c, err, errlen);
    if (!st)
        return c->tls ? -1 : 0;
    SLIST_INSERT_HEAD(&c->streams, st, link);
    return 0;
}

/* The first error reply_limits put in reply r, or NULL. */
static const redisReply *replacement_in(const redisReply *r)
{
    if (r->type == REDIS_REPLY_ERROR && r->len >= sizeof REPLY_LIMITS_MARK - 1 &&
        memcmp(r->str, REPLY_LIMITS_MARK, sizeof REPLY_LIMITS_MARK - 1) == 0)
        return r;
    for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        const redisReply *e = replacement_in(r->element[i]);
        if (e)
            return e;
    }
    return NULL;
}

enum replaced { NOT_REPLACED, REPLACED_TOO_BIG, REPLACED_TOO_DEEP };

/* Whether reply (from ac's stream) has a part replaced by reply_limits, and then
 * the command's failure in failure[0..size): for a string too long, the message of
 * a REDIS_CONN_TOO_BIG loss; for an array too deep, an error reply's text. */
static enum replaced replaced(struct redis_conn *c, redisAsyncContext *ac,
                              const redisReply *reply, char *failure, size_t size)
{
    struct redis_stream *s = reply ? stream_of(c, ac) : NULL;
    const redisReply *mark;
    if (!s || !s->limits.replaced || !(mark = replacement_in(reply)))
        return NOT_REPLACED;
    s->limits.replaced--;
    if (mark->len > sizeof REPLY_LIMITS_TOO_BIG &&
        memcmp(mark->str, REPLY_LIMITS_TOO_BIG " ", sizeof REPLY_LIMITS_TOO_BIG) == 0) {
        double mb = strtod(mark->str + sizeof REPLY_LIMITS_TOO_BIG, NULL) / 1048576.0;
        snprintf(failure, size, "a result of %s%.1f MB does not fit under %s: Redis ran the "
                 "command; its reply was dropped unread", mark == reply ? "" : "more than ", mb,
                 c->max_string_what);
        return REPLACED_TOO_BIG;
    }
    snprintf(failure, size, "ERR luaworker's Redis client (hiredis 0.14) reads arrays nested 8 "
             "deep at most; this reply nests deeper: the command ran, its reply is dropped");
    return REPLACED_TOO_DEEP;
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    struct redis_conn *c = ac->data;
    if (status != REDIS_OK && c) {
        stream_drop(c, ac);  /* hiredis frees ac after this callback */
        if (c->ac == ac)
            c->ac = NULL;
    }
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    (void)status;
    struct redis_conn *c = ac->data;
    if (c)
        stream_drop(c, ac);
    if (c && c->ac == ac)
        c->ac = NULL;
    if (c && c->failed_ac == ac)
        c->failed_ac = NULL;
}

/* Replies to the set-up commands sent on connect (privdata: the command's name).
 * When one fails (wrong credentials, bad database, scripts not allowed), the
 * connection is closed: the commands queued behind it fail as unsent with that
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

static void on_reply(redisAsyncContext *ac, void *r, void *privdata);

/* Sends the kept commands on the fresh connection ac, in the order they came. */
static void send_kept(struct redis_conn *c, redisAsyncContext *ac)
{
    struct pending *p;
    while ((p = STAILQ_FIRST(&c->kept))) {
        if (redisAsyncCommandArgv(ac, on_reply, p, p->argc, (const char **)p->argv, p->argvlen) !=
            REDIS_OK)
            return;
        STAILQ_REMOVE_HEAD(&c->kept, link);
    }
}

/* A connection still not up CONNECT_TIMEOUT after it was opened is given up: its
 * commands fail as unsent, saying so, and the next command connects again. */
static void on_connect_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    struct redis_conn *c = w->data;
    redisAsyncContext *ac = c->ac;
    if (!ac || redis_conn_up(c))
        return;
    snprintf(c->setup_error, sizeof c->setup_error, "cannot connect to Redis at %s: no answer within "
             "%.0f s", c->describe, CONNECT_TIMEOUT);
    c->failed_ac = ac;
    c->ac = NULL;
    stream_drop(c, ac);
    ac->data = c;
    redisAsyncFree(ac);  /* its commands' callbacks run now, as unsent */
    if (c->failed_ac == ac)
        c->failed_ac = NULL;
}

static int connect_now(struct redis_conn *c, char *err, size_t errlen)
{
    if (c->settings.tls.enabled && !c->tls) {
        char why[600];
        if (!(c->tls = redis_tls_context(&c->settings, why, sizeof why))) {
            snprintf(err, errlen, "cannot connect to Redis at %s: %s", c->describe, why);
            return -1;
        }
    }
    redisAsyncContext *ac = c->settings.path[0] ? redisAsyncConnectUnix(c->settings.path)
                                                : redisAsyncConnect(c->settings.host, c->settings.port);
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
    if (open_stream(c, ac, err, errlen)) {
        ac->data = NULL;
        redisAsyncFree(ac);
        return -1;
    }
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
    send_kept(c, ac);
    ev_timer_stop(c->loop, &c->connect_timer);
    ev_timer_set(&c->connect_timer, CONNECT_TIMEOUT, 0.);
    ev_timer_start(c->loop, &c->connect_timer);
    return 0;
}

struct redis_conn *redis_conn_new(struct ev_loop *loop, const struct redis_settings *s,
                                  const struct scripts *scripts)
{
    struct redis_conn *c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->loop = loop;
    c->settings = *s;
    c->scripts = scripts;
    STAILQ_INIT(&c->kept);
    ev_timer_init(&c->connect_timer, on_connect_timeout, 0., 0.);
    c->connect_timer.data = c;
    config_describe_redis(s, c->describe, sizeof c->describe);
    return c;
}

void redis_conn_limit_strings(struct redis_conn *c, long long bytes, const char *what)
{
    c->max_string = bytes;
    snprintf(c->max_string_what, sizeof c->max_string_what, "%s", what);
}

const char *redis_conn_describe(const struct redis_conn *c)
{
    return c->describe;
}

/* A pending command. With copy, it owns a copy of head[0..nhead) followed by
 * argv[0..argc), in one allocation. Returns NULL when out of memory. */
static struct pending *pending_new(struct redis_conn *c, redis_conn_reply_fn *fn, void *data,
                                   int copy, int nhead, const char *const *head, int argc,
                                   const char **argv, const size_t *argvlen)
{
    struct pending *p = calloc(1, sizeof *p);
    if (!p || !copy)
        goto done;
    int total = nhead + argc;
    size_t bytes = 0;
    for (int i = 0; i < total; i++)
        bytes += (i < nhead ? strlen(head[i]) : argvlen[i - nhead]) + 1;
    char *block = malloc((size_t)total * (sizeof(char *) + sizeof(size_t)) + bytes);
    if (!block) {
        free(p);
        return NULL;
    }
    p->argv = (char **)block;
    p->argvlen = (size_t *)(block + (size_t)total * sizeof(char *));
    char *at = block + (size_t)total * (sizeof(char *) + sizeof(size_t));
    for (int i = 0; i < total; i++) {
        const char *s = i < nhead ? head[i] : argv[i - nhead];
        size_t len = i < nhead ? strlen(s) : argvlen[i - nhead];
        memcpy(at, s, len);
        at[len] = '\0';
        p->argv[i] = at;
        p->argvlen[i] = len;
        at += len + 1;
    }
    p->argc = total;
done:
    if (p) {
        p->conn = c;
        p->fn = fn;
        p->data = data;
    }
    return p;
}

static void pending_free(struct pending *p)
{
    free(p->argv);
    free(p);
}

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
    /* a reply too deep for the reader, or too big to hold: this command alone fails */
    char failure[300];
    redisReply error_reply;
    switch (replaced(c, ac, reply, failure, sizeof failure)) {
    case REPLACED_TOO_BIG:
        p->fn(p->data, NULL, failure, REDIS_CONN_TOO_BIG);
        pending_free(p);
        return;
    case REPLACED_TOO_DEEP:
        memset(&error_reply, 0, sizeof error_reply);
        error_reply.type = REDIS_REPLY_ERROR;
        error_reply.str = failure;
        error_reply.len = strlen(failure);
        reply = &error_reply;
        break;
    case NOT_REPLACED:
        break;
    }
    if (reply && ac != c->failed_ac) {
        p->fn(p->data, reply, NULL, 0);
        pending_free(p);
        return;
    }
    enum redis_conn_loss loss = ac != c->failed_ac && ac && (ac->c.flags & REDIS_CONNECTED)
                                    ? REDIS_CONN_LOST
                                    : REDIS_CONN_UNSENT;
    if (p->keep && !c->freeing) {
        STAILQ_INSERT_TAIL(&c->kept, p, link);
        return;
    }
    char lost[1000];
    const struct redis_stream *s = stream_of(c, ac);
    if (ac == c->failed_ac)
        snprintf(lost, sizeof lost, "%s", c->setup_error);
    else
        snprintf(lost, sizeof lost, loss == REDIS_CONN_LOST ? "Redis connection to %s lost: %s"
                                                            : "cannot connect to Redis at %s: %s",
                 c->describe, s && s->failure[0] ? s->failure
                              : ac && ac->err ? ac->errstr : "connection closed");
    p->fn(p->data, NULL, lost, loss);
    pending_free(p);
}

int redis_conn_command(struct redis_conn *c, int flags, int argc, const char **argv,
                       const size_t *argvlen, redis_conn_reply_fn *fn, void *data, char *err,
                       size_t errlen)
{
    int keep = (flags & REDIS_CONN_KEEP) != 0;
    struct pending *p = pending_new(c, fn, data, keep, 0, NULL, argc, argv, argvlen);
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    p->keep = keep;
    if (send_pending(c, p, argc, keep ? (const char **)p->argv : argv, keep ? p->argvlen : argvlen,
                     err, errlen)) {
        if (keep) {  /* for the next connection */
            STAILQ_INSERT_TAIL(&c->kept, p, link);
            return 0;
        }
        pending_free(p);
        return -1;
    }
    return 0;
}

int redis_conn_up(const struct redis_conn *c)
{
    const struct redis_stream *s = c->ac ? stream_of(c, c->ac) : NULL;
    return c->ac && (c->ac->c.flags & REDIS_CONNECTED) &&
           !(c->ac->c.flags & (REDIS_DISCONNECTING | REDIS_FREEING)) && !c->ac->c.err &&
           (!s || redis_stream_ready(s));
}

void redis_conn_flush(struct redis_conn *c)
{
    /* The context's own write, not redisAsyncHandleWrite: this may run inside one of
     * the context's callbacks, and hiredis' async layer frees the context on the
     * spot when that write fails. A failure here stays in c->ac->c.err, which the
     * async layer handles when the loop next reads or writes. */
    if (!redis_conn_up(c))
        return;
    struct redis_stream *s = stream_of(c, c->ac);
    int done;
    if (s)
        redis_stream_flush(s);
    else
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
    char numkeys[16];
    snprintf(numkeys, sizeof numkeys, "%d", nkeys);
    const char *const head[] = {"EVALSHA", sc->sha, numkeys};
    struct pending *p = pending_new(c, fn, data, 1, 3, head, argc, argv, argvlen);
    if (!p) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    p->script = sc;
    if (send_pending(c, p, p->argc, (const char **)p->argv, p->argvlen, err, errlen)) {
        pending_free(p);
        return -1;
    }
    return 0;
}

void redis_conn_free(struct redis_conn *c)
{
    if (!c)
        return;
    c->freeing = 1;
    ev_timer_stop(c->loop, &c->connect_timer);
    if (c->ac) {
        redisAsyncContext *ac = c->ac;
        c->ac = NULL;
        ac->data = NULL;
        redisAsyncFree(ac);
    }
    struct pending *p;
    while ((p = STAILQ_FIRST(&c->kept))) {
        STAILQ_REMOVE_HEAD(&c->kept, link);
        p->fn(p->data, NULL, "connection closed", REDIS_CONN_LOST);
        pending_free(p);
    }
    struct redis_stream *s;
    while ((s = SLIST_FIRST(&c->streams))) {
        SLIST_REMOVE_HEAD(&c->streams, link);
        redis_stream_close(s);
    }
    SSL_CTX_free(c->tls);
    free(c);
}
