#include "db/mysql_conn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/mysql_values.h"

void mysql_conn_stop_io(struct my_conn *c)
{
    ev_io_stop(c->h->loop, &c->io);
}

void mysql_conn_forget_settings(struct my_conn *c)
{
    for (int i = 0; i < SETTINGS; i++) {
        if (c->settings[i]) {
            /* the password does not outlive the set-up in this process's memory */
            explicit_bzero(c->settings[i], strlen(c->settings[i]));
            free(c->settings[i]);
            c->settings[i] = NULL;
        }
    }
}

/* Ends the prepared statement under way (a short write: the server does not answer). */
void mysql_conn_end_statement(struct my_conn *c)
{
    if (c->stmt)
        c->my->stmt_close(c->stmt);
    c->stmt = NULL;
    free(c->params);
    c->params = NULL;
    c->nparams = 0;
}

/* Lets go of values kept at *ref (none is left at a state's close: its registry
 * goes with it). */
static void release_kept(struct vm *h, int *ref)
{
    if (*ref && !h->closing)
        luaL_unref(h->L, LUA_REGISTRYINDEX, *ref);
    *ref = 0;
}

/* Lets go of the first result held while further results were drained. */
static void drop_first_result(struct my_conn *c)
{
    if (c->res)
        c->my->free_result(c->res);
    c->res = NULL;
    release_kept(c->h, &c->kept);
}

void mysql_conn_close(struct my_conn *c)
{
    if (!c->mysql)
        return;
    mysql_conn_stop_io(c);
    if (c->step != STEP_NONE)
        c->my->cancel(c->mysql);  /* an operation under way: its reads and writes fail */
    mysql_conn_end_statement(c);
    drop_first_result(c);
    c->my->close(c->mysql);
    c->mysql = NULL;
    c->step = STEP_NONE;
    mysql_conn_forget_settings(c);
}

void mysql_conn_free(struct my_conn *c)
{
    if (!c)
        return;
    if (c->w)
        vm_waiter_drop(c->w);
    mysql_conn_close(c);
    mysql_conn_forget_settings(c);
    free(c);
}

/* What a finished wait hands the task: mysql_values_push_outcome's values. */
static int push_outcome(lua_State *L, void *data)
{
    return mysql_values_push_outcome(L, data);
}

static const struct vm_pusher outcome_pusher = { push_outcome, mysql_values_push_too_big };

/* Client errors (CR_*, 2000-2999) and the server's "connection killed / shutting
 * down" mean the connection cannot go on. */
static int is_connection_error(unsigned int e)
{
    return (e >= 2000 && e < 3000) || e == 1053 || e == 1927 || e == 4031;
}

static void note_error(struct my_conn *c, struct mysql_outcome *o, unsigned int e,
                       const char *message, const char *sqlstate)
{
    o->error = e ? e : 2000;
    snprintf(o->message, sizeof o->message, "%s", message && *message ? message : "unknown error");
    snprintf(o->sqlstate, sizeof o->sqlstate, "%s", sqlstate && *sqlstate ? sqlstate : "HY000");
    if (c->step == STEP_CONNECT || is_connection_error(o->error)) {
        o->connection_failed = 1;
        c->broken = 1;
    }
}

/* Ends the wait under way, resuming its task with o (an error), or with the
 * statement's first result when o has no error. The prepared statement is closed
 * before the task runs on: its close is a write on the connection the task may use
 * next. */
static void finish(struct my_conn *c, struct mysql_outcome *o)
{
    struct vm_waiter *w = c->w;
    struct vm *h = c->h;
    c->w = NULL;
    c->step = STEP_NONE;
    mysql_conn_stop_io(c);
    mysql_conn_end_statement(c);
    if (o->error) {
        drop_first_result(c);
    } else if (!o->connected) {
        o->res = c->res;
        o->kept = c->kept;
        o->affected = c->affected;
        c->res = NULL;
        c->kept = 0;
    }
    if (o->connected)
        mysql_conn_forget_settings(c);
    if (w) {
        double ticket = w->ticket;
        vm_waiter_drop(w);
        if (!h->closing && !h->finished)
            vm_resume_with(h, ticket, &outcome_pusher, o, 0);  /* c may be gone after it */
    }
    if (o->res)
        o->my->free_result(o->res);
    release_kept(h, &o->kept);
}

static void fail_conn(struct my_conn *c)
{
    struct mysql_outcome o = { .my = c->my, .connected = c->step == STEP_CONNECT };
    note_error(c, &o, c->my->err_no(c->mysql), c->my->error(c->mysql), c->my->sqlstate(c->mysql));
    finish(c, &o);
}

static void fail_statement(struct my_conn *c)
{
    struct mysql_outcome o = { .my = c->my };
    note_error(c, &o, c->my->stmt_errno(c->stmt), c->my->stmt_error(c->stmt),
               c->my->stmt_sqlstate(c->stmt));
    finish(c, &o);
}

static void advance(struct my_conn *c);

/* Goes on after a _start or _cont returned st: waits for the socket, or advances. */
/* Steps that end at once advance within the call that started them; past this
 * many nested in one another (a CALL's results already read, thousands of them),
 * the next one advances at the loop's next turn instead, so that the C stack does
 * not grow with the count of results. */
#define MAX_NESTED_STEPS 32

void mysql_conn_proceed(struct my_conn *c, int st)
{
    static int nested;  /* steps advancing now, one within another */
    if (!st) {
        if (nested >= MAX_NESTED_STEPS) {
            c->ready = 1;
            ev_feed_event(c->h->loop, &c->io, EV_CUSTOM);
            return;
        }
        nested++;
        advance(c);  /* c may be gone after it (its task resumed) */
        nested--;
        return;
    }
    int events = (st & MYSQL_WAIT_READ ? EV_READ : 0) | (st & MYSQL_WAIT_WRITE ? EV_WRITE : 0);
    mysql_conn_stop_io(c);
    ev_io_set(&c->io, c->my->get_socket(c->mysql), events ? events : EV_READ);
    ev_io_start(c->h->loop, &c->io);
}

/* Binds the statement's parameters once it is prepared. Returns 0, or -1 with o set. */
static int bind_params(struct my_conn *c, struct mysql_outcome *o)
{
    unsigned long expected = c->my->stmt_param_count(c->stmt);
    if (expected != c->nparams) {
        o->error = 2034;  /* CR_INVALID_PARAMETER_NO */
        snprintf(o->sqlstate, sizeof o->sqlstate, "HY093");
        snprintf(o->message, sizeof o->message,
                 "Invalid parameter number: the statement has %lu placeholders, %lu bindings given",
                 expected, c->nparams);
        return -1;
    }
    if (c->nparams && c->my->stmt_bind_param(c->stmt, c->params)) {
        note_error(c, o, c->my->stmt_errno(c->stmt), c->my->stmt_error(c->stmt),
                   c->my->stmt_sqlstate(c->stmt));
        return -1;
    }
    return 0;
}

/* What keep_rows hands Lua: the stored rows of c's prepared statement. */
struct statement_rows {
    struct my_conn *c;
    MYSQL_RES *meta;                /* the statement's result metadata */
};

static int push_statement_rows(lua_State *L, void *data)
{
    struct statement_rows *r = data;
    return mysql_values_push_statement_outcome(L, r->c->my, r->c->stmt, r->meta, r->c->affected);
}

static int keep_values(lua_State *L, int count, void *data)
{
    struct statement_rows *r = data;
    r->c->kept = mysql_values_keep(L, count);
    return 0;
}

static const struct vm_pusher statement_rows_pusher = { push_statement_rows,
                                                          mysql_values_push_too_big };

/* The prepared statement's first result is stored: its values are made now and
 * kept (a further result would take its rows' place, and the statement is closed
 * before its task runs on). Returns 0; or -1 after ending the wait with an error. */
static int keep_rows(struct my_conn *c)
{
    struct mysql_outcome o = { .my = c->my, .error = 2008 };  /* CR_OUT_OF_MEMORY */
    snprintf(o.sqlstate, sizeof o.sqlstate, "HY000");
    struct statement_rows r = { c, c->my->stmt_result_metadata(c->stmt) };
    if (!r.meta) {
        snprintf(o.message, sizeof o.message, "out of memory");
        finish(c, &o);
        return -1;
    }
    struct vm *h = c->h;
    int failed = !h->closing && !h->finished &&
                 vm_keep_result(h, &statement_rows_pusher, &r, 0, keep_values) != 0;
    c->my->free_result(r.meta);
    if (failed) {
        snprintf(o.message, sizeof o.message, "the result could not be handed to Lua");
        vm_fail(h, "cannot keep a result for Lua");
        finish(c, &o);
        return -1;
    }
    return 0;
}

/* The statement's first result is held (c->res or c->kept, c->affected): reads the
 * next further result, or ends the wait when there is none. */
static void next_result(struct my_conn *c)
{
    const struct mysql_api *my = c->my;
    if (c->stmt && my->stmt_more_results(c->stmt)) {
        c->step = STEP_STMT_NEXT;
        mysql_conn_proceed(c, my->stmt_next_result_start(&c->ret.i, c->stmt));
    } else if (!c->stmt && my->more_results(c->mysql)) {
        c->step = STEP_NEXT;
        mysql_conn_proceed(c, my->next_result_start(&c->ret.i, c->mysql));
    } else {
        struct mysql_outcome o = { .my = my };
        finish(c, &o);
    }
}

/* The step under way ended: checks its result and starts the next, or ends the wait.
 * A failure at any result (a later one of a CALL too) is the statement's. */
static void advance(struct my_conn *c)
{
    const struct mysql_api *my = c->my;
    struct mysql_outcome o = { .my = my };
    switch (c->step) {
    case STEP_CONNECT:
        if (!c->ret.mysql) {
            fail_conn(c);
            return;
        }
        o.connected = 1;
        finish(c, &o);
        return;
    case STEP_QUERY:
    case STEP_NEXT:
        if (c->ret.i > 0 || (c->step == STEP_QUERY && c->ret.i)) {
            fail_conn(c);
        } else if (c->ret.i == 0 && my->field_count(c->mysql)) {
            c->step = c->step == STEP_QUERY ? STEP_STORE : STEP_NEXT_STORE;
            mysql_conn_proceed(c, my->store_result_start(&c->ret.res, c->mysql));
        } else {
            if (c->step == STEP_QUERY)
                c->affected = (double)my->affected_rows(c->mysql);
            next_result(c);
        }
        return;
    case STEP_STORE:
    case STEP_NEXT_STORE:
        if (!c->ret.res) {
            fail_conn(c);
        } else if (c->step == STEP_STORE) {
            c->res = c->ret.res;  /* the rows handed to the task */
            c->affected = (double)my->affected_rows(c->mysql);
            next_result(c);
        } else {
            my->free_result(c->ret.res);  /* a further result's rows: read, then dropped */
            next_result(c);
        }
        return;
    case STEP_PREPARE:
        if (c->ret.i) {
            fail_statement(c);
        } else if (bind_params(c, &o)) {
            finish(c, &o);
        } else {
            c->step = STEP_EXECUTE;
            mysql_conn_proceed(c, my->stmt_execute_start(&c->ret.i, c->stmt));
        }
        return;
    case STEP_EXECUTE:
    case STEP_STMT_NEXT:
        if (c->ret.i > 0 || (c->step == STEP_EXECUTE && c->ret.i)) {
            fail_statement(c);
        } else if (c->ret.i == 0 && my->stmt_field_count(c->stmt)) {
            c->step = c->step == STEP_EXECUTE ? STEP_STMT_STORE : STEP_STMT_NEXT_STORE;
            mysql_conn_proceed(c, my->stmt_store_result_start(&c->ret.i, c->stmt));
        } else {
            if (c->step == STEP_EXECUTE)
                c->affected = (double)my->stmt_affected_rows(c->stmt);
            next_result(c);
        }
        return;
    case STEP_STMT_STORE:
    case STEP_STMT_NEXT_STORE:
        if (c->ret.i) {
            fail_statement(c);
            return;
        }
        if (c->step == STEP_STMT_STORE) {
            c->affected = (double)my->stmt_affected_rows(c->stmt);
            if (keep_rows(c))
                return;
        }
        next_result(c);  /* a further result's rows are dropped by the next */
        return;
    case STEP_NONE:
        return;
    }
}

/* Continues the step under way with what the socket is ready for. */
static int cont(struct my_conn *c, int status)
{
    const struct mysql_api *my = c->my;
    switch (c->step) {
    case STEP_CONNECT:
        return my->real_connect_cont(&c->ret.mysql, c->mysql, status);
    case STEP_QUERY:
        return my->real_query_cont(&c->ret.i, c->mysql, status);
    case STEP_STORE:
    case STEP_NEXT_STORE:
        return my->store_result_cont(&c->ret.res, c->mysql, status);
    case STEP_NEXT:
        return my->next_result_cont(&c->ret.i, c->mysql, status);
    case STEP_PREPARE:
        return my->stmt_prepare_cont(&c->ret.i, c->stmt, status);
    case STEP_EXECUTE:
        return my->stmt_execute_cont(&c->ret.i, c->stmt, status);
    case STEP_STMT_STORE:
    case STEP_STMT_NEXT_STORE:
        return my->stmt_store_result_cont(&c->ret.i, c->stmt, status);
    case STEP_STMT_NEXT:
        return my->stmt_next_result_cont(&c->ret.i, c->stmt, status);
    case STEP_NONE:
        break;
    }
    return 0;
}

void mysql_conn_on_io(struct ev_loop *loop, ev_io *io, int revents)
{
    (void)loop;
    struct my_conn *c = io->data;
    if (c->ready) {
        c->ready = 0;
        advance(c);
        return;
    }
    int status = (revents & EV_READ ? MYSQL_WAIT_READ : 0) |
                 (revents & EV_WRITE ? MYSQL_WAIT_WRITE : 0);
    mysql_conn_proceed(c, cont(c, status));
}

void mysql_conn_timed_out(struct my_conn *c)
{
    struct mysql_outcome o = { .my = c->my, .connected = 1 };
    note_error(c, &o, 2013, "Lost connection to server at 'handshake': the server did not answer "
               "within 10 seconds", "HY000");
    mysql_conn_close(c);
    finish(c, &o);
}
