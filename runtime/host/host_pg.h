/* host_pg: PostgreSQL connections for luaworker.db, over libpq's asynchronous API
 * (PQconnectStartParams/PQconnectPoll, PQsendQueryParams, the socket watched by the
 * loop): a statement yields its task until its result, and a task abandoned while
 * it waits has its connection closed. Uses lua_host, pg_api and php_meta. */
#ifndef LUAWORKER_HOST_PG_H
#define LUAWORKER_HOST_PG_H

#include <lauxlib.h>

extern const luaL_Reg host_pg_functions[];

/* Makes the metatable of connections (once, before host functions are used). */
void host_pg_register(lua_State *L);

#endif
