/* pg_binding: PostgreSQL connections for luaworker.db, over libpq's asynchronous API
 * (PQconnectStartParams/PQconnectPoll, PQsendQueryParams, the socket watched by the
 * loop): a statement yields its task until its result, and a task abandoned while
 * it waits has its connection closed. Uses vm, pg_api and php_meta. */
#ifndef LUAWORKER_DB_PG_BINDING_H
#define LUAWORKER_DB_PG_BINDING_H

struct vm;

/* Adds the functions to h's "luaworker.host" and makes the metatable of its values. */
void pg_binding_register(struct vm *h);

#endif
