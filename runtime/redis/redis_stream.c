#include "redis/redis_stream.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>
#include <hiredis/adapters/libev.h>
#include <hiredis/sds.h>
#include <openssl/err.h>

#include "redis/redis_tls.h"

#ifdef REDIS_STREAM_AVAILABLE
/* hiredis 0.14 exports it without declaring it: it hands the replies its reader
 * holds to their callbacks, as redisAsyncHandleRead does after reading. (hiredis
 * 1.0 would need its own way in: its reader reads any depth, but holds a reply
 * whole all the same.) */
void redisProcessCallbacks(redisAsyncContext *ac);

static int feed_reader(void *reader, const char *bytes, size_t len)
{
    return redisReaderFeed(reader, bytes, len) == REDIS_OK ? 0 : -1;
}

/* Ends ac, whose TLS session failed (why), as hiredis ends a connection that
 * failed: its commands fail, unsent when the handshake failed (Redis had none of
 * them: why is their message, as for a refused set-up), lost otherwise. ac is
 * freed on return. */
static void tls_end(struct redis_stream *s, const char *why)
{
    redisAsyncContext *ac = s->ac;
    snprintf(s->failure, sizeof s->failure, "%s", why);
    if (!s->handshaken)
        s->refused(s->owner, ac, why);
    ac->c.err = REDIS_ERR_IO;
    snprintf(ac->c.errstr, sizeof ac->c.errstr, "%.*s", (int)sizeof ac->c.errstr - 1, why);
    redisAsyncHandleRead(ac);  /* sees the error: ends and frees ac */
}

/* Writes what hiredis formatted (ac's output buffer) through the TLS session, as
 * far as the socket takes it. Returns 0, or -1 with why set when the session
 * failed. */
static int tls_write(struct redis_stream *s, char *why, size_t size)
{
    redisAsyncContext *ac = s->ac;
    redisContext *rc = &ac->c;
    while (sdslen(rc->obuf) > 0) {
        size_t len = sdslen(rc->obuf);
        int n = SSL_write(s->ssl, rc->obuf, len > INT_MAX ? INT_MAX : (int)len);
        if (n > 0) {
            sdsrange(rc->obuf, n, -1);
            continue;
        }
        int code = SSL_get_error(s->ssl, n);
        if (code == SSL_ERROR_WANT_WRITE || code == SSL_ERROR_WANT_READ) {
            ac->ev.addWrite(ac->ev.data);
            return 0;
        }
        redis_tls_failure(s->ssl, code, "write", s->describe, why, size);
        /* a write the server cut short may have an alert saying why waiting to be read */
        char byte;
        ERR_clear_error();
        int r = SSL_read(s->ssl, &byte, 1);
        if (r <= 0 && SSL_get_error(s->ssl, r) == SSL_ERROR_SSL)
            redis_tls_failure(s->ssl, SSL_ERROR_SSL, "write", s->describe, why, size);
        return -1;
    }
    ac->ev.delWrite(ac->ev.data);
    return 0;
}

/* Drives ac's TLS session: the handshake, then hiredis' output out and Redis'
 * replies in (through reply_limits), until the socket would block. ac may be freed
 * on return (a failure ends it). */
static void tls_pump(struct redis_stream *s)
{
    redisAsyncContext *ac = s->ac;
    char why[600];
    if (ac->c.err) {
        redisAsyncHandleRead(ac);  /* an error a flush met: hiredis ends ac */
        return;
    }
    if (!s->handshaken) {
        int r = SSL_do_handshake(s->ssl);
        if (r != 1) {
            int code = SSL_get_error(s->ssl, r);
            if (code == SSL_ERROR_WANT_READ || code == SSL_ERROR_WANT_WRITE) {
                ac->ev.addRead(ac->ev.data);
                if (code == SSL_ERROR_WANT_WRITE)
                    ac->ev.addWrite(ac->ev.data);
                else
                    ac->ev.delWrite(ac->ev.data);
                return;
            }
            redis_tls_failure(s->ssl, code, "handshake", s->describe, why, sizeof why);
            tls_end(s, why);
            return;
        }
        s->handshaken = 1;
    }
    if (tls_write(s, why, sizeof why)) {
        tls_end(s, why);
        return;
    }
    ac->ev.addRead(ac->ev.data);
    char buf[16 * 1024];
    int got = 0;
    for (;;) {
        int n = SSL_read(s->ssl, buf, sizeof buf);
        if (n > 0) {
            got = 1;
            /* a reader that refuses the bytes keeps its error for redisProcessCallbacks */
            reply_limits_feed(&s->limits, buf, (size_t)n, feed_reader, ac->c.reader);
            continue;
        }
        int code = SSL_get_error(s->ssl, n);
        if (code == SSL_ERROR_WANT_READ)
            break;
        if (code == SSL_ERROR_WANT_WRITE) {
            ac->ev.addWrite(ac->ev.data);
            break;
        }
        redis_tls_failure(s->ssl, code, "read", s->describe, why, sizeof why);
        tls_end(s, why);
        return;
    }
    if (got)
        redisProcessCallbacks(ac);
}

/* The write watcher of a TLS connection, in place of the adapter's: hiredis
 * completes the TCP connect (with nothing to write: its output goes through TLS),
 * then tls_pump. */
static void on_writable(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    struct redis_stream *s = w->data;
    redisAsyncContext *ac = s->ac;
    redisContext *rc = &ac->c;
    if (!(rc->flags & REDIS_CONNECTED)) {
        sds held = rc->obuf;
        int alive = 1;
        rc->obuf = sdsempty();
        s->alive = &alive;
        redisAsyncHandleWrite(ac);
        if (!alive) {  /* the connect failed: hiredis freed ac, and its owner s */
            sdsfree(held);
            return;
        }
        s->alive = NULL;
        sdsfree(rc->obuf);
        rc->obuf = held;
        if (!(rc->flags & REDIS_CONNECTED))
            return;
    }
    tls_pump(s);
}

/* The read watcher of a connection with a stream, in place of the adapter's: what
 * redisAsyncHandleRead does, with the bytes read passed through reply_limits. The
 * connection's set-up, its end and a read error are left to hiredis, which reads
 * them again itself. */
static void on_readable(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    struct redis_stream *s = w->data;
    redisAsyncContext *ac = s->ac;
    redisContext *rc = &ac->c;
    if (s->ssl && (rc->flags & REDIS_CONNECTED)) {
        tls_pump(s);
        return;
    }
    if (!(rc->flags & REDIS_CONNECTED) || rc->err) {
        redisAsyncHandleRead(ac);
        return;
    }
    char buf[16 * 1024];
    ssize_t got = read(rc->fd, buf, sizeof buf);
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (got <= 0) {
        redisAsyncHandleRead(ac);
        return;
    }
    /* a reader that refuses the bytes keeps its error for redisProcessCallbacks,
     * which then ends the connection */
    reply_limits_feed(&s->limits, buf, (size_t)got, feed_reader, rc->reader);
    redisProcessCallbacks(ac);
}

struct redis_stream *redis_stream_open(redisAsyncContext *ac, SSL_CTX *tls,
                                       const struct redis_settings *settings, long long max_string,
                                       const char *describe, redis_stream_refused_fn *refused,
                                       void *owner, char *err, size_t errlen)
{
    struct redis_stream *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "%s: out of memory", describe);
        return NULL;
    }
    s->ac = ac;
    s->limits.max_string = max_string;
    s->describe = describe;
    s->refused = refused;
    s->owner = owner;
    if (tls && !(s->ssl = redis_tls_session(tls, settings, ac->c.fd, err, errlen))) {
        free(s);
        return NULL;
    }
    redisLibevEvents *e = ac->ev.data;
    ev_set_cb(&e->rev, on_readable);
    e->rev.data = s;
    if (s->ssl) {
        ev_set_cb(&e->wev, on_writable);
        e->wev.data = s;
    }
    return s;
}

int redis_stream_ready(const struct redis_stream *s)
{
    return !s->ssl || s->handshaken;
}

void redis_stream_flush(struct redis_stream *s)
{
    redisContext *rc = &s->ac->c;
    if (!s->ssl) {
        int done;
        redisBufferWrite(rc, &done);
        return;
    }
    char why[600];
    if (s->handshaken && tls_write(s, why, sizeof why)) {
        rc->err = REDIS_ERR_IO;
        snprintf(rc->errstr, sizeof rc->errstr, "%.*s", (int)sizeof rc->errstr - 1, why);
        snprintf(s->failure, sizeof s->failure, "%s", why);
        s->ac->ev.addRead(s->ac->ev.data);  /* tls_pump ends it */
    }
}

void redis_stream_close(struct redis_stream *s)
{
    if (!s)
        return;
    if (s->alive)
        *s->alive = 0;
    SSL_free(s->ssl);
    free(s);
}

#else

struct redis_stream *redis_stream_open(redisAsyncContext *ac, SSL_CTX *tls,
                                       const struct redis_settings *settings, long long max_string,
                                       const char *describe, redis_stream_refused_fn *refused,
                                       void *owner, char *err, size_t errlen)
{
    (void)ac, (void)tls, (void)settings, (void)max_string, (void)refused, (void)owner;
    snprintf(err, errlen, "%s: luaworker reads Redis itself only with hiredis 0.14", describe);
    return NULL;
}

int redis_stream_ready(const struct redis_stream *s)
{
    (void)s;
    return 1;
}

void redis_stream_flush(struct redis_stream *s)
{
    (void)s;
}

void redis_stream_close(struct redis_stream *s)
{
    (void)s;
}

#endif
