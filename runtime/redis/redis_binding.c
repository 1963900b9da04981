#include "redis/redis_binding.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loop/vm.h"
#include "redis/redis_sub.h"

/* Tickets of the waits one at a time (below VM_FIRST_WAITER_TICKET). */
enum { BLOCK_TICKET = 1,           /* host.wait_notify's */
       COLLECT_TICKET = 2 };       /* host.collect's */

/* The binding's state: one vm a process. */
static struct {
    struct vm *vm;
    struct scripts scripts;
    struct redis_conn *conns[REDIS_BINDING_CONNS];
    /* commands sent without waiting (host.send) that Redis refused, since read */
    int send_errors;
    char send_error[600];
    /* calls whose reply is collected later (host.defer, host.collect) */
    int deferred_ref;               /* registry: id -> result */
    unsigned deferred_next;         /* the next id */
    unsigned collecting;            /* the id a task waits for in host.collect, 0 when none */
    /* the idle wait (host.wait_notify) and the subscription that reports changes of
     * the delayed sets (host.subscribe_invalidations) */
    ev_timer wait_timer;            /* ends the BLPOP at its deadline */
    int blocking;                   /* a BLPOP is in flight */
    int unblock_wanted;             /* end it as soon as its client id is known */
    long long block_client_id;      /* CLIENT ID of the block connection, 0 until known */
    struct redis_sub *sub;          /* listens to __redis__:invalidate, or NULL */
    int invalidated;                /* an invalidation came since host.take_invalidated */
} rb = { .deferred_ref = LUA_NOREF };

/* Pushes a Redis reply: strings and status as strings, integers as numbers, nil as
 * nil at the top level and false inside arrays, arrays as sequences. Error replies
 * are handled by the caller. */
static void push_reply(lua_State *L, const redisReply *r, int top)
{
    luaL_checkstack(L, 4, "Redis reply too deeply nested");
    switch (r->type) {
    case REDIS_REPLY_STRING:
    case REDIS_REPLY_STATUS:
    case REDIS_REPLY_ERROR:
        lua_pushlstring(L, r->str, r->len);
        break;
    case REDIS_REPLY_INTEGER:
        lua_pushnumber(L, (lua_Number)r->integer);
        break;
    case REDIS_REPLY_ARRAY:
        lua_createtable(L, (int)r->elements, 0);
        for (size_t i = 0; i < r->elements; i++) {
            push_reply(L, r->element[i], 0);
            lua_rawseti(L, -2, (int)i + 1);
        }
        break;
    default:
        if (top)
            lua_pushnil(L);
        else
            lua_pushboolean(L, 0);
    }
}

static const char *loss_kind(enum redis_conn_loss loss)
{
    return loss == REDIS_CONN_UNSENT ? "unreachable" : "connection";
}

/* Pushes (true, reply) or (false, message, kind); returns how many. */
static int push_result(lua_State *L, const redisReply *reply, const char *lost,
                       enum redis_conn_loss loss)
{
    if (!reply) {
        lua_pushboolean(L, 0);
        lua_pushstring(L, lost);
        lua_pushstring(L, loss_kind(loss));
        return 3;
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        lua_pushboolean(L, 0);
        lua_pushlstring(L, reply->str, reply->len);
        lua_pushliteral(L, "reply");
        return 3;
    }
    lua_pushboolean(L, 1);
    push_reply(L, reply, 1);
    return 2;
}

struct result {
    const redisReply *reply;
    const char *lost;
    enum redis_conn_loss loss;
};

static int push_result_of(lua_State *L, void *data)
{
    const struct result *r = data;
    return push_result(L, r->reply, r->lost, r->loss);
}

/* (false, message, "memory"): a reply that does not fit under --memory-limit. */
static int push_too_big(lua_State *L, const char *message)
{
    lua_pushboolean(L, 0);
    lua_pushstring(L, message);
    lua_pushliteral(L, "memory");
    return 3;
}

static const struct vm_pusher result_pusher = { push_result_of, push_too_big };

/* The bytes of a reply's strings. */
static size_t reply_bytes(const redisReply *r)
{
    if (!r)
        return 0;
    if (r->type == REDIS_REPLY_ARRAY) {
        size_t n = 0;
        for (size_t i = 0; i < r->elements; i++)
            n += reply_bytes(r->element[i]);
        return n;
    }
    return r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS ? r->len : 0;
}

static void resume_ticket(struct vm *h, double ticket, const redisReply *reply,
                              const char *lost, enum redis_conn_loss loss)
{
    if (h->closing || h->finished)
        return;
    struct result r = { reply, lost, loss };
    vm_resume_with(h, ticket, &result_pusher, &r, reply_bytes(reply));
}

/* A command's reply (data: its waiter), for the task waiting for its ticket. */
static void on_reply(void *data, const redisReply *reply, const char *lost,
                     enum redis_conn_loss loss)
{
    struct vm_waiter *w = data;
    struct vm *h = w->h;
    double ticket = w->ticket;
    vm_waiter_give(w);
    resume_ticket(h, ticket, reply, lost, loss);
}

static int unreachable(lua_State *L, const char *message)
{
    lua_pushboolean(L, 0);
    lua_pushstring(L, message);
    lua_pushliteral(L, "unreachable");
    return 3;
}

static struct redis_conn *conn_named(lua_State *L, int idx)
{
    static const char *const names[] = {"queue", "cache", "block", NULL};
    return rb.conns[luaL_checkoption(L, idx, NULL, names)];
}

static int command_args(lua_State *L, int first, const char **argv, size_t *argvlen)
{
    int n = lua_gettop(L) - first + 1;
    if (n > REDIS_BINDING_MAX_ARGS)
        luaL_error(L, "too many arguments for one Redis command (%d, at most %d)", n,
                   REDIS_BINDING_MAX_ARGS);
    for (int i = 0; i < n; i++) {
        int t = lua_type(L, first + i);
        if (t != LUA_TSTRING && t != LUA_TNUMBER)
            luaL_argerror(L, first + i, "expected a string or a number");
        argv[i] = lua_tolstring(L, first + i, &argvlen[i]);
    }
    return n;
}

/* Queues the command named at index 2, with the arguments after it, on the
 * connection named at index 1; fn gets its reply with data. Returns 0, or -1 with
 * err set. Raises on bad arguments. */
static int send_command(lua_State *L, int flags, redis_conn_reply_fn *fn, void *data, char *err,
                        size_t errlen)
{
    struct redis_conn *c = conn_named(L, 1);
    luaL_checkstring(L, 2);
    const char *argv[REDIS_BINDING_MAX_ARGS];
    size_t argvlen[REDIS_BINDING_MAX_ARGS];
    int argc = command_args(L, 2, argv, argvlen);
    return redis_conn_command(c, flags, argc, argv, argvlen, fn, data, err, errlen);
}

/* Queues EVALSHA of the script named at index 2 on the connection named at index 1,
 * with the key count at index 3 and the keys and arguments after it; fn gets its
 * reply with data. Returns 0, or -1 with err set. Raises on bad arguments. */
static int send_script(lua_State *L, redis_conn_reply_fn *fn, void *data, char *err,
                       size_t errlen)
{
    struct redis_conn *c = conn_named(L, 1);
    const struct script *sc = scripts_get(&rb.scripts, luaL_checkstring(L, 2));
    if (!sc)
        luaL_argerror(L, 2, "no such script");
    int nkeys = (int)luaL_checkinteger(L, 3);
    const char *argv[REDIS_BINDING_MAX_ARGS];
    size_t argvlen[REDIS_BINDING_MAX_ARGS];
    int argc = command_args(L, 4, argv, argvlen);
    if (nkeys < 0 || nkeys > argc)
        luaL_argerror(L, 3, "key count out of range");
    return redis_conn_script(c, sc, nkeys, argc, argv, argvlen, fn, data, err, errlen);
}

/* host.command(conn, name, args...) -> true, reply | false, message, kind. Yields
 * until the reply. */
static int l_host_command(lua_State *L)
{
    char err[512];
    vm_check_wait(L);
    struct vm_waiter *w = vm_waiter_take(vm_of(L));
    if (!w)
        return luaL_error(L, "out of memory");
    if (send_command(L, 0, on_reply, w, err, sizeof err)) {
        vm_waiter_give(w);
        return unreachable(L, err);
    }
    return vm_yield(L, w->ticket);
}

/* host.script(conn, name, nkeys, keys..., args...) -> as host.command. Runs
 * scripts/<name>.lua with EVALSHA (loading it again on NOSCRIPT). Yields until the
 * reply. */
static int l_host_script(lua_State *L)
{
    char err[512];
    vm_check_wait(L);
    struct vm_waiter *w = vm_waiter_take(vm_of(L));
    if (!w)
        return luaL_error(L, "out of memory");
    if (send_script(L, on_reply, w, err, sizeof err)) {
        vm_waiter_give(w);
        return unreachable(L, err);
    }
    return vm_yield(L, w->ticket);
}

static void on_sent(void *data, const redisReply *reply, const char *lost,
                    enum redis_conn_loss loss)
{
    (void)loss;
    struct vm *h = data;
    if (h->closing)
        return;
    if (!reply)
        snprintf(rb.send_error, sizeof rb.send_error, "%s", lost);
    else if (reply->type == REDIS_REPLY_ERROR)
        snprintf(rb.send_error, sizeof rb.send_error, "%.*s", (int)reply->len, reply->str);
    else
        return;
    rb.send_errors++;
}

/* host.send(conn, name, args...) -> true | false, message. Queues a command that is
 * safe to run twice, without waiting for its reply: it is written with the next
 * command that waits, or by host.flush, and a later reply on conn means it was
 * applied. When the connection ends first, it is sent again on the next one. An
 * error reply is counted for host.send_errors. */
static int l_host_send(lua_State *L)
{
    char err[512];
    if (send_command(L, REDIS_CONN_KEEP, on_sent, vm_of(L), err, sizeof err)) {
        lua_pushboolean(L, 0);
        lua_pushstring(L, err);
        return 2;
    }
    lua_pushboolean(L, 1);
    return 1;
}

/* host.flush(conn): writes the commands queued on conn now (see redis_conn_flush). */
static int l_host_flush(lua_State *L)
{
    redis_conn_flush(conn_named(L, 1));
    return 0;
}

/* host.send_errors() -> how many host.send commands got an error reply since the
 * last call (0 when none) and the last one's message; clears the count. */
static int l_host_send_errors(lua_State *L)
{
    lua_pushinteger(L, rb.send_errors);
    lua_pushstring(L, rb.send_error);
    rb.send_errors = 0;
    return 2;
}

/* Pushes the registry table of deferred results (made on first use). */
static void push_deferred(lua_State *L)
{
    if (rb.deferred_ref == LUA_NOREF) {
        lua_newtable(L);
        rb.deferred_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, rb.deferred_ref);
}

struct deferred_call {
    struct vm *h;
    unsigned id;
};

/* A deferred call's reply, on its way to Lua. */
struct deferred_result {
    struct vm *h;
    unsigned id;
    struct result r;
};

/* Pushes a deferred call's result table: {ok=true, reply=} or {ok=false, message=,
 * kind=}. Returns 1. */
static int push_deferred_result(lua_State *L, void *data)
{
    struct deferred_result *d = data;
    int n = push_result(L, d->r.reply, d->r.lost, d->r.loss);
    lua_createtable(L, 0, 3);
    lua_insert(L, -n - 1);
    if (n == 2) {
        lua_setfield(L, -3, "reply");
        lua_setfield(L, -2, "ok");
    } else {
        lua_setfield(L, -4, "kind");
        lua_setfield(L, -3, "message");
        lua_setfield(L, -2, "ok");
    }
    return 1;
}

/* {ok=false, message=, kind="memory"}: a reply that does not fit under
 * --memory-limit. Returns 1. */
static int push_deferred_too_big(lua_State *L, const char *message)
{
    lua_createtable(L, 0, 3);
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "ok");
    lua_pushstring(L, message);
    lua_setfield(L, -2, "message");
    lua_pushliteral(L, "memory");
    lua_setfield(L, -2, "kind");
    return 1;
}

static const struct vm_pusher deferred_pusher = { push_deferred_result, push_deferred_too_big };

/* Keeps a deferred call's result table (the count values on top: 1) for a later
 * host.collect. Returns 0. */
static int store_deferred_result(lua_State *L, int count, void *data)
{
    struct deferred_result *d = data;
    (void)count;
    push_deferred(L);
    lua_insert(L, -2);
    lua_rawseti(L, -2, (int)d->id);
    lua_pop(L, 1);
    return 0;
}

/* A deferred call's reply: handed to the main coroutine when it waits for it in
 * host.collect, else kept for it. */
static void on_deferred(void *data, const redisReply *reply, const char *lost,
                        enum redis_conn_loss loss)
{
    struct deferred_call *call = data;
    struct deferred_result d = { call->h, call->id, { reply, lost, loss } };
    struct vm *h = d.h;
    free(call);
    if (h->closing || h->finished)
        return;
    if (rb.collecting == d.id) {
        rb.collecting = 0;
        vm_resume_with(h, COLLECT_TICKET, &deferred_pusher, &d, reply_bytes(reply));
    } else if (vm_keep_result(h, &deferred_pusher, &d, reply_bytes(reply),
                                store_deferred_result) != 0) {
        vm_fail(h, "cannot keep a reply for Lua");
    }
}

/* host.defer(conn, name, nkeys, keys..., args...) -> id | nil, message: sends the
 * script call as host.script does and returns at once; host.collect(id) gets its
 * reply. */
static int l_host_defer(lua_State *L)
{
    struct vm *h = vm_of(L);
    struct deferred_call *d = malloc(sizeof *d);
    if (!d)
        return luaL_error(L, "out of memory");
    d->h = h;
    d->id = ++rb.deferred_next ? rb.deferred_next : ++rb.deferred_next;
    char err[512];
    if (send_script(L, on_deferred, d, err, sizeof err)) {
        free(d);
        lua_pushnil(L);
        lua_pushstring(L, err);
        return 2;
    }
    push_deferred(L);
    lua_pushboolean(L, 0);
    lua_rawseti(L, -2, (int)d->id);
    lua_pushnumber(L, d->id);
    return 1;
}

/* host.collect(id) -> the reply of the host.defer call id, as {ok=true, reply=} or
 * {ok=false, message=, kind=}. Yields until it came. Raises for an id that is not
 * a deferred call under way or done and not yet collected. */
static int l_host_collect(lua_State *L)
{
    vm_check_wait(L);
    unsigned id = (unsigned)luaL_checkinteger(L, 1);
    push_deferred(L);
    lua_rawgeti(L, -1, (int)id);
    if (lua_istable(L, -1)) {
        lua_pushnil(L);
        lua_rawseti(L, -3, (int)id);
        return 1;
    }
    if (lua_isnil(L, -1))
        return luaL_argerror(L, 1, "no such deferred call");
    if (rb.collecting)
        return luaL_error(L, "host.collect: another task waits for a deferred call");
    rb.collecting = id;
    return vm_yield(L, COLLECT_TICKET);
}

/* host.connects(conn) -> how many connections conn has opened (a change means its
 * client settings are gone), and whether it is up now (redis_conn_up). */
static int l_host_connects(lua_State *L)
{
    struct redis_conn *c = conn_named(L, 1);
    lua_pushnumber(L, (lua_Number)redis_conn_connects(c));
    lua_pushboolean(L, redis_conn_up(c));
    return 2;
}

/* host.describe(conn) -> "host:port/db" of that connection (no password). */
static int l_host_describe(lua_State *L)
{
    lua_pushstring(L, redis_conn_describe(conn_named(L, 1)));
    return 1;
}

static void on_ignored_reply(void *data, const redisReply *reply, const char *lost,
                             enum redis_conn_loss loss)
{
    (void)data;
    (void)reply;
    (void)lost;
    (void)loss;
}

/* Ends the BLPOP of host.wait_notify (it replies nil) by a CLIENT UNBLOCK on the
 * queue connection, which the waiting coroutine does not use meanwhile. */
static void unblock_wait(struct vm *h)
{
    if (!rb.blocking || h->closing)
        return;
    if (rb.block_client_id <= 0) {
        rb.unblock_wanted = 1;
        return;
    }
    char id[32], err[256];
    int n = snprintf(id, sizeof id, "%lld", rb.block_client_id);
    const char *argv[] = {"CLIENT", "UNBLOCK", id};
    size_t argvlen[] = {6, 7, (size_t)n};
    rb.unblock_wanted = 0;
    /* when this cannot be sent, the BLPOP's own timeout ends the wait */
    redis_conn_command(rb.conns[REDIS_BINDING_QUEUE], 0, 3, argv, argvlen, on_ignored_reply, h, err,
                       sizeof err);
}

static void on_block_client_id(void *data, const redisReply *reply, const char *lost,
                               enum redis_conn_loss loss)
{
    (void)lost;
    (void)loss;
    struct vm *h = data;
    if (reply && reply->type == REDIS_REPLY_INTEGER)
        rb.block_client_id = reply->integer;
    if (rb.unblock_wanted)
        unblock_wait(h);
}

static void on_block_reply(void *data, const redisReply *reply, const char *lost,
                           enum redis_conn_loss loss)
{
    struct vm *h = data;
    rb.blocking = 0;
    rb.unblock_wanted = 0;
    ev_timer_stop(h->loop, &rb.wait_timer);
    resume_ticket(h, BLOCK_TICKET, reply, lost, loss);
}

static void on_wait_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    unblock_wait(w->data);
}

/* host.wait_notify(seconds, exact, key...) -> as host.command for BLPOP key... : a
 * list {key, token} when a token came, nil when the time passed or a stop signal
 * (or CONT, HUP) ended the wait, and at once when a stop or HUP signal came before
 * the call. seconds < 0 waits without a time limit. With exact (or fractional
 * seconds) the deadline is the host's own timer, exact to the millisecond, which
 * then ends the BLPOP with CLIENT UNBLOCK; otherwise it is the BLPOP's timeout,
 * which Redis applies only as exactly as its hz (100 ms by default). An
 * invalidation message (see host.subscribe_invalidations) ends it too, and one that
 * came since host.take_invalidated makes it return nil at once. Yields until then. */
static int l_host_wait_notify(lua_State *L)
{
    struct vm *h = vm_of(L);
    vm_check_wait(L);
    double seconds = luaL_checknumber(L, 1);
    int exact = lua_toboolean(L, 2);
    luaL_checkstring(L, 3);
    if (rb.blocking)
        return luaL_error(L, "host.wait_notify: already waiting");
    /* a change came in since the caller looked, or a stop or reload signal did (it
     * would have ended the wait): no wait */
    if (rb.invalidated || h->quit || h->reload) {
        lua_pushboolean(L, 1);
        lua_pushnil(L);
        return 2;
    }
    const char *argv[REDIS_BINDING_MAX_ARGS];
    size_t argvlen[REDIS_BINDING_MAX_ARGS];
    int nkeys = lua_gettop(L) - 2;
    if (nkeys + 2 > REDIS_BINDING_MAX_ARGS)
        return luaL_error(L, "host.wait_notify: too many keys (%d)", nkeys);
    argv[0] = "BLPOP";
    argvlen[0] = 5;
    command_args(L, 3, argv + 1, argvlen + 1);
    if (seconds >= 0 && !exact)
        exact = seconds >= 1 && seconds < 1e9 && seconds == floor(seconds) ? -1 /* Redis' timeout */ : 1;
    /* with the timer, Redis' own timeout only backs it up: a whole second past it */
    char timeout[32];
    int tn = snprintf(timeout, sizeof timeout, "%.0f",
                      seconds < 0 ? 0. : exact < 0 ? seconds : ceil(seconds) + 1.);
    argv[nkeys + 1] = timeout;
    argvlen[nkeys + 1] = (size_t)tn;

    struct redis_conn *c = rb.conns[REDIS_BINDING_BLOCK];
    const char *id_argv[] = {"CLIENT", "ID"};
    size_t id_argvlen[] = {6, 2};
    char err[512];
    rb.block_client_id = 0;
    rb.unblock_wanted = 0;
    if (redis_conn_command(c, 0, 2, id_argv, id_argvlen, on_block_client_id, h, err, sizeof err) ||
        redis_conn_command(c, 0, nkeys + 2, argv, argvlen, on_block_reply, h, err, sizeof err))
        return unreachable(L, err);
    rb.blocking = 1;
    if (seconds >= 0 && exact > 0) {
        ev_timer_init(&rb.wait_timer, on_wait_timer, seconds, 0.);
        rb.wait_timer.data = h;
        ev_timer_start(h->loop, &rb.wait_timer);
    }
    return vm_yield(L, BLOCK_TICKET);
}

static void on_invalidation(void *data)
{
    struct vm *h = data;
    rb.invalidated = 1;
    unblock_wait(h);
}

static void on_subscription_lost(void *data)
{
    (void)data;
}

/* host.subscribe_invalidations() -> true, client id | false, message, kind ("reply"
 * when Redis refused a step, "connection" when it could not be reached).
 * Subscribes a connection of its own to __redis__:invalidate (blocking, at most a
 * second per step), where CLIENT TRACKING ... REDIRECT <client id> sends its
 * messages: each ends a host.wait_notify, or the next one, and sets the flag
 * host.take_invalidated reads. An earlier subscription is closed first. */
static int l_host_subscribe_invalidations(lua_State *L)
{
    struct vm *h = vm_of(L);
    char err[600];
    long long id = 0;
    int refused;
    redis_sub_close(rb.sub);
    rb.sub = redis_sub_open(h->loop, &h->config.queue, "__redis__:invalidate", 1.0,
                            on_invalidation, on_subscription_lost, h, &id, &refused, err,
                            sizeof err);
    if (!rb.sub) {
        lua_pushboolean(L, 0);
        lua_pushstring(L, err);
        lua_pushstring(L, refused ? "reply" : "connection");
        return 3;
    }
    lua_pushboolean(L, 1);
    lua_pushnumber(L, (lua_Number)id);
    return 2;
}

/* host.subscribed() -> whether the subscription of host.subscribe_invalidations
 * still holds. */
static int l_host_subscribed(lua_State *L)
{
    lua_pushboolean(L, redis_sub_alive(rb.sub));
    return 1;
}

/* host.take_invalidated() -> whether an invalidation message came since the last
 * call; clears the flag. */
static int l_host_take_invalidated(lua_State *L)
{
    lua_pushboolean(L, rb.invalidated);
    rb.invalidated = 0;
    return 1;
}


static const luaL_Reg functions[] = {
    {"command", l_host_command},
    {"script", l_host_script},
    {"send", l_host_send},
    {"flush", l_host_flush},
    {"send_errors", l_host_send_errors},
    {"defer", l_host_defer},
    {"collect", l_host_collect},
    {"connects", l_host_connects},
    {"describe", l_host_describe},
    {"wait_notify", l_host_wait_notify},
    {"subscribe_invalidations", l_host_subscribe_invalidations},
    {"subscribed", l_host_subscribed},
    {"take_invalidated", l_host_take_invalidated},
    {NULL, NULL},
};

/* After a signal: ends the host.wait_notify under way (which then returns nil). */
static void wake(struct vm *h)
{
    if (rb.blocking)
        unblock_wait(h);
}

static void close_binding(void *data)
{
    struct vm *h = data;
    if (h->loop)
        ev_timer_stop(h->loop, &rb.wait_timer);
    redis_sub_close(rb.sub);
    rb.sub = NULL;
    for (int i = 0; i < REDIS_BINDING_CONNS; i++) {
        redis_conn_free(rb.conns[i]);
        rb.conns[i] = NULL;
    }
    scripts_free(&rb.scripts);
}

int redis_binding_open(struct vm *h, struct scripts *scripts, char *err, size_t errlen)
{
    rb.vm = h;
    rb.scripts = *scripts;
    memset(scripts, 0, sizeof *scripts);
    vm_on_close(h, close_binding, h);
    const struct redis_settings *settings[REDIS_BINDING_CONNS] = {&h->config.queue,
                                                                  &h->config.cache,
                                                                  &h->config.queue};
    for (int i = 0; i < REDIS_BINDING_CONNS; i++) {
        const int scripted = i == REDIS_BINDING_QUEUE || i == REDIS_BINDING_CACHE;
        rb.conns[i] = redis_conn_new(h->loop, settings[i], scripted ? &rb.scripts : NULL);
        if (!rb.conns[i]) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    vm_add_functions(h, functions);
    vm_on_wake(h, wake);
    return 0;
}

struct redis_conn *redis_binding_conn(int which)
{
    return rb.conns[which];
}
