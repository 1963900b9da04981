/* database_lease_keeper: a thread of the worker process, with a database connection
 * of its own (db/sql_session), that keeps the leases of its jobs in flight on the
 * database queue. Being apart from the vm's loop, it goes on while a handler
 * computes without yielding: a lease says that the process lives, and ends only
 * when the process does (or cannot reach the database).
 *
 * A job's lease: while a job is held (database_lease_keeper_hold), its row's
 * reserved_at is set to ceil(now + lease) - retry_after every quarter lease (the
 * lease: two heartbeats, or retry_after when less), so that by Laravel's rule (a
 * reservation expires when reserved_at <= now - retry_after) it expires a lease
 * after the last renewal. The first renewal comes a quarter lease after the start
 * (sooner when the pop's reservation expires sooner): a job shorter than that
 * costs no statement. Each renewal is one
 * UPDATE, autocommitted, conditioned on the row holding the reservation of this
 * worker's pop: its id, the attempts that pop counted, reserved_at not null (any
 * later pop, PHP's or luaworker's, counts one more). A job held ahead, its attempt
 * not counted, is renewed the same way; once its start (which counts it) is sent,
 * its renewals match either count until the start is confirmed. So no worker takes the job
 * again while this one lives, however long it runs; once the process is gone, the
 * lease runs out within a lease and the next pop of any worker takes the
 * job again, the attempt it used counted by the row. A row no longer matched (the
 * job's row gone, or reserved again) is renewed no more. A lease whose expiry
 * passed before a renewal was confirmed (the database out of reach that long) is
 * noted once (database_lease_keeper_lapsed): the job may then run elsewhere too.
 *
 * All functions are for the vm's thread; times are system_clock(), those named
 * _wall system_wall_clock(). Uses sql_session, system and pthreads. */
#ifndef LUAWORKER_WORKER_DATABASE_LEASE_KEEPER_H
#define LUAWORKER_WORKER_DATABASE_LEASE_KEEPER_H

#include <stddef.h>

#include "db/sql_session.h"

/* The renewal's statement, in four parts around its numbers: parts[0] V parts[1] ID
 * parts[2] ATTEMPTS parts[3], where V is the new reserved_at and ATTEMPTS a list of
 * one or two counts; for instance "update jobs set reserved_at = ", " where id = ",
 * " and attempts in (", ") and reserved_at is not null". */
enum { DATABASE_LEASE_SQL_PARTS = 4 };

/* Starts the thread over session (taken: freed with the keeper), with leases of
 * `lease` seconds (> 0) on reservations that expire retry_after seconds after
 * their reserved_at; nothing when it runs already (session is freed). Returns 0,
 * or -1 with err set (session freed). */
int database_lease_keeper_start(struct sql_session *session,
                                const char *const parts[DATABASE_LEASE_SQL_PARTS], double lease,
                                double retry_after, char *err, size_t errlen);

/* Holds the lease of a job in flight: its row id, reserved by a pop that counted
 * attempts, whose reservation expires at `expires_wall` (reserved_at +
 * retry_after). Returns a handle (>= 0) for database_lease_keeper_release, or -1
 * when out of memory (the job then keeps its reservation as its pop made it). */
int database_lease_keeper_hold(long long id, long long attempts, double expires_wall);

/* A held job's start, which counts one attempt more: sent (confirmed 0: renewals
 * match either count), then confirmed (1: the count is one more). Returns -1 for
 * a handle not held. */
int database_lease_keeper_charge(int handle, int confirmed);

/* When handle's reservation expires, as last confirmed (a Unix second); 0 when its
 * lease lapsed, its row is no longer this reservation's, or it is not held. */
double database_lease_keeper_expires(int handle);

/* Stops renewing handle's lease (its job ended). Returns 1 when its lease had lapsed
 * and database_lease_keeper_lapsed did not say so yet, else 0. */
int database_lease_keeper_release(int handle);

/* Fills handles[0..max) with the jobs held whose lease lapsed since the last call
 * (each said once); returns how many. */
int database_lease_keeper_lapsed(int *handles, int max);

/* Copies the failure of the last renewal (a statement's or the connection's error)
 * into buf; returns 0 when it did not fail. */
int database_lease_keeper_error(char *buf, size_t len);

/* Ends the thread and frees what it holds; for the end of the process. A statement
 * under way is waited for up to 2 seconds; past that the thread is left to end with
 * the process, with what it uses. */
void database_lease_keeper_stop(void);

#endif
