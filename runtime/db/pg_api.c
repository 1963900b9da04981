#include "db/pg_api.h"

#include <dlfcn.h>
#include <stdio.h>

static struct pg_api api;
static int loaded, failed;
static char failure[256];

const struct pg_api *pg_api_get(char *err, size_t errlen)
{
    if (loaded)
        return &api;
    if (failed) {
        snprintf(err, errlen, "%s", failure);
        return NULL;
    }
    void *lib = dlopen("libpq.so.5", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        failed = 1;
        snprintf(failure, sizeof failure, "PostgreSQL connections need libpq (Debian's libpq5): %s",
                 dlerror());
        snprintf(err, errlen, "%s", failure);
        return NULL;
    }
    struct { const char *name; void **fn; } table[] = {
#define FN(name) {"PQ" #name, (void **)&api.name}
        FN(connectStartParams), FN(connectPoll), FN(status), FN(socket), FN(errorMessage),
        FN(finish), FN(setnonblocking), FN(sendQueryParams), FN(flush), FN(consumeInput),
        FN(isBusy), FN(getResult), FN(resultStatus), FN(resultErrorField),
        FN(resultErrorMessage), FN(ntuples), FN(nfields), FN(fname), FN(ftype), FN(getisnull),
        FN(getvalue), FN(getlength), FN(cmdTuples), FN(clear),
#undef FN
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        *table[i].fn = dlsym(lib, table[i].name);
        if (!*table[i].fn) {
            failed = 1;
            snprintf(failure, sizeof failure, "libpq.so.5 has no %s", table[i].name);
            snprintf(err, errlen, "%s", failure);
            dlclose(lib);
            return NULL;
        }
    }
    loaded = 1;
    return &api;
}
