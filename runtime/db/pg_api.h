/* pg_api: libpq (libpq.so.5), loaded on first use (lazy_lib), so that a worker that
 * opens no PostgreSQL connection does not load it and what it brings at every
 * start. The functions luaworker uses, by their libpq names without "PQ". Uses
 * libpq's header and lazy_lib. */
#ifndef LUAWORKER_PG_API_H
#define LUAWORKER_PG_API_H

#include <stddef.h>

#include <libpq-fe.h>

struct pg_api {
    PGconn *(*connectStartParams)(const char *const *keywords, const char *const *values,
                                  int expand_dbname);
    PostgresPollingStatusType (*connectPoll)(PGconn *conn);
    ConnStatusType (*status)(const PGconn *conn);
    int (*socket)(const PGconn *conn);
    char *(*errorMessage)(const PGconn *conn);
    void (*finish)(PGconn *conn);
    int (*setnonblocking)(PGconn *conn, int arg);
    int (*sendQueryParams)(PGconn *conn, const char *command, int nParams, const Oid *paramTypes,
                           const char *const *paramValues, const int *paramLengths,
                           const int *paramFormats, int resultFormat);
    int (*flush)(PGconn *conn);
    int (*consumeInput)(PGconn *conn);
    int (*isBusy)(PGconn *conn);
    PGresult *(*getResult)(PGconn *conn);
    ExecStatusType (*resultStatus)(const PGresult *res);
    char *(*resultErrorField)(const PGresult *res, int fieldcode);
    char *(*resultErrorMessage)(const PGresult *res);
    int (*ntuples)(const PGresult *res);
    int (*nfields)(const PGresult *res);
    char *(*fname)(const PGresult *res, int field_num);
    Oid (*ftype)(const PGresult *res, int field_num);
    int (*getisnull)(const PGresult *res, int tup_num, int field_num);
    char *(*getvalue)(const PGresult *res, int tup_num, int field_num);
    int (*getlength)(const PGresult *res, int tup_num, int field_num);
    char *(*cmdTuples)(PGresult *res);
    void (*clear)(PGresult *res);
    int (*backendPID)(const PGconn *conn);
    PGTransactionStatusType (*transactionStatus)(const PGconn *conn);
    PQnoticeProcessor (*setNoticeProcessor)(PGconn *conn, PQnoticeProcessor proc, void *arg);
    int (*setSingleRowMode)(PGconn *conn);
    PGnotify *(*notifies)(PGconn *conn);
    void (*freemem)(void *ptr);
    /* blocking, for a thread of its own (db/sql_session) */
    PGconn *(*connectdbParams)(const char *const *keywords, const char *const *values,
                               int expand_dbname);
    PGresult *(*exec)(PGconn *conn, const char *query);
};

/* libpq's functions, loaded on the first call; NULL with err set when libpq cannot
 * be loaded. */
const struct pg_api *pg_api_get(char *err, size_t errlen);

#endif
