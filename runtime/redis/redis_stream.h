/* redis_stream: how the bytes of one connection of redis_conn move, in place of the
 * libev adapter's watchers: read by luaworker itself and passed through
 * reply_limits (hiredis 0.14 holds a reply whole, at any size and depth), and, with
 * TLS, read and written through a session of redis_tls, since hiredis 0.14 has no
 * TLS. hiredis still formats the commands (into the context's output buffer) and
 * parses the replies (its reader), and ends the connection when it fails. Only
 * with hiredis 0.14, whose async layer lets a reader be fed from outside. Uses
 * hiredis, libev, reply_limits and redis_tls. */
#ifndef LUAWORKER_REDIS_STREAM_H
#define LUAWORKER_REDIS_STREAM_H

#include <stddef.h>
#include <sys/queue.h>

#include <hiredis/async.h>
#include <openssl/ssl.h>

#include "config/config.h"
#include "redis/reply_limits.h"

#if HIREDIS_MAJOR == 0
#define REDIS_STREAM_AVAILABLE 1
#endif

/* Called when the TLS handshake of ac failed (why: redis_tls_failure's message),
 * just before hiredis ends ac: the commands queued on it never reached Redis. */
typedef void redis_stream_refused_fn(void *owner, redisAsyncContext *ac, const char *why);

struct redis_stream {
    redisAsyncContext *ac;
    struct reply_limits limits;
    SSL *ssl;                      /* NULL without TLS */
    int handshaken;                /* the TLS handshake is done */
    char failure[600];             /* why the TLS session failed, for the commands it ends */
    const char *describe;          /* where Redis is, for messages (the owner's) */
    redis_stream_refused_fn *refused;
    void *owner;
    int *alive;                    /* set to 0 when the stream is closed (see on_writable) */
    SLIST_ENTRY(redis_stream) link;  /* in the owner's list */
};

/* A stream for ac, just made by redisAsyncConnect and attached to the libev loop;
 * with tls (non-NULL), its session for the host of s. Its replies' strings are
 * limited to max_string bytes (0: none). NULL with err set when out of memory or
 * the session could not be made. */
struct redis_stream *redis_stream_open(redisAsyncContext *ac, SSL_CTX *tls,
                                       const struct redis_settings *s, long long max_string,
                                       const char *describe, redis_stream_refused_fn *refused,
                                       void *owner, char *err, size_t errlen);

/* Whether commands reach Redis now: always without TLS, after the handshake with. */
int redis_stream_ready(const struct redis_stream *s);

/* Writes what the context has formatted now, without ending it: a failure is left
 * in the context's error, which the next read ends it with. */
void redis_stream_flush(struct redis_stream *s);

/* Frees s (its session too), when its connection ends. */
void redis_stream_close(struct redis_stream *s);

#endif
