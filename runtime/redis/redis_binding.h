/* redis_binding: the functions of "luaworker.host" for Redis, on the worker's
 * connections ("queue", "cache", "block", all made here from the configuration):
 * commands and script calls that wait for their reply, commands sent without
 * waiting (kept across a lost connection), script calls whose reply is collected
 * later (host.defer, host.collect); the idle wait is idle_wait's. A failure comes back as
 * (false, message, kind): kind "reply" for an error reply, "connection" when the
 * connection ended after the command may have reached Redis, "unreachable" when
 * Redis never got it, "memory" when the reply does not fit under --memory-limit.
 * Uses vm, redis_client and scripts. */
#ifndef LUAWORKER_REDIS_REDIS_BINDING_H
#define LUAWORKER_REDIS_REDIS_BINDING_H

#include <lua.h>

#include "redis/redis_client.h"
#include "redis/redis_conn.h"
#include "redis/scripts.h"

struct vm;

/* REDIS_BINDING_BLOCK: the queue's database, for host.wait_notify's BLPOP (so that
 * the queue connection stays free to end it with CLIENT UNBLOCK) and the CLIENT
 * TRACKING that reports changes of the delayed sets (see
 * host.subscribe_invalidations). */
enum { REDIS_BINDING_QUEUE = 0, REDIS_BINDING_CACHE = 1, REDIS_BINDING_BLOCK = 2,
       REDIS_BINDING_CONNS = 3 };

#define REDIS_BINDING_MAX_ARGS 1024

/* Makes the connections of h's configuration (taking ownership of scripts), adds
 * the functions to h's "luaworker.host", and closes the connections with h. Their
 * replies' strings are limited to h's heap limit (set it first): a longer one
 * fails its command, unread, as kind "memory". Returns 0, or -1 with err set. */
int redis_binding_open(struct vm *h, struct scripts *scripts, char *err, size_t errlen);

/* The connection which (REDIS_BINDING_QUEUE...), for the other bindings. */
struct redis_client *redis_binding_conn(int which);

/* Resumes h's main coroutine with ticket and (true, reply) or (false, message,
 * kind) for a reply (NULL: the command was lost, see redis_conn). */
void redis_binding_resume(struct vm *h, double ticket, const redisReply *reply,
                          const char *lost, enum redis_conn_loss loss);

/* Collects the values from index first to the top as strings (numbers converted)
 * into argv/argvlen (at least REDIS_BINDING_MAX_ARGS long). Returns their count;
 * raises when there are too many or one is not a string or number. */
int redis_binding_args(lua_State *L, int first, const char **argv, size_t *argvlen);

/* Pushes (false, message, "unreachable") for a command that could not be queued;
 * returns 3. */
int redis_binding_unreachable(lua_State *L, const char *message);

#endif
