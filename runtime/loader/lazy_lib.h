/* lazy_lib: a shared library loaded on first use (dlopen), with the functions
 * luaworker takes from it: a process that never uses it does not load it, and what
 * it brings, at every start (libcurl alone brings some 30 libraries). For libcurl,
 * libpq, libsqlite3, libmicrohttpd and libxxhash. Uses nothing else. */
#ifndef LUAWORKER_LAZY_LIB_H
#define LUAWORKER_LAZY_LIB_H

#include <stddef.h>

/* A function to take: its name in the library, and where its address goes (a
 * function pointer, stored through a void * as POSIX allows for dlsym). */
struct lazy_symbol {
    const char *name;
    void **fn;
};

/* One library: set soname and needs ("luaworker.http needs libcurl (Debian's
 * libcurl4)", for the message when it cannot be loaded); the rest is lazy_lib's. */
struct lazy_lib {
    const char *soname;
    const char *needs;
    void *handle;                   /* once loaded */
    char failure[300];              /* once it failed: why, said again at each call */
};

/* Loads lib once and fills each symbol's address. Returns 0; or -1 with err set, the
 * same message at every later call. */
int lazy_lib_load(struct lazy_lib *lib, const struct lazy_symbol *symbols, size_t count,
                  char *err, size_t errlen);

/* Marks lib failed with why (set up after loading failed); later loads say it. */
void lazy_lib_fail(struct lazy_lib *lib, const char *why);

#endif
