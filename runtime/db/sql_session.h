/* sql_session: one blocking connection to PostgreSQL, MySQL / MariaDB or SQLite, for
 * a thread of its own that runs short statements outside the vm's loop (the jobs'
 * leases on the database queue: worker/database_lease_keeper). It connects when a
 * statement is first run, and again after a connection was lost; each call waits
 * (a connect and a statement each up to SQL_SESSION_TIMEOUT seconds, a SQLite lock
 * as long). One thread at a time uses a session. Uses pg_api, mysql_api and
 * sqlite_api. */
#ifndef LUAWORKER_DB_SQL_SESSION_H
#define LUAWORKER_DB_SQL_SESSION_H

#include <stddef.h>

#define SQL_SESSION_TIMEOUT 10

enum sql_driver { SQL_PGSQL, SQL_MYSQL, SQL_SQLITE };

struct sql_session;

/* A session with the n settings keys[i] = values[i] (copied), as luaworker.db's
 * drivers give them: libpq's keywords; the MySQL settings of host.mysql_open (host,
 * port, user, password, database, socket, charset, init, ssl_ca); SQLite's path.
 * Loads the driver's library now, so call it from the vm's thread. Returns NULL
 * with err set when the library cannot be loaded or memory is short. */
struct sql_session *sql_session_new(enum sql_driver driver, const char *const *keys,
                                    const char *const *values, int n, char *err, size_t errlen);

/* Runs sql (text, autocommitted), connecting first when needed; *changed: the rows
 * it matched (an UPDATE setting a value a row had counts). Returns 0; -1 with err
 * set when the statement failed; -2 with err set when the connection could not be
 * made or was lost (it is closed: the next call connects again). */
int sql_session_run(struct sql_session *s, const char *sql, long long *changed, char *err,
                    size_t errlen);

/* Closes the connection, if any, and frees s. */
void sql_session_free(struct sql_session *s);

#endif
