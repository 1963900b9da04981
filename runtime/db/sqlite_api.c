#include "db/sqlite_api.h"

#include "loader/lazy_lib.h"

static struct sqlite_api api;
static struct lazy_lib libsqlite = {
    "libsqlite3.so.0", "SQLite databases need libsqlite3 (Debian's libsqlite3-0)", NULL, ""
};

const struct sqlite_api *sqlite_api_get(char *err, size_t errlen)
{
    static const struct lazy_symbol symbols[] = {
#define FN(name) {"sqlite3_" #name, (void **)&api.name}
        FN(open_v2), FN(close_v2), FN(busy_timeout), FN(prepare_v2), FN(bind_text),
        FN(bind_int64), FN(bind_double), FN(bind_null), FN(bind_parameter_count), FN(step),
        FN(column_count), FN(column_name), FN(column_type), FN(column_int64), FN(column_double),
        FN(column_text), FN(column_blob), FN(column_bytes), FN(changes), FN(finalize), FN(errmsg),
        FN(extended_errcode), FN(get_autocommit), FN(exec), FN(free),
#undef FN
    };
    if (lazy_lib_load(&libsqlite, symbols, sizeof symbols / sizeof symbols[0], err, errlen))
        return NULL;
    return &api;
}
