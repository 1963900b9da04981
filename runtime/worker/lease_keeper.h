/* lease_keeper: a thread of the worker process, with a loop and a Redis connection
 * of its own, that keeps the worker's heartbeat and the leases of its jobs in
 * flight. Being apart from the vm's loop, it goes on while a handler computes
 * without yielding: the heartbeat and the leases say that the process lives, not
 * that its Lua yields, and end only when the process does (or cannot reach Redis).
 *
 * The heartbeat: every `interval` seconds a SET with PX ttl of each heartbeat key (a
 * round, skipped while the last one is unanswered). A confirmed round sent at t
 * holds the worker's lease on the jobs it reserved ahead until t + `lease` by both
 * clocks; confirmations within the lease of each other make an unbroken run (see
 * lease_keeper_lease). Pops set the heartbeat too (lease_keeper_confirm).
 *
 * A job's lease: while a job is held (lease_keeper_hold), its reserved copy's score
 * in queues:Q:reserved (the Unix second its reservation expires, Laravel's) is
 * moved to now + 2 TTL every TTL/2 (ZADD XX: the member is unchanged, and nothing
 * is added once the job left the set), the first time half a heartbeat after its
 * start (sooner when its reservation expires sooner): a job shorter than that costs
 * no command. So no worker, PHP's or luaworker's, takes it again while its worker
 * lives, however long it runs; once the process is gone, its score passes within
 * two heartbeats and the next poll of any worker (Laravel's migrate) puts it back
 * on its queue with the attempt it used counted. A lease whose score passed before
 * a renewal was confirmed (Redis out of reach that long) is noted once
 * (lease_keeper_lapsed): the job may then run elsewhere too.
 *
 * All functions are for the vm's thread; times are system_clock(), those named
 * _wall system_wall_clock(). Uses redis_client, system, libev and pthreads. */
#ifndef LUAWORKER_WORKER_LEASE_KEEPER_H
#define LUAWORKER_WORKER_LEASE_KEEPER_H

#include <stddef.h>

#include "config/config.h"

/* Starts the thread, connecting (when it first sends) to the Redis of s, which must
 * outlive it; nothing when it runs already. Returns 0, or -1 with err set. */
int lease_keeper_start(const struct redis_settings *s, char *err, size_t errlen);

/* From now on a round every interval seconds: SET of each of the nkeys keys to value
 * with PX ttl_ms; each confirmed round holds the lease for lease seconds (below the
 * TTL). Replaces an earlier heartbeat; the strings are copied. Returns 0, or -1 when
 * out of memory. */
int lease_keeper_beat(double interval, long long ttl_ms, double lease, const char *value,
                      const char *const *keys, int nkeys);

/* No more rounds; the leases of jobs held go on. */
void lease_keeper_beat_stop(void);

/* A round sent at `sent` (`sent_wall`) elsewhere (a pop that set the heartbeat) was
 * confirmed now. */
void lease_keeper_confirm(double sent, double sent_wall);

/* Whether the lease is held now; if so, *since is when the unbroken run of
 * confirmations holding it began: what was reserved after that is still ours. */
int lease_keeper_lease(double *since);

/* Holds the lease of a job in flight: its reserved copy member[0..memberlen) in the
 * sorted set key[0..keylen), whose score is expires (a Unix second). Copies both.
 * Returns a handle (>= 0) for lease_keeper_release, or -1 when out of memory (the
 * job then keeps its reservation as Laravel's pop made it). */
int lease_keeper_hold(const char *key, size_t keylen, const char *member, size_t memberlen,
                      double expires);

/* Stops renewing handle's lease (its job ended: its outcome is in Redis or on its
 * way). Returns 1 when its lease had lapsed and lease_keeper_lapsed did not say so
 * yet, else 0. */
int lease_keeper_release(int handle);

/* Fills handles[0..max) with the jobs held whose lease lapsed since the last call
 * (each said once); returns how many. */
int lease_keeper_lapsed(int *handles, int max);

/* Ends the thread and frees what it holds; the heartbeat and the leases stop. */
void lease_keeper_stop(void);

#endif
