#include "loader/lazy_lib.h"

#include <dlfcn.h>
#include <stdio.h>

void lazy_lib_fail(struct lazy_lib *lib, const char *why)
{
    snprintf(lib->failure, sizeof lib->failure, "%s", why);
    if (lib->handle)
        dlclose(lib->handle);
    lib->handle = NULL;
}

int lazy_lib_load(struct lazy_lib *lib, const struct lazy_symbol *symbols, size_t count,
                  char *err, size_t errlen)
{
    if (!lib->handle && !lib->failure[0]) {
        lib->handle = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
        if (!lib->handle)
            snprintf(lib->failure, sizeof lib->failure, "%s: %s", lib->needs, dlerror());
        for (size_t i = 0; lib->handle && i < count; i++) {
            *symbols[i].fn = dlsym(lib->handle, symbols[i].name);
            if (!*symbols[i].fn) {
                char why[200];
                snprintf(why, sizeof why, "%s has no %s", lib->soname, symbols[i].name);
                lazy_lib_fail(lib, why);
            }
        }
    }
    if (lib->handle)
        return 0;
    snprintf(err, errlen, "%s", lib->failure);
    return -1;
}
