/* host_api: the "luaworker.host" module, the host functions the runtime's Lua code
 * is built on: Redis commands and script calls on the queue and cache connections,
 * sleeps, signal state, clocks, random ids and process memory. Functions that wait
 * yield the calling coroutine (returning host.WAIT to a luaworker coroutine driver)
 * and are resumed by the loop. Uses lua_host and redis_conn. */
#ifndef LUAWORKER_HOST_API_H
#define LUAWORKER_HOST_API_H

struct host;

/* Sets package.preload["luaworker.host"] in h->L. */
void host_api_register(struct host *h);

/* Ends the current sleep, if any: the sleeping coroutine is resumed with false;
 * or the current host.wait_notify, which then returns nil. */
void host_api_wake(struct host *h);

#endif
