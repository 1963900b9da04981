/* mysql_values: Lua values to and from MySQL / MariaDB, for mysql_binding. Bindings
 * as MYSQL_BINDs; a statement's end as the values host.mysql_query returns, its
 * rows (of the text protocol or of a prepared statement) as Lua tables keyed by
 * column: NULL as luaworker.null (a NULL light userdata), integer columns as
 * numbers (64-bit integers beyond 2^53 as exact int64 cdata, unsigned ones beyond
 * int64 as text), float and double columns as numbers, everything else as text
 * (decimals and dates as MySQL writes them, as PDO gives them). Uses mysql_api and
 * php_meta. */
#ifndef LUAWORKER_MYSQL_VALUES_H
#define LUAWORKER_MYSQL_VALUES_H

#include <stddef.h>

#include <lua.h>

#include "db/mysql_api.h"

/* The n values at L's index first.. as MYSQL_BINDs: nil or NULL (light userdata)
 * as NULL, booleans as 0/1, integral numbers as BIGINT, other numbers as DOUBLE,
 * strings as text (copied). One block, freed with free(); NULL when out of memory. */
MYSQL_BIND *mysql_values_bind(lua_State *L, int first, unsigned long n);

/* The end of a connection's set-up or of a statement, as host.mysql_connected and
 * host.mysql_query hand it to Lua (see mysql_values_push_outcome). */
struct mysql_outcome {
    const struct mysql_api *my;
    int connected;                  /* the end of a connection's set-up */
    MYSQL_RES *res;                 /* rows of a statement without bindings (the caller's) */
    int kept;                       /* values kept by mysql_values_keep, or 0 */
    double affected;
    unsigned int error;             /* Connector/C's or the server's error number, or 0 */
    int connection_failed;          /* the error ended the connection */
    char sqlstate[6];
    char message[512];
};

/* Pushes o and returns how many values: (true) for a connection set up; (true,
 * rows, affected) for a statement (rows from o->res, from its first row on, else
 * none); o->kept's values when it has some; (false, message, sqlstate, kind,
 * errno) for an error, kind "query" for an error of the statement, "connection"
 * when the connection failed (not to be used again). Rows are Lua tables keyed by
 * column (see the top of this file). It may be called again after a lack of memory
 * raised in the middle. */
int mysql_values_push_outcome(lua_State *L, const struct mysql_outcome *o);

/* Pushes (true, rows, affected) for the stored rows of a prepared statement, from
 * its first row on (meta: its result metadata, the caller's); or (false, message,
 * "HY000", "query", 2000) when they could not be fetched. Allocates only on the
 * Lua heap: a lack of memory raised in the middle leaks nothing, and it may be
 * called again. Returns how many values. */
int mysql_values_push_statement_outcome(lua_State *L, const struct mysql_api *my,
                                        MYSQL_STMT *stmt, MYSQL_RES *meta, double affected);

/* Pushes (false, message, "HY000", "memory", 2008): a result that does not fit
 * under --memory-limit (2008: CR_OUT_OF_MEMORY). Returns 5. */
int mysql_values_push_too_big(lua_State *L, const char *message);

/* Keeps the count values on top (popped) in the registry, for a mysql_outcome's
 * kept; returns the reference (never 0), for luaL_unref. May raise. */
int mysql_values_keep(lua_State *L, int count);

#endif
