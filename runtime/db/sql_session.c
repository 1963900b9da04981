#include "db/sql_session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/mysql_api.h"
#include "db/pg_api.h"
#include "db/sqlite_api.h"

#define MAX_SETTINGS 32

struct sql_session {
    enum sql_driver driver;
    char *keys[MAX_SETTINGS + 1], *values[MAX_SETTINGS + 1];  /* NULL-ended */
    int n;
    const struct pg_api *pq;
    const struct mysql_api *my;
    const struct sqlite_api *sq;
    PGconn *pg;
    MYSQL *mysql;
    sqlite3 *lite;
};

/* The setting key, or NULL when it is not there or empty. */
static const char *setting(const struct sql_session *s, const char *key)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->keys[i], key) == 0)
            return *s->values[i] ? s->values[i] : NULL;
    return NULL;
}

struct sql_session *sql_session_new(enum sql_driver driver, const char *const *keys,
                                    const char *const *values, int n, char *err, size_t errlen)
{
    if (n > MAX_SETTINGS - 2) {
        snprintf(err, errlen, "too many connection settings");
        return NULL;
    }
    struct sql_session *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    s->driver = driver;
    int ok = 1;
    for (int i = 0; ok && i < n; i++) {
        s->keys[i] = strdup(keys[i]);
        s->values[i] = strdup(values[i]);
        s->n = i + 1;
        ok = s->keys[i] && s->values[i];
    }
    if (!ok) {
        snprintf(err, errlen, "out of memory");
    } else if (driver == SQL_PGSQL) {
        ok = (s->pq = pg_api_get(err, errlen)) != NULL;
    } else if (driver == SQL_MYSQL) {
        ok = (s->my = mysql_api_get(err, errlen)) != NULL;
    } else {
        ok = (s->sq = sqlite_api_get(err, errlen)) != NULL;
    }
    if (!ok) {
        sql_session_free(s);
        return NULL;
    }
    return s;
}

static void disconnect(struct sql_session *s)
{
    if (s->pg)
        s->pq->finish(s->pg);
    if (s->mysql)
        s->my->close(s->mysql);
    if (s->lite)
        s->sq->close_v2(s->lite);
    s->pg = NULL;
    s->mysql = NULL;
    s->lite = NULL;
}

static void drop_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* Copies message into err, its trailing newlines dropped (libpq ends with one). */
static void say(char *err, size_t errlen, const char *what, const char *message)
{
    snprintf(err, errlen, "%s%s", what, message && *message ? message : "unknown error");
    size_t len = strlen(err);
    while (len > 0 && (err[len - 1] == '\n' || err[len - 1] == '\r'))
        err[--len] = '\0';
}

static int pg_connect(struct sql_session *s, char *err, size_t errlen)
{
    /* the app's settings, then the session's waits (a server gone silent must not
     * hold the thread past them) */
    const char *keys[MAX_SETTINGS + 1], *values[MAX_SETTINGS + 1];
    int n = 0;
    for (int i = 0; i < s->n; i++) {
        keys[n] = s->keys[i];
        values[n++] = s->values[i];
    }
    char timeout[16], user_timeout[16];
    snprintf(timeout, sizeof timeout, "%d", SQL_SESSION_TIMEOUT);
    snprintf(user_timeout, sizeof user_timeout, "%d", SQL_SESSION_TIMEOUT * 1000);
    keys[n] = "connect_timeout";
    values[n++] = timeout;
    keys[n] = "tcp_user_timeout";
    values[n++] = user_timeout;
    keys[n] = values[n] = NULL;
    s->pg = s->pq->connectdbParams(keys, values, 0);
    if (!s->pg || s->pq->status(s->pg) != CONNECTION_OK) {
        say(err, errlen, "", s->pg ? s->pq->errorMessage(s->pg) : "out of memory");
        disconnect(s);
        return -2;
    }
    s->pq->setNoticeProcessor(s->pg, drop_notice, NULL);
    return 0;
}

static int pg_run(struct sql_session *s, const char *sql, long long *changed, char *err,
                  size_t errlen)
{
    PGresult *r = s->pq->exec(s->pg, sql);
    if (r && s->pq->resultStatus(r) == PGRES_COMMAND_OK) {
        *changed = strtoll(s->pq->cmdTuples(r), NULL, 10);
        s->pq->clear(r);
        return 0;
    }
    say(err, errlen, "", r ? s->pq->resultErrorMessage(r) : s->pq->errorMessage(s->pg));
    if (r)
        s->pq->clear(r);
    if (s->pq->status(s->pg) != CONNECTION_OK) {
        disconnect(s);
        return -2;
    }
    return -1;
}

/* Client errors (CR_*, 2000-2999) and the server's "connection killed / shutting
 * down" mean the connection cannot go on (as db/mysql_conn reads them). */
static int mysql_lost(unsigned int e)
{
    return (e >= 2000 && e < 3000) || e == 1053 || e == 1927 || e == 4031;
}

static int mysql_connect(struct sql_session *s, char *err, size_t errlen)
{
    const struct mysql_api *my = s->my;
    s->mysql = my->init(NULL);
    if (!s->mysql) {
        snprintf(err, errlen, "out of memory");
        return -2;
    }
    unsigned int local_infile = 0, timeout = SQL_SESSION_TIMEOUT;
    my->options(s->mysql, MYSQL_OPT_LOCAL_INFILE, &local_infile);
    my->options(s->mysql, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
    my->options(s->mysql, MYSQL_OPT_READ_TIMEOUT, &timeout);
    my->options(s->mysql, MYSQL_OPT_WRITE_TIMEOUT, &timeout);
    if (setting(s, "charset"))
        my->options(s->mysql, MYSQL_SET_CHARSET_NAME, setting(s, "charset"));
    if (setting(s, "init"))
        my->options(s->mysql, MYSQL_INIT_COMMAND, setting(s, "init"));
    if (setting(s, "ssl_ca"))
        my->options(s->mysql, MYSQL_OPT_SSL_CA, setting(s, "ssl_ca"));
    const char *port = setting(s, "port");
    /* CLIENT_FOUND_ROWS: an UPDATE counts the rows it matched, not those it changed */
    if (!my->real_connect(s->mysql, setting(s, "host"), setting(s, "user"), setting(s, "password"),
                          setting(s, "database"), port ? (unsigned int)strtoul(port, NULL, 10) : 0,
                          setting(s, "socket"), CLIENT_FOUND_ROWS)) {
        say(err, errlen, "", my->error(s->mysql));
        disconnect(s);
        return -2;
    }
    return 0;
}

static int mysql_run(struct sql_session *s, const char *sql, long long *changed, char *err,
                     size_t errlen)
{
    if (s->my->real_query(s->mysql, sql, (unsigned long)strlen(sql)) == 0) {
        *changed = (long long)s->my->affected_rows(s->mysql);
        return 0;
    }
    unsigned int e = s->my->err_no(s->mysql);
    say(err, errlen, "", s->my->error(s->mysql));
    if (mysql_lost(e)) {
        disconnect(s);
        return -2;
    }
    return -1;
}

static int sqlite_connect(struct sql_session *s, char *err, size_t errlen)
{
    const char *path = setting(s, "path");
    if (!path) {
        snprintf(err, errlen, "no database path");
        return -2;
    }
    /* the file must be there (as the worker's own connection opens it) */
    if (s->sq->open_v2(path, &s->lite, SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI, NULL) != SQLITE_OK) {
        say(err, errlen, "", s->lite ? s->sq->errmsg(s->lite) : "out of memory");
        disconnect(s);
        return -2;
    }
    s->sq->busy_timeout(s->lite, SQL_SESSION_TIMEOUT * 1000);
    return 0;
}

static int sqlite_run(struct sql_session *s, const char *sql, long long *changed, char *err,
                      size_t errlen)
{
    char *message = NULL;
    if (s->sq->exec(s->lite, sql, NULL, NULL, &message) == SQLITE_OK) {
        *changed = s->sq->changes(s->lite);
        return 0;
    }
    say(err, errlen, "", message ? message : s->sq->errmsg(s->lite));
    s->sq->free(message);
    return -1;
}

int sql_session_run(struct sql_session *s, const char *sql, long long *changed, char *err,
                    size_t errlen)
{
    *changed = 0;
    switch (s->driver) {
    case SQL_PGSQL:
        if (!s->pg && pg_connect(s, err, errlen) != 0)
            return -2;
        return pg_run(s, sql, changed, err, errlen);
    case SQL_MYSQL:
        if (!s->mysql && mysql_connect(s, err, errlen) != 0)
            return -2;
        return mysql_run(s, sql, changed, err, errlen);
    case SQL_SQLITE:
        if (!s->lite && sqlite_connect(s, err, errlen) != 0)
            return -2;
        return sqlite_run(s, sql, changed, err, errlen);
    }
    return -1;
}

void sql_session_free(struct sql_session *s)
{
    if (!s)
        return;
    disconnect(s);
    for (int i = 0; i < s->n; i++) {
        free(s->keys[i]);
        free(s->values[i]);
    }
    free(s);
}
