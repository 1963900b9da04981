/* host_api: the "luaworker.host" module, the host functions the runtime's Lua code
 * is built on, gathered from their units: host_redis (Redis commands), host_wait
 * (sleeps, the idle wait, signals), host_heartbeat, host_slot (the supervisor's
 * slot, the process's id) and host_system (clocks, random ids, memory). Functions
 * that wait yield the calling coroutine (host.WAIT reaches a luaworker coroutine
 * driver) and are resumed by the loop. Uses lua_host and those units. */
#ifndef LUAWORKER_HOST_API_H
#define LUAWORKER_HOST_API_H

struct host;

/* Sets package.preload["luaworker.host"] in h->L and makes signals end the waits. */
void host_api_register(struct host *h);

#endif
