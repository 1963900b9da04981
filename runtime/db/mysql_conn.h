/* mysql_conn: a MySQL / MariaDB connection of mysql_binding and the driver of its
 * non-blocking operations (Connector/C's _start and _cont, the socket watched by the
 * vm's loop): the connection's set-up, a statement with its rows and every further
 * result (a CALL's), ending in the wait's outcome handed to the task. Private to
 * db/mysql_binding.c and db/mysql_conn.c. Uses vm, mysql_api and mysql_values. */
#ifndef LUAWORKER_DB_MYSQL_CONN_H
#define LUAWORKER_DB_MYSQL_CONN_H

#include "db/mysql_api.h"
#include "loop/vm.h"

#define SETTINGS 9

/* What the operation under way continues with (each has Connector/C's _start and
 * _cont): the connection's set-up, a statement without bindings (text protocol:
 * the query, its rows, then each further result and its rows), or a prepared
 * statement (prepare, execute, its rows, then each further result and its rows).
 * Further results are a CALL's: the result sets of its procedure, then its status. */
enum step { STEP_NONE, STEP_CONNECT, STEP_QUERY, STEP_STORE, STEP_NEXT, STEP_NEXT_STORE,
            STEP_PREPARE, STEP_EXECUTE, STEP_STMT_STORE, STEP_STMT_NEXT, STEP_STMT_NEXT_STORE };

/* A connection: Connector/C's, in non-blocking mode, its socket watched by the loop
 * while a task waits on it. Owned by its userdata; mysql_close (or its collection)
 * ends it. */
struct my_conn {
    struct vm *h;
    const struct mysql_api *my;
    MYSQL *mysql;                   /* NULL once closed */
    ev_io io;
    struct vm_waiter *w;          /* the task's wait under way, or NULL */
    enum step step;
    int ready;                      /* the step ended at its _start: advance at the next turn */
    int broken;                     /* a connection failure was seen: not to be used again */
    char *settings[SETTINGS];       /* copies until the set-up ends: see SETTING_* */
    MYSQL_STMT *stmt;               /* the prepared statement under way */
    MYSQL_BIND *params;             /* its bindings (one block with their values) */
    unsigned long nparams;
    /* the statement's first result, held while its further results are drained: */
    MYSQL_RES *res;                 /* its rows (text protocol), or NULL */
    int kept;                       /* its values kept in the registry (a prepared
                                     * statement's), or 0 (luaL_ref never gives 0) */
    double affected;
    union { MYSQL *mysql; int i; MYSQL_RES *res; } ret;
};


enum { SETTING_HOST, SETTING_USER, SETTING_PASSWORD, SETTING_DATABASE, SETTING_SOCKET,
       SETTING_CHARSET, SETTING_INIT, SETTING_SSL_CA, SETTING_PORT };

/* Stops watching c's socket. */
void mysql_conn_stop_io(struct my_conn *c);

/* Wipes and frees the copies of c's settings (the password does not outlive the
 * set-up in this process's memory). */
void mysql_conn_forget_settings(struct my_conn *c);

/* Ends the prepared statement under way (a short write: the server does not answer). */
void mysql_conn_end_statement(struct my_conn *c);

/* Ends c (an operation under way fails); again is harmless. */
void mysql_conn_close(struct my_conn *c);

/* Frees c (NULL is nothing): a task waiting on it is dropped, the connection
 * closed, the settings forgotten. */
void mysql_conn_free(struct my_conn *c);

/* Goes on after a _start or _cont returned st: waits for the socket, or advances. */
void mysql_conn_proceed(struct my_conn *c, int st);

/* Ends c's set-up that took too long: closed, its task resumed with a connection
 * failure (2013). */
void mysql_conn_timed_out(struct my_conn *c);

/* The loop's callback for c's socket (c->io.data is c). */
void mysql_conn_on_io(struct ev_loop *loop, ev_io *io, int revents);

#endif
