/* mysql_binding: MySQL and MariaDB connections for luaworker.db, over MariaDB
 * Connector/C's non-blocking API (mysql_real_connect_start, mysql_real_query_start,
 * mysql_stmt_prepare_start / execute_start / store_result_start, the _next_result
 * ones and their _cont, the socket watched by the loop): a statement yields its
 * task until its result, every further result (a CALL's) read, so that the
 * connection is ready for the next; a task abandoned while it waits has its
 * connection closed. Uses vm, mysql_api and mysql_values. */
#ifndef LUAWORKER_DB_MYSQL_BINDING_H
#define LUAWORKER_DB_MYSQL_BINDING_H

struct vm;

/* Adds the functions to h's "luaworker.host" and makes the metatable of its values. */
void mysql_binding_register(struct vm *h);

#endif
