#include "redis/redis_binding.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loop/vm.h"

/* The ticket of host.collect's wait, one at a time (below VM_FIRST_WAITER_TICKET;
 * idle_wait has 1). */
enum { COLLECT_TICKET = 2 };

/* The binding's state: one vm a process. */
static struct {
    struct vm *vm;
    struct scripts scripts;
    struct redis_client *conns[REDIS_BINDING_CONNS];
    /* commands sent without waiting (host.send) that Redis refused, since read */
    int send_errors;
    char send_error[600];
    /* calls whose reply is collected later (host.defer, host.collect) */
    int deferred_ref;               /* registry: id -> result */
    unsigned deferred_next;         /* the next id */
    unsigned collecting;            /* the id a task waits for in host.collect, 0 when none */
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
    return loss == REDIS_CONN_UNSENT ? "unreachable"
           : loss == REDIS_CONN_TOO_BIG ? "memory"
                                        : "connection";
}

/* Pushes (true, reply) or (false, message, kind); returns how many. */
static int push_result(lua_State *L, const redisReply *reply, const char *lost,
                       enum redis_conn_loss loss)
{
    if (!reply) {
        return vm_push_error(L, lost, loss_kind(loss));
    }
    if (reply->type == REDIS_REPLY_ERROR) {
        /* vm_push_error's shape, with the reply's bytes (NULs and all) for message */
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
    return vm_push_error(L, message, "memory");
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

void redis_binding_resume(struct vm *h, double ticket, const redisReply *reply,
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
    redis_binding_resume(h, ticket, reply, lost, loss);
}

int redis_binding_unreachable(lua_State *L, const char *message)
{
    return vm_push_error(L, message, "unreachable");
}

static struct redis_client *conn_named(lua_State *L, int idx)
{
    static const char *const names[] = {"queue", "cache", "block", NULL};
    return rb.conns[luaL_checkoption(L, idx, NULL, names)];
}

int redis_binding_args(lua_State *L, int first, const char **argv, size_t *argvlen)
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
    struct redis_client *c = conn_named(L, 1);
    luaL_checkstring(L, 2);
    const char *argv[REDIS_BINDING_MAX_ARGS];
    size_t argvlen[REDIS_BINDING_MAX_ARGS];
    int argc = redis_binding_args(L, 2, argv, argvlen);
    return redis_client_command(c, flags, argc, argv, argvlen, fn, data, err, errlen);
}

/* Queues EVALSHA of the script named at index 2 on the connection named at index 1,
 * with the key count at index 3 and the keys and arguments after it; fn gets its
 * reply with data. Returns 0, or -1 with err set. Raises on bad arguments. */
static int send_script(lua_State *L, redis_conn_reply_fn *fn, void *data, char *err,
                       size_t errlen)
{
    struct redis_client *c = conn_named(L, 1);
    const struct script *sc = scripts_get(&rb.scripts, luaL_checkstring(L, 2));
    if (!sc)
        luaL_argerror(L, 2, "no such script");
    int nkeys = (int)luaL_checkinteger(L, 3);
    const char *argv[REDIS_BINDING_MAX_ARGS];
    size_t argvlen[REDIS_BINDING_MAX_ARGS];
    int argc = redis_binding_args(L, 4, argv, argvlen);
    if (nkeys < 0 || nkeys > argc)
        luaL_argerror(L, 3, "key count out of range");
    return redis_client_script(c, sc, nkeys, argc, argv, argvlen, fn, data, err, errlen);
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
        return redis_binding_unreachable(L, err);
    }
    return vm_yield(L, w->ticket);
}

/* host.command_at(conn, key, name, args...) -> as host.command, sent to the server
 * that holds key (on a cluster: for commands that name no key, as WAIT after a
 * write to key). */
static int l_host_command_at(lua_State *L)
{
    char err[512];
    vm_check_wait(L);
    struct redis_client *c = conn_named(L, 1);
    size_t keylen;
    const char *key = luaL_checklstring(L, 2, &keylen);
    luaL_checkstring(L, 3);
    const char *argv[REDIS_BINDING_MAX_ARGS];
    size_t argvlen[REDIS_BINDING_MAX_ARGS];
    int argc = redis_binding_args(L, 3, argv, argvlen);
    struct vm_waiter *w = vm_waiter_take(vm_of(L));
    if (!w)
        return luaL_error(L, "out of memory");
    if (redis_client_command_at(c, key, keylen, 0, argc, argv, argvlen, on_reply, w, err,
                                sizeof err)) {
        vm_waiter_give(w);
        return redis_binding_unreachable(L, err);
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
        return redis_binding_unreachable(L, err);
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
    redis_client_flush(conn_named(L, 1));
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
    struct redis_client *c = conn_named(L, 1);
    lua_pushnumber(L, (lua_Number)redis_client_connects(c));
    lua_pushboolean(L, redis_client_up(c));
    return 2;
}

/* host.describe(conn) -> "host:port/db" of that connection (no password). */
static int l_host_describe(lua_State *L)
{
    lua_pushstring(L, redis_client_describe(conn_named(L, 1)));
    return 1;
}

static const luaL_Reg functions[] = {
    {"command", l_host_command},
    {"command_at", l_host_command_at},
    {"script", l_host_script},
    {"send", l_host_send},
    {"flush", l_host_flush},
    {"send_errors", l_host_send_errors},
    {"defer", l_host_defer},
    {"collect", l_host_collect},
    {"connects", l_host_connects},
    {"describe", l_host_describe},
    {NULL, NULL},
};

static void close_binding(void *data)
{
    (void)data;
    for (int i = 0; i < REDIS_BINDING_CONNS; i++) {
        redis_client_free(rb.conns[i]);
        rb.conns[i] = NULL;
    }
    scripts_free(&rb.scripts);
}

int redis_binding_open(struct vm *h, struct scripts *scripts, char *err, size_t errlen)
{
    rb.vm = h;
    rb.scripts = *scripts;
    memset(scripts, 0, sizeof *scripts);
    vm_on_close(h, close_binding, NULL);
    const struct redis_settings *settings[REDIS_BINDING_CONNS] = {&h->config.queue,
                                                                  &h->config.cache,
                                                                  &h->config.queue};
    for (int i = 0; i < REDIS_BINDING_CONNS; i++) {
        const int scripted = i == REDIS_BINDING_QUEUE || i == REDIS_BINDING_CACHE;
        rb.conns[i] = redis_client_new(h->loop, settings[i], scripted ? &rb.scripts : NULL, err,
                                       errlen);
        if (!rb.conns[i])
            return -1;
        /* a string the heap cannot hold is dropped unread (vm_resume_with would
         * refuse it, after the reader had held it whole) */
        char what[64];
        snprintf(what, sizeof what, "--memory-limit=%zu (MB)", h->heap_limit >> 20);
        redis_client_limit_strings(rb.conns[i], (long long)h->heap_limit, what);
    }
    vm_add_functions(h, functions);
    return 0;
}

struct redis_client *redis_binding_conn(int which)
{
    return rb.conns[which];
}
