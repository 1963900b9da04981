/* host_mysql: MySQL and MariaDB connections for luaworker.db, over MariaDB
 * Connector/C's non-blocking API (mysql_real_connect_start, mysql_real_query_start,
 * mysql_stmt_prepare_start / execute_start / store_result_start, the _next_result
 * ones and their _cont, the socket watched by the loop): a statement yields its
 * task until its result, every further result (a CALL's) read, so that the
 * connection is ready for the next; a task abandoned while it waits has its
 * connection closed. Uses lua_host, mysql_api and mysql_values. */
#ifndef LUAWORKER_HOST_MYSQL_H
#define LUAWORKER_HOST_MYSQL_H

#include <lauxlib.h>

extern const luaL_Reg host_mysql_functions[];

/* Makes the metatable of connections (once, before host functions are used). */
void host_mysql_register(lua_State *L);

#endif
