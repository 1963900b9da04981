/* waits: the functions of "luaworker.host" that wait for time: sleeps and timers
 * (a signal ends a wakeable one early), host.cancel, host.allow_waits, and the
 * signal state (host.signals). Uses vm. */
#ifndef LUAWORKER_LOOP_WAITS_H
#define LUAWORKER_LOOP_WAITS_H

struct vm;

/* Adds the functions to h's "luaworker.host" and makes signals end wakeable sleeps. */
void waits_register(struct vm *h);

#endif
