#include "db/mysql_api.h"

#include "loader/lazy_lib.h"

static struct mysql_api api;
static struct lazy_lib libmariadb = {
    "libmariadb.so.3", "MySQL and MariaDB connections need libmariadb (Debian's libmariadb3)",
    NULL, ""
};

const struct mysql_api *mysql_api_get(char *err, size_t errlen)
{
    static const struct lazy_symbol symbols[] = {
#define FN(name) {"mysql_" #name, (void **)&api.name}
        FN(init), FN(options), FN(real_connect_start), FN(real_connect_cont), FN(get_socket),
        {"mysql_errno", (void **)&api.err_no}, FN(error), FN(sqlstate), FN(thread_id),
        {"mariadb_cancel", (void **)&api.cancel}, FN(close), FN(real_query_start),
        FN(real_query_cont), FN(field_count), FN(affected_rows), FN(store_result_start),
        FN(store_result_cont), FN(num_fields), FN(fetch_fields), FN(fetch_row),
        FN(fetch_lengths), FN(free_result), FN(data_seek), FN(more_results),
        FN(next_result_start), FN(next_result_cont), FN(stmt_init), FN(stmt_prepare_start),
        FN(stmt_prepare_cont), FN(stmt_param_count), FN(stmt_bind_param),
        FN(stmt_execute_start), FN(stmt_execute_cont), FN(stmt_field_count),
        FN(stmt_store_result_start), FN(stmt_store_result_cont), FN(stmt_result_metadata),
        FN(stmt_bind_result), FN(stmt_fetch), FN(stmt_data_seek),
        FN(stmt_fetch_column), FN(stmt_affected_rows), FN(stmt_more_results),
        FN(stmt_next_result_start), FN(stmt_next_result_cont), FN(stmt_errno),
        FN(stmt_error), FN(stmt_sqlstate), FN(stmt_close), FN(real_connect), FN(real_query),
#undef FN
    };
    if (lazy_lib_load(&libmariadb, symbols, sizeof symbols / sizeof symbols[0], err, errlen))
        return NULL;
    return &api;
}
