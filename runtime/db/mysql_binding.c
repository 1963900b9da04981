#include "db/mysql_binding.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/mysql_api.h"
#include "db/mysql_values.h"
#include "loop/vm.h"

#define MYSQL_META "luaworker.mysql"
#define MAX_PARAMS 65535            /* the protocol's own limit on placeholders */
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
static const char *const setting_names[SETTINGS] = {
    "host", "user", "password", "database", "socket", "charset", "init", "ssl_ca", "port"
};

static void stop_io(struct my_conn *c)
{
    ev_io_stop(c->h->loop, &c->io);
}

static void forget_settings(struct my_conn *c)
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
static void end_statement(struct my_conn *c)
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

static void close_conn(struct my_conn *c)
{
    if (!c->mysql)
        return;
    stop_io(c);
    if (c->step != STEP_NONE)
        c->my->cancel(c->mysql);  /* an operation under way: its reads and writes fail */
    end_statement(c);
    drop_first_result(c);
    c->my->close(c->mysql);
    c->mysql = NULL;
    c->step = STEP_NONE;
    forget_settings(c);
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
    stop_io(c);
    end_statement(c);
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
        forget_settings(c);
    if (w) {
        double ticket = w->ticket;
        vm_waiter_unlink(w);
        vm_waiter_give(w);
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
static void proceed(struct my_conn *c, int st)
{
    if (!st) {
        advance(c);
        return;
    }
    int events = (st & MYSQL_WAIT_READ ? EV_READ : 0) | (st & MYSQL_WAIT_WRITE ? EV_WRITE : 0);
    stop_io(c);
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
        proceed(c, my->stmt_next_result_start(&c->ret.i, c->stmt));
    } else if (!c->stmt && my->more_results(c->mysql)) {
        c->step = STEP_NEXT;
        proceed(c, my->next_result_start(&c->ret.i, c->mysql));
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
            proceed(c, my->store_result_start(&c->ret.res, c->mysql));
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
            proceed(c, my->stmt_execute_start(&c->ret.i, c->stmt));
        }
        return;
    case STEP_EXECUTE:
    case STEP_STMT_NEXT:
        if (c->ret.i > 0 || (c->step == STEP_EXECUTE && c->ret.i)) {
            fail_statement(c);
        } else if (c->ret.i == 0 && my->stmt_field_count(c->stmt)) {
            c->step = c->step == STEP_EXECUTE ? STEP_STMT_STORE : STEP_STMT_NEXT_STORE;
            proceed(c, my->stmt_store_result_start(&c->ret.i, c->stmt));
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

static void on_io(struct ev_loop *loop, ev_io *io, int revents)
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
    proceed(c, cont(c, status));
}

static struct my_conn *check_conn(lua_State *L, int idx)
{
    struct my_conn **p = luaL_checkudata(L, idx, MYSQL_META);
    return *p;
}

/* A task waiting on c was abandoned: the connection ends with it (the caller asks
 * the server to end the statement: it does not notice a client gone). */
static void cancel_wait(struct vm_waiter *w)
{
    struct my_conn *c = w->data;
    c->w = NULL;
    vm_waiter_unlink(w);
    vm_waiter_give(w);
    close_conn(c);
}

/* Makes the calling task wait for the step started with st (its _start's result);
 * yields. A step that already ended is advanced at the loop's next turn. */
static int wait_for(lua_State *L, struct my_conn *c, int st)
{
    struct vm_waiter *w = vm_waiter_take(c->h);
    if (!w) {
        close_conn(c);
        return luaL_error(L, "out of memory");
    }
    w->data = c;
    w->cancel = cancel_wait;
    vm_waiter_link(w);
    c->w = w;
    if (st) {
        proceed(c, st);
    } else {
        c->ready = 1;
        ev_feed_event(c->h->loop, &c->io, EV_CUSTOM);
    }
    return vm_yield(L, w->ticket);
}

/* host.mysql_open{host=, port=, user=, password=, database=, socket=, charset=,
 * init= (a statement run at each connect), ssl_ca=} -> connection | (false, message):
 * prepares a connection; host.mysql_connected sets it up. */
static int l_host_mysql_open(lua_State *L)
{
    struct vm *h = vm_of(L);
    luaL_checktype(L, 1, LUA_TTABLE);
    char err[300];
    const struct mysql_api *my = mysql_api_get(err, sizeof err);
    if (!my) {
        lua_pushboolean(L, 0);
        lua_pushstring(L, err);
        return 2;
    }
    struct my_conn *c = calloc(1, sizeof *c);
    if (!c)
        return luaL_error(L, "out of memory");
    c->h = h;
    c->my = my;
    ev_init(&c->io, on_io);
    c->io.data = c;
    struct my_conn **p = lua_newuserdata(L, sizeof *p);
    *p = c;
    luaL_getmetatable(L, MYSQL_META);
    lua_setmetatable(L, -2);
    for (int i = 0; i < SETTINGS; i++) {
        lua_getfield(L, 1, setting_names[i]);
        const char *v = lua_tostring(L, -1);
        if (v && *v && !(c->settings[i] = strdup(v)))
            return luaL_error(L, "out of memory");
        lua_pop(L, 1);
    }
    c->mysql = my->init(NULL);
    if (!c->mysql)
        return luaL_error(L, "out of memory");
    my->options(c->mysql, MYSQL_OPT_NONBLOCK, 0);
    if (c->settings[SETTING_CHARSET])
        my->options(c->mysql, MYSQL_SET_CHARSET_NAME, c->settings[SETTING_CHARSET]);
    if (c->settings[SETTING_INIT])
        my->options(c->mysql, MYSQL_INIT_COMMAND, c->settings[SETTING_INIT]);
    if (c->settings[SETTING_SSL_CA])
        my->options(c->mysql, MYSQL_OPT_SSL_CA, c->settings[SETTING_SSL_CA]);
    return 1;
}

/* host.mysql_connected(connection) -> true | (false, message, sqlstate, "connection",
 * errno): sets up the connection host.mysql_open prepared. Yields. */
static int l_host_mysql_connected(lua_State *L)
{
    vm_check_wait(L);
    struct my_conn *c = check_conn(L, 1);
    if (!c->mysql || c->step != STEP_NONE || c->broken)
        return luaL_error(L, "the connection is not to be set up");
    char **s = c->settings;
    unsigned int port = s[SETTING_PORT] ? (unsigned int)strtoul(s[SETTING_PORT], NULL, 10) : 0;
    c->step = STEP_CONNECT;
    lua_settop(L, 1);  /* keeps the connection alive while the task waits */
    return wait_for(L, c,
                    c->my->real_connect_start(&c->ret.mysql, c->mysql, s[SETTING_HOST],
                                              s[SETTING_USER], s[SETTING_PASSWORD],
                                              s[SETTING_DATABASE], port, s[SETTING_SOCKET],
                                              CLIENT_MULTI_RESULTS));
}

/* host.mysql_query(connection, sql, n, binding1..bindingN) -> as push_outcome.
 * Without bindings the statement goes as text (any statement MySQL runs); with
 * bindings it is prepared and executed with them (the `?` are the server's), then
 * closed. Yields until the statement's end. */
static int l_host_mysql_query(lua_State *L)
{
    vm_check_wait(L);
    struct my_conn *c = check_conn(L, 1);
    size_t len;
    const char *sql = luaL_checklstring(L, 2, &len);
    lua_Integer n = luaL_checkinteger(L, 3);
    if (n < 0 || n > MAX_PARAMS)
        return luaL_error(L, "too many bindings (%d, at most %d)", (int)n, MAX_PARAMS);
    if (!c->mysql || c->broken)
        return luaL_error(L, "the connection is closed");
    if (c->step != STEP_NONE)
        return luaL_error(L, "the connection is busy with another statement");
    const struct mysql_api *my = c->my;
    if (n == 0) {
        c->step = STEP_QUERY;
        lua_settop(L, 2);  /* the text stays while the statement is sent */
        return wait_for(L, c, my->real_query_start(&c->ret.i, c->mysql, sql, (unsigned long)len));
    }
    c->params = mysql_values_bind(L, 4, (unsigned long)n);
    c->nparams = (unsigned long)n;
    c->stmt = c->params ? my->stmt_init(c->mysql) : NULL;
    if (!c->stmt) {
        end_statement(c);
        return luaL_error(L, "out of memory");
    }
    c->step = STEP_PREPARE;
    lua_settop(L, 2);  /* the text stays while the statement is prepared */
    return wait_for(L, c, my->stmt_prepare_start(&c->ret.i, c->stmt, sql, (unsigned long)len));
}

/* host.mysql_close(connection): ends it (again is harmless). */
static int l_host_mysql_close(lua_State *L)
{
    close_conn(check_conn(L, 1));
    return 0;
}

/* host.mysql_alive(connection) -> whether it is open and no failure was seen on it. */
static int l_host_mysql_alive(lua_State *L)
{
    struct my_conn *c = check_conn(L, 1);
    lua_pushboolean(L, c->mysql && !c->broken && c->step == STEP_NONE);
    return 1;
}

/* host.mysql_thread_id(connection) -> the server's id of the connection (for KILL). */
static int l_host_mysql_thread_id(lua_State *L)
{
    struct my_conn *c = check_conn(L, 1);
    lua_pushnumber(L, c->mysql ? (double)c->my->thread_id(c->mysql) : 0);
    return 1;
}

static int mysql_gc(lua_State *L)
{
    struct my_conn **p = luaL_checkudata(L, 1, MYSQL_META);
    if (*p) {
        if ((*p)->w) {
            /* collected while waited on: only at the state's close */
            vm_waiter_unlink((*p)->w);
            vm_waiter_give((*p)->w);
        }
        close_conn(*p);
        forget_settings(*p);
        free(*p);
        *p = NULL;
    }
    return 0;
}

static void register_metatable(lua_State *L)
{
    luaL_newmetatable(L, MYSQL_META);
    lua_pushcfunction(L, mysql_gc);
    lua_setfield(L, -2, "__gc");
    lua_pop(L, 1);
}

static const luaL_Reg functions[] = {
    {"mysql_open", l_host_mysql_open},
    {"mysql_connected", l_host_mysql_connected},
    {"mysql_query", l_host_mysql_query},
    {"mysql_close", l_host_mysql_close},
    {"mysql_alive", l_host_mysql_alive},
    {"mysql_thread_id", l_host_mysql_thread_id},
    {NULL, NULL},
};

void mysql_binding_register(struct vm *h)
{
    register_metatable(h->L);
    vm_add_functions(h, functions);
}
