/* sqlite_binding: SQLite databases for luaworker.db, over libsqlite3 (loaded on the
 * first open): statements run in place, blocking the loop while SQLite works or
 * waits for another process's lock (up to the busy timeout). Uses vm and
 * php_meta. */
#ifndef LUAWORKER_DB_SQLITE_BINDING_H
#define LUAWORKER_DB_SQLITE_BINDING_H

struct vm;

/* Adds the functions to h's "luaworker.host" and makes the metatable of its values. */
void sqlite_binding_register(struct vm *h);

#endif
