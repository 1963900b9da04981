#include "db/sqlite_binding.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

#include "loop/vm.h"
#include "db/sqlite_api.h"
#include "php/php_meta.h"

#define SQLITE_META "luaworker.sqlite"

static const struct sqlite_api *sq;  /* once loaded, at the first open */

/* The database of the handle at 1; raises once it is closed. */
static sqlite3 *check_db(lua_State *L)
{
    sqlite3 *db = vm_handle(L, 1, SQLITE_META);
    if (!db)
        luaL_error(L, "the database is closed");
    return db;
}

/* host.sqlite_open(path, busy_ms) -> database | (false, message): opens (creating
 * nothing: the file must exist) the database at path for reading and writing;
 * busy_ms: how long a statement waits for another process's lock. */
static int l_host_sqlite_open(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    int busy_ms = (int)luaL_optinteger(L, 2, 5000);
    char err[300];
    if (!(sq = sqlite_api_get(err, sizeof err)))
        return vm_push_error(L, err, "connection");
    /* the handle first: the database it holds is closed by its __gc whatever follows */
    vm_push_handle(L, SQLITE_META, NULL);
    sqlite3 **p = lua_touserdata(L, -1);
    int rc = sq->open_v2(path, p, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        char message[600];
        snprintf(message, sizeof message, "%s: %s", path, *p ? sq->errmsg(*p) : "out of memory");
        if (*p)
            sq->close_v2(*p);
        *p = NULL;
        return vm_push_error(L, message, "connection");
    }
    sq->busy_timeout(*p, busy_ms);
    return 1;
}

/* Pushes column i of the row stmt is on: integers as numbers (beyond 2^53 as
 * int64_t cdata, exact), floats as numbers, text and blobs as strings, NULL as
 * luaworker.null (cjson.null, a NULL light userdata). */
static void push_column(lua_State *L, sqlite3_stmt *s, int i)
{
    switch (sq->column_type(s, i)) {
    case SQLITE_INTEGER: {
        sqlite3_int64 v = sq->column_int64(s, i);
        if (php_meta_push_int(L, v) != 0)
            lua_pushnumber(L, (lua_Number)v);
        return;
    }
    case SQLITE_FLOAT:
        lua_pushnumber(L, sq->column_double(s, i));
        return;
    case SQLITE_NULL:
        lua_pushlightuserdata(L, NULL);
        return;
    case SQLITE_BLOB:
        lua_pushlstring(L, sq->column_blob(s, i), (size_t)sq->column_bytes(s, i));
        return;
    default:
        lua_pushlstring(L, (const char *)sq->column_text(s, i), (size_t)sq->column_bytes(s, i));
    }
}

/* Binds the value at Lua index idx to parameter i: false or nil NULL, true 1, an
 * integral number as an integer, another number as a float, a string as text.
 * Returns the sqlite3_bind_* result. */
static int bind(lua_State *L, sqlite3_stmt *s, int i, int idx)
{
    switch (lua_type(L, idx)) {
    case LUA_TNIL:
        return sq->bind_null(s, i);
    case LUA_TBOOLEAN:
        return lua_toboolean(L, idx) ? sq->bind_int64(s, i, 1) : sq->bind_null(s, i);
    case LUA_TNUMBER: {
        lua_Number n = lua_tonumber(L, idx);
        if (n == (lua_Number)(sqlite3_int64)n && n > -9.2e18 && n < 9.2e18)
            return sq->bind_int64(s, i, (sqlite3_int64)n);
        return sq->bind_double(s, i, n);
    }
    default: {
        size_t len;
        const char *v = luaL_checklstring(L, idx, &len);
        return sq->bind_text(s, i, v, (int)len, SQLITE_TRANSIENT);
    }
    }
}

/* A statement's run: its rows are pushed in a protected call (step_rows), so that
 * a result that does not fit under --memory-limit still finalizes the statement. */
struct run {
    sqlite3_stmt *s;
    int rc;
};

/* [-0, +1]: the statement's rows as a list; rc the last step's result. */
static int step_rows(lua_State *L)
{
    struct run *r = lua_touserdata(L, 1);
    lua_newtable(L);
    int rows = 0;
    while (r->rc == SQLITE_OK || r->rc == SQLITE_ROW) {
        r->rc = r->s ? sq->step(r->s) : SQLITE_DONE;
        if (r->rc != SQLITE_ROW)
            break;
        int cols = sq->column_count(r->s);
        lua_createtable(L, 0, cols);
        for (int i = 0; i < cols; i++) {
            push_column(L, r->s, i);
            lua_setfield(L, -2, sq->column_name(r->s, i));
        }
        lua_rawseti(L, -2, ++rows);
    }
    return 1;
}

/* host.sqlite_query(database, sql, n, bindings...) -> true, rows, changes | false,
 * message, "query", code | false, message, "memory" (the rows do not fit under
 * --memory-limit): runs one statement in place (it blocks the loop while SQLite
 * works, and while it waits for another process's lock, up to the busy timeout).
 * A binding: false for NULL, true (1), a number, a string; n must be the
 * statement's count of placeholders (luaworker.db checks). */
static int l_host_sqlite_query(lua_State *L)
{
    struct vm *h = vm_of(L);
    sqlite3 *db = check_db(L);
    const char *sql = luaL_checkstring(L, 2);
    int n = (int)luaL_checkinteger(L, 3);
    sqlite3_stmt *s = NULL;
    int rc = sq->prepare_v2(db, sql, -1, &s, NULL);
    int wanted = rc == SQLITE_OK && s ? sq->bind_parameter_count(s) : n;
    if (wanted != n) {
        sq->finalize(s);
        return luaL_error(L, "%d bindings for %d placeholders", n, wanted);
    }
    for (int i = 0; rc == SQLITE_OK && s && i < n; i++)
        rc = bind(L, s, i + 1, 4 + i);
    struct run r = { s, rc };
    size_t before = h->heap_used;
    lua_pushcfunction(L, step_rows);
    lua_pushlightuserdata(L, &r);
    int status = lua_pcall(L, 1, 1, 0);
    rc = r.rc;
    if (status != 0) {
        if (s)
            sq->finalize(s);
        if (status != LUA_ERRMEM)
            return lua_error(L);
        lua_pop(L, 1);
        lua_gc(L, LUA_GCCOLLECT, 0);
        char message[200];
        snprintf(message, sizeof message, "a result of more than %.1f MB does not fit under "
                 "--memory-limit=%zu (MB; the worker's Lua heap holds %.1f MB)",
                 (double)(h->heap_refused > before ? h->heap_refused - before : 0) / 1048576.0,
                 h->heap_limit >> 20, (double)h->heap_used / 1048576.0);
        return vm_push_error(L, message, "memory");
    }
    if (rc != SQLITE_DONE) {
        vm_push_error(L, sq->errmsg(db), "query");
        lua_pushinteger(L, sq->extended_errcode(db));
        if (s)
            sq->finalize(s);
        return 4;
    }
    if (s)
        sq->finalize(s);
    lua_pushboolean(L, 1);
    lua_insert(L, -2);
    lua_pushinteger(L, sq->changes(db));
    return 3;
}

/* host.sqlite_in_transaction(database) -> whether a transaction is open on it. */
static int l_host_sqlite_in_transaction(lua_State *L)
{
    lua_pushboolean(L, sq->get_autocommit(check_db(L)) == 0);
    return 1;
}

/* host.sqlite_close(database): closes it (again is harmless). */
static int l_host_sqlite_close(lua_State *L)
{
    sqlite3 *db = vm_take_handle(L, 1, SQLITE_META);
    if (db)
        sq->close_v2(db);
    return 0;
}

static const luaL_Reg functions[] = {
    {"sqlite_open", l_host_sqlite_open},
    {"sqlite_query", l_host_sqlite_query},
    {"sqlite_close", l_host_sqlite_close},
    {"sqlite_in_transaction", l_host_sqlite_in_transaction},
    {NULL, NULL},
};

void sqlite_binding_register(struct vm *h)
{
    vm_add_type(h, SQLITE_META, l_host_sqlite_close);
    vm_add_functions(h, functions);
}
