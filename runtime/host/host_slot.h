/* host_slot: the worker's side of its supervisor's slot (supervisor/slot.h) and its
 * identity: the id its jobs are recorded under in Redis, the worker it replaces, and
 * the host functions reporting readiness, the job running, waits for Redis and the
 * reason it stops. Without a supervisor (--once, the other commands) the reports
 * are no-ops. Uses lua_host, host_system and slot. */
#ifndef LUAWORKER_HOST_SLOT_H
#define LUAWORKER_HOST_SLOT_H

#include <lauxlib.h>

struct host;

extern const luaL_Reg host_slot_functions[];

/* Gives h its id ("<host name>:<pid>:<6 random characters>") and, with fd >= 0 (the
 * memfd named by SLOT_ENV), maps its slot and writes the id there. Returns 0, or
 * -1 when the slot cannot be mapped. */
int host_slot_attach(struct host *h, int fd);

#endif
