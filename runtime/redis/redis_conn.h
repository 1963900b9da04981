/* redis_conn: one asynchronous Redis connection on a libev loop (hiredis with its
 * libev adapter). It connects on first use and again on the first command after
 * the connection was lost; every (re)connection first sends AUTH, SELECT and a
 * SCRIPT LOAD of each script, so commands queued meanwhile run on a ready
 * connection. Script calls use EVALSHA and, on a NOSCRIPT reply (Redis restarted or
 * flushed), load that script again and retry once. Uses hiredis, libev, config,
 * scripts. */
#ifndef LUAWORKER_REDIS_CONN_H
#define LUAWORKER_REDIS_CONN_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include "config/config.h"
#include "redis/scripts.h"

struct ev_loop;
struct redis_conn;

/* Called exactly once per command: with the reply (possibly an error reply; valid
 * only during the call) and lost == NULL, or with reply == NULL and lost saying why
 * the connection failed (no reply will come). */
typedef void redis_conn_reply_fn(void *data, const redisReply *reply, const char *lost);

/* Returns a connection that has not connected yet, or NULL when out of memory.
 * label names it in messages ("queue", "cache"). scripts must outlive it. */
struct redis_conn *redis_conn_new(struct ev_loop *loop, const struct redis_settings *s,
                                  const struct scripts *scripts, const char *label);

/* Queues a command (argv[0] is its name). Returns 0; or -1 when it could not be
 * queued (connection refused at once), with err set and fn never called. */
int redis_conn_command(struct redis_conn *c, int argc, const char **argv, const size_t *argvlen,
                       redis_conn_reply_fn *fn, void *data, char *err, size_t errlen);

/* How many connections c has opened so far: a change means a new connection, which
 * has none of the previous one's client state (CLIENT TRACKING, say). */
unsigned long redis_conn_connects(const struct redis_conn *c);

/* Queues EVALSHA of script sc with nkeys keys followed by the remaining arguments
 * in argv[0..argc). The arguments are copied. Same return contract. */
int redis_conn_script(struct redis_conn *c, const struct script *sc, int nkeys, int argc,
                      const char **argv, const size_t *argvlen,
                      redis_conn_reply_fn *fn, void *data, char *err, size_t errlen);

/* Writes the commands queued on c now, as far as the socket takes them, instead of
 * when the loop next runs. Safe inside a reply callback of c. */
void redis_conn_flush(struct redis_conn *c);

/* "host:port/db", for messages (never the password). */
const char *redis_conn_describe(const struct redis_conn *c);

/* Closes the connection; pending commands get fn(data, NULL, "connection closed"). */
void redis_conn_free(struct redis_conn *c);

#endif
