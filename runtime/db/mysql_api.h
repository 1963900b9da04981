/* mysql_api: MariaDB Connector/C (libmariadb.so.3), loaded on first use (lazy_lib),
 * so that a worker that opens no MySQL/MariaDB connection does not load it and what
 * it brings at every start. The functions luaworker uses, by their names without
 * "mysql_" (mariadb_cancel as cancel). Uses Connector/C's header and lazy_lib. */
#ifndef LUAWORKER_MYSQL_API_H
#define LUAWORKER_MYSQL_API_H

#include <stddef.h>

#include <mysql.h>

struct mysql_api {
    MYSQL *(*init)(MYSQL *mysql);
    int (*options)(MYSQL *mysql, enum mysql_option option, const void *arg);
    int (*real_connect_start)(MYSQL **ret, MYSQL *mysql, const char *host, const char *user,
                              const char *passwd, const char *db, unsigned int port,
                              const char *unix_socket, unsigned long flags);
    int (*real_connect_cont)(MYSQL **ret, MYSQL *mysql, int status);
    my_socket (*get_socket)(MYSQL *mysql);
    unsigned int (*err_no)(MYSQL *mysql);
    const char *(*error)(MYSQL *mysql);
    const char *(*sqlstate)(MYSQL *mysql);
    unsigned long (*thread_id)(MYSQL *mysql);
    int (*cancel)(MYSQL *mysql);
    void (*close)(MYSQL *mysql);
    int (*real_query_start)(int *ret, MYSQL *mysql, const char *q, unsigned long length);
    int (*real_query_cont)(int *ret, MYSQL *mysql, int status);
    unsigned int (*field_count)(MYSQL *mysql);
    my_ulonglong (*affected_rows)(MYSQL *mysql);
    int (*store_result_start)(MYSQL_RES **ret, MYSQL *mysql);
    int (*store_result_cont)(MYSQL_RES **ret, MYSQL *mysql, int status);
    unsigned int (*num_fields)(MYSQL_RES *res);
    MYSQL_FIELD *(*fetch_fields)(MYSQL_RES *res);
    MYSQL_ROW (*fetch_row)(MYSQL_RES *res);
    unsigned long *(*fetch_lengths)(MYSQL_RES *res);
    void (*free_result)(MYSQL_RES *res);
    void (*data_seek)(MYSQL_RES *res, unsigned long long offset);
    my_bool (*more_results)(MYSQL *mysql);
    int (*next_result_start)(int *ret, MYSQL *mysql);
    int (*next_result_cont)(int *ret, MYSQL *mysql, int status);
    MYSQL_STMT *(*stmt_init)(MYSQL *mysql);
    int (*stmt_prepare_start)(int *ret, MYSQL_STMT *stmt, const char *q, unsigned long length);
    int (*stmt_prepare_cont)(int *ret, MYSQL_STMT *stmt, int status);
    unsigned long (*stmt_param_count)(MYSQL_STMT *stmt);
    my_bool (*stmt_bind_param)(MYSQL_STMT *stmt, MYSQL_BIND *bind);
    int (*stmt_execute_start)(int *ret, MYSQL_STMT *stmt);
    int (*stmt_execute_cont)(int *ret, MYSQL_STMT *stmt, int status);
    unsigned int (*stmt_field_count)(MYSQL_STMT *stmt);
    int (*stmt_store_result_start)(int *ret, MYSQL_STMT *stmt);
    int (*stmt_store_result_cont)(int *ret, MYSQL_STMT *stmt, int status);
    MYSQL_RES *(*stmt_result_metadata)(MYSQL_STMT *stmt);
    my_bool (*stmt_bind_result)(MYSQL_STMT *stmt, MYSQL_BIND *bind);
    int (*stmt_fetch)(MYSQL_STMT *stmt);
    void (*stmt_data_seek)(MYSQL_STMT *stmt, unsigned long long offset);
    int (*stmt_fetch_column)(MYSQL_STMT *stmt, MYSQL_BIND *bind, unsigned int column,
                             unsigned long offset);
    my_ulonglong (*stmt_affected_rows)(MYSQL_STMT *stmt);
    my_bool (*stmt_more_results)(MYSQL_STMT *stmt);
    int (*stmt_next_result_start)(int *ret, MYSQL_STMT *stmt);
    int (*stmt_next_result_cont)(int *ret, MYSQL_STMT *stmt, int status);
    unsigned int (*stmt_errno)(MYSQL_STMT *stmt);
    const char *(*stmt_error)(MYSQL_STMT *stmt);
    const char *(*stmt_sqlstate)(MYSQL_STMT *stmt);
    my_bool (*stmt_close)(MYSQL_STMT *stmt);
    /* blocking, for a thread of its own (db/sql_session) */
    MYSQL *(*real_connect)(MYSQL *mysql, const char *host, const char *user, const char *passwd,
                           const char *db, unsigned int port, const char *unix_socket,
                           unsigned long flags);
    int (*real_query)(MYSQL *mysql, const char *q, unsigned long length);
};

/* Connector/C's functions, loaded on the first call; NULL with err set when it
 * cannot be loaded. */
const struct mysql_api *mysql_api_get(char *err, size_t errlen);

#endif
