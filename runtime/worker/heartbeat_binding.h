/* heartbeat_binding: the worker's heartbeat and the lease it gives, kept by the vm's
 * loop rather than by Lua. Every so often a SET with a time to live of each
 * heartbeat key, so that whoever finds them gone may take the worker for dead and
 * give back the jobs it reserved ahead (scripts/give_back.lua). It beats while the
 * main coroutine waits (for a job, a reply, a sleep); it stops while a handler
 * computes without yielding.
 *
 * The lease: a heartbeat Redis confirmed keeps the keys alive until at least its
 * send time plus their TTL; the worker may count on its jobs for `lease` seconds
 * (less than the TTL) after that send. Confirmations that follow each other within
 * the lease make an unbroken run; a gap (an outage, a long computation) starts a new
 * one, and whatever was reserved before it may have been given back meanwhile. Pops
 * set the heartbeat too and are confirmed the same way (host.heartbeat_note).
 * Redis expires the keys by its wall clock, which runs on while this machine is
 * paused (a virtual machine stopped or snapshotted, a laptop asleep) and its
 * CLOCK_MONOTONIC stands still: a lease lapses when either clock says so. Uses
 * vm, system and redis_binding's queue connection. */
#ifndef LUAWORKER_WORKER_HEARTBEAT_BINDING_H
#define LUAWORKER_WORKER_HEARTBEAT_BINDING_H

struct vm;

/* Adds the functions to h's "luaworker.host"; the heartbeat stops with h. */
void heartbeat_binding_register(struct vm *h);

#endif
