/* host_wait: the host functions that wait for time or for a job: sleeps and timers, the idle
 * wait on the notify lists (a BLPOP on a connection of its own, ended early by the
 * host's timer, a signal, or a change of the delayed sets reported by the
 * subscription of redis_sub), and the signal state. Uses lua_host, host_redis,
 * redis_conn and redis_sub. */
#ifndef LUAWORKER_HOST_WAIT_H
#define LUAWORKER_HOST_WAIT_H

#include <lauxlib.h>

struct host;

extern const luaL_Reg host_wait_functions[];

/* Makes signals end the current wait (sets h->wake). */
void host_wait_attach(struct host *h);

#endif
