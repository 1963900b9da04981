/* sqlite_api: libsqlite3 (libsqlite3.so.0), loaded on first use (lazy_lib), so that a
 * worker that opens no SQLite database does not load it. The functions luaworker
 * uses, by their names without "sqlite3_". Uses SQLite's header and lazy_lib. */
#ifndef LUAWORKER_SQLITE_API_H
#define LUAWORKER_SQLITE_API_H

#include <stddef.h>

#include <sqlite3.h>

struct sqlite_api {
    int (*open_v2)(const char *filename, sqlite3 **db, int flags, const char *vfs);
    int (*close_v2)(sqlite3 *db);
    int (*busy_timeout)(sqlite3 *db, int ms);
    int (*prepare_v2)(sqlite3 *db, const char *sql, int n, sqlite3_stmt **stmt, const char **tail);
    int (*bind_text)(sqlite3_stmt *s, int i, const char *v, int n, void (*d)(void *));
    int (*bind_int64)(sqlite3_stmt *s, int i, sqlite3_int64 v);
    int (*bind_double)(sqlite3_stmt *s, int i, double v);
    int (*bind_null)(sqlite3_stmt *s, int i);
    int (*bind_parameter_count)(sqlite3_stmt *s);
    int (*step)(sqlite3_stmt *s);
    int (*column_count)(sqlite3_stmt *s);
    const char *(*column_name)(sqlite3_stmt *s, int i);
    int (*column_type)(sqlite3_stmt *s, int i);
    sqlite3_int64 (*column_int64)(sqlite3_stmt *s, int i);
    double (*column_double)(sqlite3_stmt *s, int i);
    const unsigned char *(*column_text)(sqlite3_stmt *s, int i);
    const void *(*column_blob)(sqlite3_stmt *s, int i);
    int (*column_bytes)(sqlite3_stmt *s, int i);
    int (*changes)(sqlite3 *db);
    int (*finalize)(sqlite3_stmt *s);
    const char *(*errmsg)(sqlite3 *db);
    int (*extended_errcode)(sqlite3 *db);
    int (*get_autocommit)(sqlite3 *db);
    int (*exec)(sqlite3 *db, const char *sql, int (*callback)(void *, int, char **, char **),
                void *arg, char **errmsg);
    void (*free)(void *p);
};

/* libsqlite3's functions, loaded on the first call; NULL with err set when it cannot
 * be loaded. Not for two threads at once: the first call is the vm thread's. */
const struct sqlite_api *sqlite_api_get(char *err, size_t errlen);

#endif
