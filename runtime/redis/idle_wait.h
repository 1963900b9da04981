/* idle_wait: the functions of "luaworker.host" for a worker with no job: the wait
 * on the queues' notify lists (host.wait_notify: a BLPOP on redis_binding's block
 * connection, ended early by a timer, a signal, or a change of the delayed sets),
 * and the subscription that reports those changes (host.subscribe_invalidations:
 * redis_sub on __redis__:invalidate). Uses vm, redis_binding, redis_conn and
 * redis_sub. */
#ifndef LUAWORKER_REDIS_IDLE_WAIT_H
#define LUAWORKER_REDIS_IDLE_WAIT_H

struct vm;

/* Adds the functions to h's "luaworker.host" (after redis_binding_open); signals end
 * the wait; the subscription closes with h. */
void idle_wait_register(struct vm *h);

#endif
