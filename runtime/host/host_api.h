/* host_api: the "luaworker.host" module, the host functions the runtime's Lua code
 * is built on: Redis commands and script calls on the queue and cache connections
 * (waited for, sent without waiting, or a pop under way while jobs run), the idle
 * wait on the notify lists and the subscription that ends it, sleeps, signal
 * state, clocks, random ids, process memory, and what the worker tells its
 * supervisor. Functions that wait yield the calling coroutine (returning host.WAIT
 * to a luaworker coroutine driver) and are resumed by the loop. Uses lua_host,
 * redis_conn, redis_sub and supervisor. */
#ifndef LUAWORKER_HOST_API_H
#define LUAWORKER_HOST_API_H

struct host;

/* Sets package.preload["luaworker.host"] in h->L. */
void host_api_register(struct host *h);

/* Ends the current sleep, if any: the sleeping coroutine is resumed with false;
 * or the current host.wait_notify, which then returns nil. */
void host_api_wake(struct host *h);

#endif
