/* heartbeat_binding: the functions of "luaworker.host" for the worker's heartbeat,
 * the lease it gives on the jobs reserved ahead, and the leases of the jobs in
 * flight, all kept by lease_keeper's thread (see lease_keeper.h): they go on while
 * a handler computes without yielding, and end with the process. Pops set the
 * heartbeat too and are confirmed the same way (host.heartbeat_note). Redis expires
 * the keys, and Laravel scores reservations, by its wall clock, which runs on while
 * this machine is paused (a virtual machine stopped or snapshotted, a laptop asleep)
 * and its CLOCK_MONOTONIC stands still: a lease lapses when either clock says so.
 * Uses vm and lease_keeper. */
#ifndef LUAWORKER_WORKER_HEARTBEAT_BINDING_H
#define LUAWORKER_WORKER_HEARTBEAT_BINDING_H

struct vm;

/* Adds the functions to h's "luaworker.host"; the heartbeat stops with h. */
void heartbeat_binding_register(struct vm *h);

#endif
