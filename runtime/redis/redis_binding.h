/* redis_binding: the functions of "luaworker.host" for Redis, on the worker's
 * connections ("queue", "cache", "block", all made here from the configuration):
 * commands and script calls that wait for their reply, commands sent without
 * waiting (kept across a lost connection), script calls whose reply is collected
 * later (host.defer, host.collect), the idle wait on the notify lists (a BLPOP on
 * the block connection, ended early by a timer, a signal, or a change of the
 * delayed sets reported by the subscription of redis_sub). A failure comes back as
 * (false, message, kind): kind "reply" for an error reply, "connection" when the
 * connection ended after the command may have reached Redis, "unreachable" when
 * Redis never got it, "memory" when the reply does not fit under --memory-limit.
 * Uses vm, redis_conn, redis_sub and scripts. */
#ifndef LUAWORKER_REDIS_REDIS_BINDING_H
#define LUAWORKER_REDIS_REDIS_BINDING_H

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
 * the functions to h's "luaworker.host", and closes the connections with h.
 * Returns 0, or -1 with err set. */
int redis_binding_open(struct vm *h, struct scripts *scripts, char *err, size_t errlen);

/* The connection which (REDIS_BINDING_QUEUE...), for the other bindings. */
struct redis_conn *redis_binding_conn(int which);

#endif
