#include "db/mysql_binding.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/mysql_api.h"
#include "db/mysql_conn.h"
#include "db/mysql_values.h"
#include "loop/vm.h"

#define MYSQL_META "luaworker.mysql"
#define MAX_PARAMS 65535            /* the protocol's own limit on placeholders */

static const char *const setting_names[SETTINGS] = {
    "host", "user", "password", "database", "socket", "charset", "init", "ssl_ca", "port"
};

/* A server that does not answer a connection's set-up within this many seconds is
 * taken for down. */
#define CONNECT_TIMEOUT 10

/* A task waiting on c was abandoned: the connection ends with it (the caller asks
 * the server to end the statement: it does not notice a client gone). */
static void cancel_wait(struct vm_waiter *w)
{
    struct my_conn *c = w->data;
    c->w = NULL;
    vm_waiter_drop(w);
    mysql_conn_close(c);
}

/* Makes the calling task wait for the step started with st (its _start's result);
 * yields. A step that already ended is advanced at the loop's next turn. */
static void connect_timed_out(struct vm_waiter *w)
{
    mysql_conn_timed_out(w->data);
}

static int wait_for(lua_State *L, struct my_conn *c, double deadline, int st)
{
    struct vm_waiter *w = vm_waiter_take(c->h);
    if (!w) {
        mysql_conn_close(c);  /* its step under way has no one to end it */
        return luaL_error(L, "out of memory");
    }
    w->data = c;
    w->cancel = cancel_wait;
    vm_waiter_link(w);
    if (deadline > 0)
        vm_waiter_deadline(w, deadline, connect_timed_out);
    c->w = w;
    if (st) {
        mysql_conn_proceed(c, st);
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
    if (!my)
        return vm_push_error(L, err, "connection");
    struct my_conn *c = calloc(1, sizeof *c);
    if (!c)
        return luaL_error(L, "out of memory");
    c->h = h;
    c->my = my;
    ev_init(&c->io, mysql_conn_on_io);
    c->io.data = c;
    vm_push_handle(L, MYSQL_META, c);
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
    /* a server may ask for any file the worker can read (LOAD DATA LOCAL INFILE: a
     * rogue server asks in answer to any statement): refused, as PDO and mysqlnd do
     * by default (a NULL argument would turn it on) */
    unsigned int local_infile = 0;
    my->options(c->mysql, MYSQL_OPT_LOCAL_INFILE, &local_infile);
    if (c->settings[SETTING_CHARSET])
        my->options(c->mysql, MYSQL_SET_CHARSET_NAME, c->settings[SETTING_CHARSET]);
    if (c->settings[SETTING_INIT])
        my->options(c->mysql, MYSQL_INIT_COMMAND, c->settings[SETTING_INIT]);
    if (c->settings[SETTING_SSL_CA])
        my->options(c->mysql, MYSQL_OPT_SSL_CA, c->settings[SETTING_SSL_CA]);
    return 1;
}

/* host.mysql_connected(connection) -> true | (false, message, "connection", sqlstate,
 * errno): sets up the connection host.mysql_open prepared. Yields. */
static int l_host_mysql_connected(lua_State *L)
{
    vm_check_wait(L);
    struct my_conn *c = vm_handle(L, 1, MYSQL_META);
    if (!c->mysql || c->step != STEP_NONE || c->broken)
        return luaL_error(L, "the connection is not to be set up");
    char **s = c->settings;
    unsigned int port = s[SETTING_PORT] ? (unsigned int)strtoul(s[SETTING_PORT], NULL, 10) : 0;
    c->step = STEP_CONNECT;
    lua_settop(L, 1);  /* keeps the connection alive while the task waits */
    return wait_for(L, c, CONNECT_TIMEOUT,
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
    struct my_conn *c = vm_handle(L, 1, MYSQL_META);
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
        return wait_for(L, c, 0, my->real_query_start(&c->ret.i, c->mysql, sql, (unsigned long)len));
    }
    c->params = mysql_values_bind(L, 4, (unsigned long)n);
    c->nparams = (unsigned long)n;
    c->stmt = c->params ? my->stmt_init(c->mysql) : NULL;
    if (!c->stmt) {
        mysql_conn_end_statement(c);
        return luaL_error(L, "out of memory");
    }
    c->step = STEP_PREPARE;
    lua_settop(L, 2);  /* the text stays while the statement is prepared */
    return wait_for(L, c, 0, my->stmt_prepare_start(&c->ret.i, c->stmt, sql, (unsigned long)len));
}

/* host.mysql_close(connection): ends it (again is harmless). */
static int l_host_mysql_close(lua_State *L)
{
    mysql_conn_close(vm_handle(L, 1, MYSQL_META));
    return 0;
}

/* host.mysql_alive(connection) -> whether it is open and no failure was seen on it. */
static int l_host_mysql_alive(lua_State *L)
{
    struct my_conn *c = vm_handle(L, 1, MYSQL_META);
    lua_pushboolean(L, c->mysql && !c->broken && c->step == STEP_NONE);
    return 1;
}

/* host.mysql_in_transaction(connection) -> whether the server said a transaction is
 * open on it (SERVER_STATUS_IN_TRANS of its last reply); false once closed. */
static int l_host_mysql_in_transaction(lua_State *L)
{
    struct my_conn *c = vm_handle(L, 1, MYSQL_META);
    lua_pushboolean(L, c->mysql && (c->mysql->server_status & SERVER_STATUS_IN_TRANS));
    return 1;
}

/* host.mysql_thread_id(connection) -> the server's id of the connection (for KILL). */
static int l_host_mysql_thread_id(lua_State *L)
{
    struct my_conn *c = vm_handle(L, 1, MYSQL_META);
    lua_pushnumber(L, c->mysql ? (double)c->my->thread_id(c->mysql) : 0);
    return 1;
}

static int mysql_gc(lua_State *L)
{
    mysql_conn_free(vm_take_handle(L, 1, MYSQL_META));
    return 0;
}

static const luaL_Reg functions[] = {
    {"mysql_open", l_host_mysql_open},
    {"mysql_connected", l_host_mysql_connected},
    {"mysql_query", l_host_mysql_query},
    {"mysql_close", l_host_mysql_close},
    {"mysql_alive", l_host_mysql_alive},
    {"mysql_thread_id", l_host_mysql_thread_id},
    {"mysql_in_transaction", l_host_mysql_in_transaction},
    {NULL, NULL},
};

void mysql_binding_register(struct vm *h)
{
    vm_add_type(h, MYSQL_META, mysql_gc);
    vm_add_functions(h, functions);
}
