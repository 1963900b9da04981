/* slot_binding: the worker's side of its supervisor's slot (supervisor/slot.h) and its
 * identity: the id its jobs are recorded under in Redis, the worker it replaces, and
 * the functions of "luaworker.host" reporting readiness, the job running, waits for Redis and the
 * reason it stops. Without a supervisor (--once, the other commands) the reports
 * are no-ops. Uses vm, system and slot. */
#ifndef LUAWORKER_WORKER_SLOT_BINDING_H
#define LUAWORKER_WORKER_SLOT_BINDING_H

struct vm;

/* Adds the functions to h's "luaworker.host", and gives the process its id ("<host name>:<pid>:<6 random characters>") and, with fd >= 0 (the
 * memfd named by SLOT_ENV), maps its slot (unmapped with h) and writes the id there. Returns 0, or
 * -1 when the slot cannot be mapped. */
int slot_binding_attach(struct vm *h, int fd);

#endif
