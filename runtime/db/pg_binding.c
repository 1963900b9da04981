#include "db/pg_binding.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "db/pg_api.h"
#include "db/pg_rows.h"
#include "loop/vm.h"

#define PG_META "luaworker.pg"
#define MAX_PARAMS 65535          /* the protocol's own limit on parameters */

/* A connection: libpq's, watched by the loop while a task waits on it. Owned by
 * its userdata; pg_close (or its collection) ends it. */
struct pg_conn {
    struct vm *h;
    const struct pg_api *pq;
    PGconn *conn;
    ev_io io;
    struct vm_waiter *w;          /* the task's wait under way, or NULL */
    int connecting;                 /* PQconnectPoll still drives it */
    int listening;                  /* a task waits for notifications (host.pg_notified) */
    PGnotify *first;                /* the notification that ended that wait, not yet handed over */
    PGresult *result;               /* the query's: its first error, else its last */
    struct pg_rows rows;            /* the query's rows, read one at a time */
};

static void stop_io(struct pg_conn *c)
{
    ev_io_stop(c->h->loop, &c->io);
}

static void watch(struct pg_conn *c, int events)
{
    stop_io(c);
    ev_io_set(&c->io, c->pq->socket(c->conn), events);
    ev_io_start(c->h->loop, &c->io);
}

static void close_conn(struct pg_conn *c)
{
    pg_rows_free(&c->rows);
    c->listening = 0;
    if (!c->conn)
        return;
    if (c->first)
        c->pq->freemem(c->first);
    c->first = NULL;
    stop_io(c);
    if (c->result)
        c->pq->clear(c->result);
    c->result = NULL;
    c->pq->finish(c->conn);
    c->conn = NULL;
}

/* What a finished wait hands the task: see push_outcome. */
struct outcome {
    int connected;                  /* the end of a connection's set-up */
    const struct pg_api *pq;
    PGresult *result;               /* the statement's, or NULL */
    const struct pg_rows *rows;     /* its rows */
    const char *error;              /* a connection's failure, or NULL */
    int copy;                       /* the statement was a COPY (not run: refused) */
};

/* What a COPY statement gets: luaworker.db has no way to send or take its data. */
#define COPY_REFUSED "COPY is not supported: luaworker.db runs statements, not COPY's " \
    "data stream (the connection was closed)"

/* (true, rows, affected) | (false, message, kind, sqlstate): kind "query" for an
 * error of the statement (message: the server's whole report, as libpq formats it:
 * "ERROR:  ...", its DETAIL, HINT and LINE lines), "connection" when the connection
 * failed (it is closed). */
static int push_outcome(lua_State *L, void *data)
{
    struct outcome *o = data;
    const struct pg_api *pq = o->pq;
    PGresult *r = o->result;
    if (o->connected && !o->error) {
        lua_pushboolean(L, 1);
        return 1;
    }
    if (o->copy) {
        vm_push_error(L, COPY_REFUSED, "query");
        lua_pushliteral(L, "0A000");
        return 4;
    }
    if (o->error || !r)
        return vm_push_error(L, o->error ? o->error : "the server sent no result", "connection");
    ExecStatusType st = pq->resultStatus(r);
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
        const char *state = pq->resultErrorField(r, PG_DIAG_SQLSTATE);
        vm_push_error(L, pq->resultErrorMessage(r), "query");
        lua_pushstring(L, state);  /* nil without one */
        return 4;
    }
    if (o->rows->dropped)  /* under --memory-limit, yet the system had no memory */
        return vm_push_error(L, "the system has no memory for the statement's result", "memory");
    lua_pushboolean(L, 1);
    pg_rows_push(L, o->rows);
    const char *affected = pq->cmdTuples(r);
    lua_pushnumber(L, affected && *affected ? strtod(affected, NULL) : 0);
    return 3;
}

/* (false, message, "memory"): a result that does not fit under --memory-limit. */
static int push_too_big(lua_State *L, const char *message)
{
    return vm_push_error(L, message, "memory");
}

static const struct vm_pusher outcome_pusher = { push_outcome, push_too_big };

/* Ends the wait under way (resuming its task) with the statement's result, or the
 * end of the connection's set-up, or a connection's failure (error). */
static void finish_wait(struct pg_conn *c, const char *error, int copy)
{
    struct vm_waiter *w = c->w;
    struct vm *h = c->h;
    /* the rows are the outcome's: the task resumed may start the next statement on c */
    struct pg_rows rows = c->rows;
    pg_rows_start(&c->rows, 0);
    struct outcome o = { c->connecting, c->pq, c->result, &rows, error, copy };
    /* a statement that failed reports its error, whatever its rows came to */
    size_t bytes = !error && !copy && c->result &&
                   c->pq->resultStatus(c->result) != PGRES_FATAL_ERROR ? rows.bytes : 0;
    c->connecting = 0;
    c->w = NULL;
    c->result = NULL;
    stop_io(c);
    if (w) {
        double ticket = w->ticket;
        vm_waiter_drop(w);
        if (!h->closing && !h->finished)
            vm_resume_with(h, ticket, &outcome_pusher, &o, bytes);
    }
    if (o.result)
        o.pq->clear(o.result);
    pg_rows_free(&rows);
}

/* Drives a query: reads what came, keeps the results, ends the wait after the last. */
static void read_results(struct pg_conn *c)
{
    const struct pg_api *pq = c->pq;
    if (!pq->consumeInput(c->conn)) {
        finish_wait(c, pq->errorMessage(c->conn), 0);
        return;
    }
    while (!pq->isBusy(c->conn)) {
        PGresult *r = pq->getResult(c->conn);
        if (!r) {
            finish_wait(c, NULL, 0);
            return;
        }
        ExecStatusType st = pq->resultStatus(r);
        if (st == PGRES_COPY_IN || st == PGRES_COPY_OUT || st == PGRES_COPY_BOTH) {
            /* the server now waits for (or sends) COPY's data, which nobody reads:
             * ending the connection is what ends the COPY */
            pq->clear(r);
            close_conn(c);
            finish_wait(c, NULL, 1);
            return;
        }
        if (st == PGRES_SINGLE_TUPLE) {
            /* a row: kept compact (or counted) unless an error came first */
            if (!c->result || pq->resultStatus(c->result) != PGRES_FATAL_ERROR)
                pg_rows_add(&c->rows, pq, r);
            pq->clear(r);
            continue;
        }
        /* the first error stands; otherwise the last result */
        if (!c->result) {
            c->result = r;
        } else if (pq->resultStatus(c->result) == PGRES_FATAL_ERROR) {
            pq->clear(r);
        } else {
            pq->clear(c->result);
            c->result = r;
        }
    }
    watch(c, EV_READ);
}

/* LISTEN: a task waits on a connection for its notifications, which libpq keeps as
 * they come (with a statement's results too) until PQnotifies hands them over. */

/* Pushes a list of the payloads of the notifications libpq kept (freeing each),
 * oldest first; an empty list when there were none. */
static int push_notifications(lua_State *L, void *data)
{
    struct pg_conn *c = data;
    lua_newtable(L);
    if (!c->conn)
        return 1;
    PGnotify *n = c->first;
    c->first = NULL;
    for (int i = 1; n || (n = c->pq->notifies(c->conn)); i++) {
        lua_pushstring(L, n->extra);
        c->pq->freemem(n);
        lua_rawseti(L, -2, i);
        n = NULL;
    }
    return 1;
}

static const struct vm_pusher notifications_pusher = { push_notifications, push_too_big };

/* Ends the LISTEN wait under way with the notifications kept (none at its deadline
 * or a signal), or with a connection's failure (error: the connection is closed). */
static void end_listening(struct pg_conn *c, const char *error)
{
    struct vm_waiter *w = c->w;
    struct vm *h = c->h;
    c->listening = 0;
    c->w = NULL;
    stop_io(c);
    if (error) {
        struct outcome o = { 0, c->pq, NULL, &c->rows, error, 0 };
        double ticket = w->ticket;
        vm_waiter_drop(w);
        if (!h->closing && !h->finished)
            vm_resume_with(h, ticket, &outcome_pusher, &o, 0);
        close_conn(c);
        return;
    }
    double ticket = w->ticket;
    vm_waiter_drop(w);
    if (!h->closing && !h->finished)
        vm_resume_with(h, ticket, &notifications_pusher, c, 0);
}

/* Reads what came on a connection a task listens on: ends the wait once a
 * notification is kept, or the connection failed. */
static void read_notifications(struct pg_conn *c)
{
    const struct pg_api *pq = c->pq;
    if (!pq->consumeInput(c->conn)) {
        end_listening(c, pq->errorMessage(c->conn));
        return;
    }
    PGnotify *n = pq->notifies(c->conn);
    if (!n)
        return;
    /* handed over first by push_notifications: libpq keeps the rest in order */
    c->first = n;
    end_listening(c, NULL);
}

static void on_io(struct ev_loop *loop, ev_io *io, int revents)
{
    (void)loop;
    (void)revents;
    struct pg_conn *c = io->data;
    const struct pg_api *pq = c->pq;
    if (c->listening) {
        read_notifications(c);
        return;
    }
    if (c->connecting) {
        switch (pq->connectPoll(c->conn)) {
        case PGRES_POLLING_READING:
            watch(c, EV_READ);
            return;
        case PGRES_POLLING_WRITING:
            watch(c, EV_WRITE);
            return;
        case PGRES_POLLING_OK:
            pq->setnonblocking(c->conn, 1);
            finish_wait(c, NULL, 0);
            return;
        default:
            finish_wait(c, pq->errorMessage(c->conn), 0);
            return;
        }
    }
    int f = pq->flush(c->conn);
    if (f < 0) {
        finish_wait(c, pq->errorMessage(c->conn), 0);
        return;
    }
    if (f > 0) {
        watch(c, EV_READ | EV_WRITE);
        if (!(revents & EV_READ))
            return;
    }
    read_results(c);
}

/* A task waiting on c was abandoned: the connection ends with it (the server ends
 * its statement when it sees the connection go). */
static void cancel_wait(struct vm_waiter *w)
{
    struct pg_conn *c = w->data;
    c->w = NULL;
    vm_waiter_drop(w);
    close_conn(c);
}

/* Starts a wait of the calling task on c; yields. */
static int wait_on(lua_State *L, struct pg_conn *c, int events)
{
    struct vm_waiter *w = vm_waiter_start(L, c->h, c, cancel_wait);
    c->w = w;
    watch(c, events);
    return vm_yield(L, w->ticket);
}

/* The server's NOTICEs and WARNINGs (RAISE NOTICE...) are dropped, as PDO drops
 * them: server text never reaches the worker's log unasked. */
static void drop_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* host.pg_open{keyword = value, ...} -> connection | (false, message): starts a
 * connection with libpq's keywords (host, port, dbname, user, password, sslmode,
 * ...); host.pg_connected waits for it. */
static int l_host_pg_open(lua_State *L)
{
    struct vm *h = vm_of(L);
    luaL_checktype(L, 1, LUA_TTABLE);
    char err[300];
    const struct pg_api *pq = pg_api_get(err, sizeof err);
    if (!pq)
        return vm_push_error(L, err, "connection");
    const char *keys[32], *values[32];
    int n = 0;
    lua_pushnil(L);
    while (lua_next(L, 1)) {
        if (n == 31)
            return luaL_error(L, "too many connection settings");
        keys[n] = luaL_checkstring(L, -2);
        values[n] = luaL_checkstring(L, -1);
        n++;
        lua_pop(L, 1);  /* the table keeps both strings */
    }
    keys[n] = values[n] = NULL;
    struct pg_conn *c = calloc(1, sizeof *c);
    if (!c)
        return luaL_error(L, "out of memory");
    c->h = h;
    c->pq = pq;
    ev_init(&c->io, on_io);
    c->io.data = c;
    vm_push_handle(L, PG_META, c);
    c->conn = pq->connectStartParams(keys, values, 0);
    if (!c->conn || pq->status(c->conn) == CONNECTION_BAD) {
        vm_push_error(L, c->conn ? pq->errorMessage(c->conn) : "out of memory", "connection");
        close_conn(c);
        return 3;
    }
    pq->setNoticeProcessor(c->conn, drop_notice, NULL);
    c->connecting = 1;
    return 1;
}

/* host.pg_connected(connection) -> true | (false, message, "connection"): waits
 * until the connection host.pg_open started is set up. Yields. */
/* A server that does not answer a connection's set-up within this many seconds
 * is taken for down (libpq's own connect_timeout does not apply to an
 * asynchronous connect). */
#define CONNECT_TIMEOUT 10

static void connect_timed_out(struct vm_waiter *w)
{
    struct pg_conn *c = w->data;
    close_conn(c);
    finish_wait(c, "timeout expired: the server did not answer within 10 seconds", 0);
}

static int l_host_pg_connected(lua_State *L)
{
    vm_check_wait(L);
    struct pg_conn *c = vm_handle(L, 1, PG_META);
    if (!c->conn || !c->connecting)
        return luaL_error(L, "the connection is not being set up");
    lua_settop(L, 1);  /* keeps the connection alive while the task waits */
    struct vm_waiter *w = vm_waiter_start(L, c->h, c, cancel_wait);
    c->w = w;
    vm_waiter_deadline(w, CONNECT_TIMEOUT, connect_timed_out);
    watch(c, EV_WRITE);
    return vm_yield(L, w->ticket);
}

/* host.pg_query(connection, sql, n, param1..paramN) -> as push_outcome. A param is
 * a string, or false for NULL. Yields until the statement's end. */
static int l_host_pg_query(lua_State *L)
{
    vm_check_wait(L);
    struct pg_conn *c = vm_handle(L, 1, PG_META);
    const char *sql = luaL_checkstring(L, 2);
    int n = (int)luaL_checkinteger(L, 3);
    if (n < 0 || n > MAX_PARAMS)
        return luaL_error(L, "too many bindings (%d, at most %d)", n, MAX_PARAMS);
    if (!c->conn)
        return luaL_error(L, "the connection is closed");
    if (c->w)
        return luaL_error(L, "the connection is busy with another statement");
    const char **params = n ? malloc((size_t)n * sizeof *params) : NULL;
    if (n && !params)
        return luaL_error(L, "out of memory");
    for (int i = 0; i < n; i++)
        params[i] = lua_toboolean(L, 4 + i) ? luaL_checkstring(L, 4 + i) : NULL;
    int sent = c->pq->sendQueryParams(c->conn, sql, n, NULL, params, NULL, NULL, 0);
    free(params);
    if (!sent)
        return vm_push_error(L, c->pq->errorMessage(c->conn), "connection");
    /* rows one at a time, each freed by libpq once kept (pg_rows): a result over
     * --memory-limit is counted, never held whole */
    c->pq->setSingleRowMode(c->conn);
    pg_rows_start(&c->rows, c->h->heap_limit);
    lua_settop(L, 1);  /* keeps the connection alive while the task waits */
    return wait_on(L, c, EV_READ | EV_WRITE);
}

static void listening_ended(struct vm_waiter *w)
{
    end_listening(w->data, NULL);
}

/* host.pg_notified(connection, seconds) -> {payload...} | (false, message,
 * "connection"): the payloads of the notifications of the channels the connection
 * LISTENs to, oldest first, once at least one came; an empty list when seconds
 * passed first or a signal (stop, CONT, HUP) ended the wait. Yields unless some
 * had come already. A failed connection is closed. */
static int l_host_pg_notified(lua_State *L)
{
    vm_check_wait(L);
    struct pg_conn *c = vm_handle(L, 1, PG_META);
    double seconds = luaL_checknumber(L, 2);
    if (!c->conn)
        return luaL_error(L, "the connection is closed");
    if (c->w)
        return luaL_error(L, "the connection is busy with another statement");
    lua_settop(L, 1);  /* keeps the connection alive while the task waits */
    if (!c->pq->consumeInput(c->conn)) {
        vm_push_error(L, c->pq->errorMessage(c->conn), "connection");
        close_conn(c);
        return 3;
    }
    if ((c->first = c->pq->notifies(c->conn)) || !(seconds > 0))
        return push_notifications(L, c);
    struct vm_waiter *w = vm_waiter_start(L, c->h, c, cancel_wait);
    c->w = w;
    c->listening = 1;
    w->wakeable = 1;
    vm_waiter_deadline(w, seconds, listening_ended);
    watch(c, EV_READ);
    return vm_yield(L, w->ticket);
}

/* host.pg_close(connection): ends it (again is harmless). */
static int l_host_pg_close(lua_State *L)
{
    close_conn(vm_handle(L, 1, PG_META));
    return 0;
}

/* host.pg_alive(connection) -> whether it is open and fine. */
static int l_host_pg_alive(lua_State *L)
{
    struct pg_conn *c = vm_handle(L, 1, PG_META);
    lua_pushboolean(L, c->conn && c->pq->status(c->conn) == CONNECTION_OK);
    return 1;
}

/* host.pg_in_transaction(connection) -> whether a transaction is open on it (or a
 * statement under way); false once closed. */
static int l_host_pg_in_transaction(lua_State *L)
{
    struct pg_conn *c = vm_handle(L, 1, PG_META);
    lua_pushboolean(L, c->conn && c->pq->transactionStatus(c->conn) != PQTRANS_IDLE
                           && c->pq->transactionStatus(c->conn) != PQTRANS_UNKNOWN);
    return 1;
}

/* host.pg_backend_pid(connection) -> the server's process of the connection (for
 * pg_terminate_backend), 0 once closed. */
static int l_host_pg_backend_pid(lua_State *L)
{
    struct pg_conn *c = vm_handle(L, 1, PG_META);
    lua_pushinteger(L, c->conn ? c->pq->backendPID(c->conn) : 0);
    return 1;
}

static int pg_gc(lua_State *L)
{
    struct pg_conn *c = vm_take_handle(L, 1, PG_META);
    if (c) {
        if (c->w)
            vm_waiter_drop(c->w);  /* the task waiting on it was abandoned */
        close_conn(c);
        free(c);
    }
    return 0;
}

static const luaL_Reg functions[] = {
    {"pg_open", l_host_pg_open},
    {"pg_connected", l_host_pg_connected},
    {"pg_query", l_host_pg_query},
    {"pg_close", l_host_pg_close},
    {"pg_alive", l_host_pg_alive},
    {"pg_backend_pid", l_host_pg_backend_pid},
    {"pg_in_transaction", l_host_pg_in_transaction},
    {"pg_notified", l_host_pg_notified},
    {NULL, NULL},
};

void pg_binding_register(struct vm *h)
{
    vm_add_type(h, PG_META, pg_gc);
    vm_add_functions(h, functions);
}
