/* host_redis: the host functions for Redis commands on the worker's connections
 * ("queue", "cache", "block"): commands and script calls that wait for their reply,
 * commands sent without waiting (kept across a lost connection), and script calls
 * whose reply is collected later (host.defer, host.collect). A failure comes back as
 * (false, message, kind): kind "reply" for an error reply, "connection" when the
 * connection ended after the command may have reached Redis, "unreachable" when
 * Redis never got it. Uses lua_host and redis_conn. */
#ifndef LUAWORKER_HOST_REDIS_H
#define LUAWORKER_HOST_REDIS_H

#include <stddef.h>

#include <lauxlib.h>

#include "redis/redis_conn.h"

struct host;

#define HOST_MAX_COMMAND_ARGS 1024

extern const luaL_Reg host_redis_functions[];

/* The connection named at index idx ("queue", "cache" or "block"); raises otherwise. */
struct redis_conn *host_redis_conn(lua_State *L, struct host *h, int idx);

/* Collects the values from index first to the top as strings (numbers converted)
 * into argv/argvlen (at least HOST_MAX_COMMAND_ARGS long). Returns their count;
 * raises when there are too many or one is not a string or number. */
int host_redis_args(lua_State *L, int first, const char **argv, size_t *argvlen);

/* Resumes the main coroutine with ticket and (true, reply) or (false, message,
 * kind), for a reply (reply NULL: the command was lost, see redis_conn). */
void host_redis_resume_ticket(struct host *h, double ticket, const redisReply *reply,
                              const char *lost, enum redis_conn_loss loss);

/* Pushes (false, message, "unreachable") for a command that could not be queued;
 * returns 3. */
int host_redis_unreachable(lua_State *L, const char *message);

#endif
