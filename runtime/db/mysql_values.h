/* mysql_values: Lua values to and from MySQL / MariaDB, for host_mysql. Bindings
 * as MYSQL_BINDs; rows (of the text protocol or of a prepared statement) as Lua
 * tables keyed by column: NULL as luaworker.null (a NULL light userdata), integer
 * columns as numbers (64-bit integers beyond 2^53 as exact int64 cdata, unsigned
 * ones beyond int64 as text), float and double columns as numbers, everything
 * else as text (decimals and dates as MySQL writes them, as PDO gives them). Uses
 * mysql_api and php_meta. */
#ifndef LUAWORKER_MYSQL_VALUES_H
#define LUAWORKER_MYSQL_VALUES_H

#include <stddef.h>

#include <lua.h>

#include "db/mysql_api.h"

/* The n values at L's index first.. as MYSQL_BINDs: nil or NULL (light userdata)
 * as NULL, booleans as 0/1, integral numbers as BIGINT, other numbers as DOUBLE,
 * strings as text (copied). One block, freed with free(); NULL when out of memory. */
MYSQL_BIND *mysql_values_bind(lua_State *L, int first, unsigned long n);

/* Pushes the rows of a stored text-protocol result. */
void mysql_values_push_rows(lua_State *L, const struct mysql_api *my, MYSQL_RES *res);

/* Pushes the rows of a prepared statement whose result is stored. Returns 0; or -1
 * with nothing pushed and err set. */
int mysql_values_push_statement_rows(lua_State *L, const struct mysql_api *my, MYSQL_STMT *stmt,
                                     char *err, size_t errlen);

#endif
