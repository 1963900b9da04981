#include "version.h"

#include <dlfcn.h>
#include <ev.h>
#include <hiredis/hiredis.h>
#include <lauxlib.h>
#include <luajit.h>
#include <lualib.h>
#include <openssl/crypto.h>
#include <openssl/opensslv.h>

#ifndef LUAWORKER_VERSION
#define LUAWORKER_VERSION "unknown"
#endif

extern int luaopen_cjson(lua_State *L);

/* The libraries loaded on first use (loader/lazy_lib), each with the function that
 * says its version. Each stays loaded (the process ends next): a library closed
 * again leaves what its start allocated to LeakSanitizer as leaks of no module. */
static const struct {
    const char *soname, *function, *what;
    int number;  /* 0: the function returns a string; 1: an int as libpq's (150005 for
                  * 15.5); 2: one as libxxhash's (801 for 0.8.1) */
} lazy[] = {
    {"libcurl.so.4", "curl_version", "luaworker.http", 0},
    {"libpq.so.5", "PQlibVersion", "PostgreSQL", 1},
    {"libmariadb.so.3", "mysql_get_client_info", "MySQL and MariaDB", 0},
    {"libsqlite3.so.0", "sqlite3_libversion", "SQLite", 0},
    {"libmicrohttpd.so.12", "MHD_get_version", "--metrics", 0},
    {"libxxhash.so.0", "XXH_versionNumber", "php.xxh128, Laravel 12's keys", 2},
};

/* lua-cjson's _VERSION, as linked in. */
static void print_cjson(FILE *f)
{
    lua_State *L = luaL_newstate();
    if (!L)
        return;
    lua_pushcfunction(L, luaopen_cjson);
    if (lua_pcall(L, 0, 1, 0) == 0) {
        lua_getfield(L, -1, "_VERSION");
        if (lua_isstring(L, -1))
            fprintf(f, "  lua-cjson %s (linked in)\n", lua_tostring(L, -1));
    }
    lua_close(L);
}

void version_print(FILE *f)
{
    fprintf(f, "luaworker %s\n", LUAWORKER_VERSION);
    fprintf(f, "speaks Laravel 8.83 to 13 (--laravel): the Redis queue (one server or a Cluster) "
               "and the database queue\n");
    fprintf(f, "built with:\n");
    fprintf(f, "  %s\n", LUAJIT_VERSION);
    fprintf(f, "  hiredis %d.%d.%d\n", HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH);
    fprintf(f, "  libev %d.%d (running %d.%d)\n", EV_VERSION_MAJOR, EV_VERSION_MINOR,
            ev_version_major(), ev_version_minor());
    fprintf(f, "  %s (running %s)\n", OPENSSL_VERSION_TEXT, OpenSSL_version(OPENSSL_VERSION));
    print_cjson(f);
    fprintf(f, "loaded on first use:\n");
    for (size_t i = 0; i < sizeof lazy / sizeof lazy[0]; i++) {
        void *h = dlopen(lazy[i].soname, RTLD_NOW | RTLD_LOCAL);
        /* as lazy_lib stores them: POSIX's way to a function from dlsym */
        int (*number)(void) = NULL;
        const char *(*text)(void) = NULL;
        if (h && lazy[i].number)
            *(void **)&number = dlsym(h, lazy[i].function);
        else if (h)
            *(void **)&text = dlsym(h, lazy[i].function);
        if (number && lazy[i].number == 2) {
            int v = number();
            fprintf(f, "  %s (%s): %d.%d.%d\n", lazy[i].soname, lazy[i].what, v / 10000, v / 100 % 100,
                    v % 100);
        } else if (number) {
            int v = number();
            fprintf(f, "  %s (%s): %d.%d\n", lazy[i].soname, lazy[i].what, v / 10000, v % 10000);
        } else if (text) {
            fprintf(f, "  %s (%s): %s\n", lazy[i].soname, lazy[i].what, text());
        } else {
            fprintf(f, "  %s (%s): not installed\n", lazy[i].soname, lazy[i].what);
        }
    }
}
