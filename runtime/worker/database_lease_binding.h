/* database_lease_binding: the functions of "luaworker.host" for the leases of the
 * jobs in flight on the database queue, kept by database_lease_keeper's thread and
 * connection (see database_lease_keeper.h): they go on while a handler computes
 * without yielding, and end with the process. Laravel's reservations expire by the
 * wall clock of the workers that pop: a lease lapses when it says so. Uses vm,
 * sql_session and database_lease_keeper. */
#ifndef LUAWORKER_WORKER_DATABASE_LEASE_BINDING_H
#define LUAWORKER_WORKER_DATABASE_LEASE_BINDING_H

struct vm;

/* Adds the functions to h's "luaworker.host"; the thread stops with h. */
void database_lease_binding_register(struct vm *h);

#endif
