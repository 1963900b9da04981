/*
 * pg_rows: the rows of a statement run in libpq's single-row mode, kept compact as
 * they come (each row's PGresult is freed at once: libpq never holds the whole
 * result), so that a result over --memory-limit is refused without the process
 * ever holding it. Past `limit` bytes of values the rows are counted, not kept: the
 * statement still runs to its end on the server and the connection stays usable.
 * Uses libpq (through pg_api), lib/buffer and php_meta (64-bit integers).
 */
#ifndef LUAWORKER_PG_ROWS_H
#define LUAWORKER_PG_ROWS_H

#include <stddef.h>

#include <lua.h>

#include "db/pg_api.h"
#include "lib/buffer.h"

struct pg_rows {
    int cols;               /* the columns, -1 before the first row */
    char **names;           /* the columns' names (one allocation with types) */
    Oid *types;
    struct buffer data;     /* each value: a byte (1: NULL), a 4-byte length, its bytes */
    size_t count;           /* the rows kept */
    size_t bytes;           /* the values' bytes of every row, kept or not */
    size_t limit;           /* past this many bytes the rows are counted only; 0: none */
    int dropped;            /* rows were counted only (over limit, or out of memory) */
};

/* Starts rows empty, keeping at most limit bytes of values (0: no limit). */
void pg_rows_start(struct pg_rows *rows, size_t limit);

/* Adds the row of r (a PGRES_SINGLE_TUPLE result; the caller frees r). */
void pg_rows_add(struct pg_rows *rows, const struct pg_api *pq, const PGresult *r);

/* Pushes the rows kept as a table of tables keyed by column name, each value as
 * Lua sees it: NULL as luaworker.null (a NULL light userdata), booleans, numbers for
 * integer and float columns (64-bit integers beyond 2^53 as int64_t cdata, exact),
 * text otherwise (numeric too, as PDO). Only for rows not dropped. */
void pg_rows_push(lua_State *L, const struct pg_rows *rows);

/* Frees what rows holds; it is empty again (as pg_rows_start(rows, 0)). */
void pg_rows_free(struct pg_rows *rows);

#endif
