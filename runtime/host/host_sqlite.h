/* host_sqlite: SQLite databases for luaworker.db, over libsqlite3 (loaded on the
 * first open): statements run in place, blocking the loop while SQLite works or
 * waits for another process's lock (up to the busy timeout). Uses lua_host and
 * php_meta. */
#ifndef LUAWORKER_HOST_SQLITE_H
#define LUAWORKER_HOST_SQLITE_H

#include <lauxlib.h>

extern const luaL_Reg host_sqlite_functions[];

/* Makes the metatable of databases (once, before host functions are used). */
void host_sqlite_register(lua_State *L);

#endif
