/* redis_conn: one asynchronous Redis connection on a libev loop (hiredis with its
 * libev adapter). It connects on first use and again on the first command after
 * the connection was lost; every (re)connection first sends AUTH, SELECT and a
 * SCRIPT LOAD of each script, so commands queued meanwhile run on a ready
 * connection. Script calls use EVALSHA and, on a NOSCRIPT reply (Redis restarted or
 * flushed), load that script again and retry once. A command queued with
 * REDIS_CONN_KEEP outlives a lost connection: it is sent again, first, on the next
 * one. Each connection's bytes move through a redis_stream (reply_limits, TLS).
 * Uses hiredis, libev, config, scripts, redis_stream and redis_tls. */
#ifndef LUAWORKER_REDIS_CONN_H
#define LUAWORKER_REDIS_CONN_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include "config/config.h"
#include "redis/scripts.h"

struct ev_loop;
struct redis_conn;

/* How a command ended without a reply. */
enum redis_conn_loss {
    REDIS_CONN_UNSENT = 1,  /* Redis never had it: no connection could be made, or
                             * the connection's set-up (AUTH...) was refused */
    REDIS_CONN_LOST = 2,    /* the connection ended after it may have been sent:
                             * whether Redis ran it is unknown */
    REDIS_CONN_TOO_BIG = 3, /* Redis ran it; its reply holds a string over the
                             * connection's limit (redis_conn_limit_strings), dropped
                             * unread */
};

/* Called exactly once per command: with the reply (possibly an error reply; valid
 * only during the call) and lost == NULL; or with reply == NULL, lost saying why
 * and loss telling whether Redis may have run it. */
typedef void redis_conn_reply_fn(void *data, const redisReply *reply, const char *lost,
                                 enum redis_conn_loss loss);

/* Flags of redis_conn_command. REDIS_CONN_KEEP: a command safe to run twice, whose
 * reply nobody waits for: when the connection ends before its reply, it is sent
 * again on the next connection (made by the next command) instead of failing, so fn
 * sees only a reply, or a loss at redis_conn_free. */
enum { REDIS_CONN_KEEP = 1 };

/* Returns a connection that has not connected yet, or NULL when out of memory.
 * scripts (NULL for none) must outlive it. */
struct redis_conn *redis_conn_new(struct ev_loop *loop, const struct redis_settings *s,
                                  const struct scripts *scripts);

/* Limits the strings of the replies c reads to bytes (0: no limit), on connections
 * made from now on: a reply holding a longer one ends its command with
 * REDIS_CONN_TOO_BIG, unread, its message naming the limit as `what` (e.g.
 * "--memory-limit=64 (MB)", copied). */
void redis_conn_limit_strings(struct redis_conn *c, long long bytes, const char *what);

/* Queues a command (argv[0] is its name). Returns 0; or -1 when it could not be
 * queued (no connection could be made at once), with err set and fn never called
 * (never with REDIS_CONN_KEEP: the command then waits for the next connection). */
int redis_conn_command(struct redis_conn *c, int flags, int argc, const char **argv,
                       const size_t *argvlen, redis_conn_reply_fn *fn, void *data, char *err,
                       size_t errlen);

/* Queues EVALSHA of script sc with nkeys keys followed by the remaining arguments
 * in argv[0..argc). The arguments are copied. Same return contract. */
int redis_conn_script(struct redis_conn *c, const struct script *sc, int nkeys, int argc,
                      const char **argv, const size_t *argvlen,
                      redis_conn_reply_fn *fn, void *data, char *err, size_t errlen);

/* How many connections c has opened so far: a change means a new connection, which
 * has none of the previous one's client state (CLIENT TRACKING, say). */
unsigned long redis_conn_connects(const struct redis_conn *c);

/* Whether c is connected and ready, with no error seen: what is written to it now
 * reaches Redis unless the connection breaks before Redis reads it. */
int redis_conn_up(const struct redis_conn *c);

/* Writes the commands queued on c now, as far as the socket takes them, instead of
 * when the loop next runs. Safe inside a reply callback of c. */
void redis_conn_flush(struct redis_conn *c);

/* "host:port/db", for messages (never the password). */
const char *redis_conn_describe(const struct redis_conn *c);

/* Closes the connection; pending and kept commands get fn(data, NULL, "connection
 * closed", REDIS_CONN_LOST). */
void redis_conn_free(struct redis_conn *c);

#endif
