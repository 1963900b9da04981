#include "loop/vm.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "loop/signal_arrival.h"
#include "php/encrypter.h"
#include "php/php_value.h"

extern int luaopen_cjson(lua_State *L);

char vm_wait_marker;

struct vm *vm_of(lua_State *L)
{
    return lua_touserdata(L, lua_upvalueindex(1));
}

int vm_check_wait(lua_State *L)
{
    struct vm *h = vm_of(L);
    if (L != h->co && h->waiters_ref != LUA_NOREF) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, h->waiters_ref);
        lua_pushthread(L);
        lua_rawget(L, -2);
        int allowed = lua_toboolean(L, -1);
        lua_pop(L, 2);
        if (allowed)
            return 0;
    }
    lua_pushliteral(L, "luaworker.redis, luaworker.sleep and the other calls that wait "
                    "cannot be made inside a coroutine the handler created "
                    "(coroutine.create/wrap): make them in the handler's own code");
    return lua_error(L);
}

int vm_yield(lua_State *L, double ticket)
{
    lua_settop(L, 0);
    lua_pushlightuserdata(L, &vm_wait_marker);
    lua_pushnumber(L, ticket);
    return lua_yield(L, 2);
}

static void on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
    (void)loop;
    (void)revents;
    struct vm *h = w->data;
    /* (what arrived is noted as it arrives: signal_arrival.h) */
    if (w->signum == SIGUSR2)
        return;
    for (int i = 0; i < h->wakes; i++)
        h->wake[i](h);
}

static void preload(lua_State *L, const char *name, lua_CFunction fn)
{
    lua_getglobal(L, "package");
    lua_getfield(L, -1, "preload");
    lua_pushcfunction(L, fn);
    lua_setfield(L, -2, name);
    lua_pop(L, 2);
}

/* lua_Alloc over LuaJIT's own allocator that keeps h->heap_used and refuses to
 * grow the heap past h->heap_limit (see vm_set_memory_limit). Freeing and
 * shrinking always succeed. */
static void *heap_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    struct vm *h = ud;
    size_t old = ptr ? osize : 0;
    if (h->heap_limit && nsize > old) {
        size_t cap = h->heap_over && !h->heap_strict ? h->heap_limit + VM_HEAP_GRACE
                                                      : h->heap_limit;
        size_t would = (h->heap_used > old ? h->heap_used - old : 0) + nsize;
        if (would > cap) {
            h->heap_over = 1;
            h->heap_refused = would;
            return NULL;
        }
    }
    void *p = h->heap_alloc(h->heap_ud, ptr, osize, nsize);
    if (p || nsize == 0) {
        h->heap_used = (h->heap_used > old ? h->heap_used - old : 0) + nsize;
        if (h->heap_over && h->heap_used < h->heap_limit)
            h->heap_over = 0;
    }
    return p;
}

void vm_set_memory_limit(struct vm *h, size_t bytes)
{
    h->heap_limit = bytes;
}

int vm_open(struct vm *h, const struct config *config, char *err, size_t errlen)
{
    memset(h, 0, sizeof *h);
    h->co_ref = LUA_NOREF;
    h->waiters_ref = LUA_NOREF;
    h->config = *config;

    h->loop = ev_default_loop(EVFLAG_AUTO);
    h->L = luaL_newstate();
    if (!h->loop || !h->L) {
        snprintf(err, errlen, "cannot create the %s", h->loop ? "Lua state" : "event loop");
        return -1;
    }
    h->heap_alloc = lua_getallocf(h->L, &h->heap_ud);
    h->heap_used = (size_t)lua_gc(h->L, LUA_GCCOUNT, 0) * 1024 + (size_t)lua_gc(h->L, LUA_GCCOUNTB, 0);
    lua_setallocf(h->L, heap_alloc, h);
    luaL_openlibs(h->L);
    preload(h->L, "cjson", luaopen_cjson);
    preload(h->L, "luaworker.php", luaopen_luaworker_php);
    preload(h->L, "luaworker.encrypter", luaopen_luaworker_encrypter);

    for (int i = 0; i < SIGNALS_COUNT; i++) {
        ev_signal_init(&h->signals[i], on_signal, signals_handled[i]);
        h->signals[i].data = h;
        ev_signal_start(h->loop, &h->signals[i]);
        ev_unref(h->loop);  /* signal watchers alone do not keep the loop running */
    }
    signal_arrival_install();
    /* a worker starts with them blocked (see signals.h): one sent meanwhile comes now */
    sigset_t handled;
    signals_fill(&handled);
    sigprocmask(SIG_UNBLOCK, &handled, NULL);
    return 0;
}

/* The "luaworker.host" module: the functions of every unit added (vm_add_functions),
 * each with the vm as upvalue 1, and WAIT, the marker vm_yield yields. */
static int luaopen_host(lua_State *L)
{
    struct vm *h = lua_touserdata(L, lua_upvalueindex(1));
    lua_newtable(L);
    for (int i = 0; i < h->nunits; i++) {
        lua_pushlightuserdata(L, h);
        luaL_setfuncs(L, h->units[i], 1);
    }
    lua_pushlightuserdata(L, &vm_wait_marker);
    lua_setfield(L, -2, "WAIT");
    return 1;
}

void vm_add_functions(struct vm *h, const luaL_Reg *fns)
{
    if (h->nunits == 0) {
        lua_getglobal(h->L, "package");
        lua_getfield(h->L, -1, "preload");
        lua_pushlightuserdata(h->L, h);
        lua_pushcclosure(h->L, luaopen_host, 1);
        lua_setfield(h->L, -2, "luaworker.host");
        lua_pop(h->L, 2);
    }
    if (h->nunits < VM_UNITS_MAX)
        h->units[h->nunits++] = fns;
}

void vm_add_type(struct vm *h, const char *name, lua_CFunction gc)
{
    luaL_newmetatable(h->L, name);
    lua_pushcfunction(h->L, gc);
    lua_setfield(h->L, -2, "__gc");
    lua_pop(h->L, 1);
}

void vm_timer_start(struct vm *h, ev_timer *t)
{
    ev_now_update(h->loop);
    ev_timer_start(h->loop, t);
}

void vm_push_handle(lua_State *L, const char *type, void *object)
{
    void **p = lua_newuserdata(L, sizeof *p);
    *p = object;
    luaL_getmetatable(L, type);
    lua_setmetatable(L, -2);
}

void *vm_handle(lua_State *L, int idx, const char *type)
{
    return *(void **)luaL_checkudata(L, idx, type);
}

void *vm_take_handle(lua_State *L, int idx, const char *type)
{
    void **p = luaL_checkudata(L, idx, type);
    void *object = *p;
    *p = NULL;
    return object;
}

int vm_push_error(lua_State *L, const char *message, const char *kind)
{
    lua_pushboolean(L, 0);
    lua_pushstring(L, message);
    lua_pushstring(L, kind);
    return 3;
}

void vm_on_wake(struct vm *h, void (*fn)(struct vm *h))
{
    if (h->wakes < VM_HOOKS_MAX)
        h->wake[h->wakes++] = fn;
}

void vm_on_close(struct vm *h, void (*fn)(void *data), void *data)
{
    if (h->ncloser < VM_HOOKS_MAX) {
        h->closers[h->ncloser].fn = fn;
        h->closers[h->ncloser].data = data;
        h->ncloser++;
    }
}

/* Pushes the parsed command line as {command=, args={...}, literal_from=,
 * options={...}}; option names use '_' for '-', flags are booleans, numbers are
 * numbers; literal_from: the 1-based index of the first argument after `--`. */
/* An option's name as a Lua key: "retry-after" -> "retry_after". */
static void option_key(char *key, size_t n, const char *name)
{
    snprintf(key, n, "%s", name);
    for (char *p = key; *p; p++)
        if (*p == '-')
            *p = '_';
}

static void push_cli(lua_State *L, const struct cli *cli)
{
    lua_createtable(L, 0, 4);
    lua_pushstring(L, cli->command->name);
    lua_setfield(L, -2, "command");
    if (cli->literal_from >= 0) {
        lua_pushinteger(L, cli->literal_from + 1);
        lua_setfield(L, -2, "literal_from");
    }
    lua_createtable(L, cli->nargs, 0);
    for (int i = 0; i < cli->nargs; i++) {
        lua_pushstring(L, cli->args[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "args");
    lua_newtable(L);
    for (int k = 0; cli->command->options[k].name; k++) {
        const struct cli_option *o = &cli->command->options[k];
        const char *v = cli->values[k] ? cli->values[k] : o->def;
        char key[64];
        option_key(key, sizeof key, o->name);
        if (o->type == CLI_FLAG)
            lua_pushboolean(L, cli->values[k] != NULL);
        else if (!v)
            continue;
        else if (o->type == CLI_UINT || o->type == CLI_SECONDS)
            lua_pushnumber(L, strtod(v, NULL));
        else
            lua_pushstring(L, v);
        lua_setfield(L, -2, key);
    }
    lua_setfield(L, -2, "options");
    /* given: the options given on the command line or by their variable, true by
     * name (a default given by neither is not) */
    lua_newtable(L);
    for (int k = 0; cli->command->options[k].name; k++) {
        if (!cli->values[k])
            continue;
        char key[64];
        option_key(key, sizeof key, cli->command->options[k].name);
        lua_pushboolean(L, 1);
        lua_setfield(L, -2, key);
    }
    lua_setfield(L, -2, "given");
}

static void push_redis_settings(lua_State *L, const struct redis_settings *s)
{
    lua_createtable(L, 0, 6);
    lua_pushstring(L, s->host);
    lua_setfield(L, -2, "host");
    lua_pushinteger(L, s->port);
    lua_setfield(L, -2, "port");
    lua_pushstring(L, s->path);
    lua_setfield(L, -2, "path");
    lua_pushinteger(L, s->db);
    lua_setfield(L, -2, "db");
    lua_pushboolean(L, s->password[0] != '\0');
    lua_setfield(L, -2, "has_password");
    lua_pushboolean(L, s->cluster_nodes[0] != '\0');
    lua_setfield(L, -2, "cluster");
}

/* Pushes the configuration (never the passwords). */
static void push_config(lua_State *L, const struct vm *h)
{
    const struct config *c = &h->config;
    lua_createtable(L, 0, 13);
    push_redis_settings(L, &c->queue);
    lua_setfield(L, -2, "queue_redis");
    push_redis_settings(L, &c->cache);
    lua_setfield(L, -2, "cache_redis");
    lua_pushstring(L, c->prefix);
    lua_setfield(L, -2, "prefix");
    lua_pushstring(L, c->horizon_prefix);
    lua_setfield(L, -2, "horizon_prefix");
    lua_pushstring(L, c->cache_prefix);
    lua_setfield(L, -2, "cache_prefix");
    lua_pushstring(L, c->default_queue);
    lua_setfield(L, -2, "default_queue");
    lua_pushstring(L, c->connection_name);
    lua_setfield(L, -2, "connection_name");
    lua_pushstring(L, c->failed_driver);
    lua_setfield(L, -2, "failed_driver");
    lua_pushinteger(L, c->laravel.major);
    lua_setfield(L, -2, "laravel_version");
    lua_pushinteger(L, c->laravel.minor);
    lua_setfield(L, -2, "laravel_minor");
    lua_pushstring(L, c->scripts_dir);
    lua_setfield(L, -2, "scripts_dir");
}

/* Prints the error the main coroutine ended with, and its traceback. */
static int report_main_error(lua_State *L, void *data)
{
    struct vm *h = data;
    /* lua_tostring would convert a number in place, allocating on the coroutine */
    const char *msg = lua_type(h->co, -1) == LUA_TSTRING ? lua_tostring(h->co, -1) : NULL;
    luaL_traceback(L, h->co, msg ? msg : "(error object is not a string)", 0);
    fprintf(stderr, "luaworker: internal error: %s\n", lua_tostring(L, -1));
    return 0;
}

static void vm_resume_ended(struct vm *h, int status);

void vm_resume(struct vm *h, double ticket, int nargs)
{
    /* the main coroutine ended in this turn of the loop (ev_break lets the callbacks
     * already due run): nobody waits any more, and resuming it would start it again
     * with the ticket for its function */
    if (h->finished || h->closing) {
        lua_pop(h->co, nargs);
        return;
    }
    /* the coroutine's stack is empty since it yielded: room for LUA_MINSTACK values */
    lua_pushnumber(h->co, ticket);
    lua_insert(h->co, -nargs - 1);
    int status = lua_resume(h->co, nargs + 1);
    if (status == LUA_YIELD) {
        lua_settop(h->co, 0);
        return;
    }
    vm_resume_ended(h, status);
}

/* The main coroutine returned (status 0) or raised: the process's run ends. */
static void vm_resume_ended(struct vm *h, int status)
{
    h->finished = 1;
    if (status == 0) {
        h->exit_code = lua_isnumber(h->co, -1) ? (int)lua_tointeger(h->co, -1) : 0;
    } else {
        if (vm_protected(h, report_main_error, h) != 0)
            fprintf(stderr, "luaworker: internal error (its traceback could not be made)\n");
        h->exit_code = 70;
    }
    ev_break(h->loop, EVBREAK_ALL);
}

struct protected_call {
    struct vm *h;
    int (*fn)(lua_State *L, void *data);
    void *data;
    int moved;   /* values moved to the main coroutine (vm_resume_with) */
    int resume;
    int (*store)(lua_State *L, int count, void *data);  /* keeps them instead */
    void *store_data;
};

static int protected_trampoline(lua_State *L)
{
    struct protected_call *c = lua_touserdata(L, 1);
    lua_pop(L, 1);
    int n = c->fn(L, c->data);
    if (c->store) {
        c->store(L, n, c->store_data);
    } else if (c->resume) {
        lua_xmove(L, c->h->co, n);   /* no allocation that can collect garbage */
        c->moved = n;
    }
    return 0;
}

/* Runs c until it succeeds. A failure is reported; it is a __gc finalizer that
 * raised (each runs once, so the next try gets further) or a lack of memory (given
 * up after MEMORY_TRIES). Returns 0, or -1. */
#define MEMORY_TRIES 3

static int run_protected(struct protected_call *c)
{
    for (int memory_failures = 0;;) {
        int status = lua_cpcall(c->h->L, protected_trampoline, c);
        if (status == 0)
            return 0;
        const char *msg = lua_tostring(c->h->L, -1);
        fprintf(stderr, "luaworker: error while handing a result to Lua (a __gc finalizer "
                "that raised, or no memory): %s\n", msg ? msg : "(not a string)");
        lua_pop(c->h->L, 1);
        if (status == LUA_ERRMEM && ++memory_failures == MEMORY_TRIES)
            return -1;
    }
}

void vm_fail(struct vm *h, const char *what)
{
    fprintf(stderr, "luaworker: internal error: %s\n", what);
    h->finished = 1;
    h->exit_code = 70;
    ev_break(h->loop, EVBREAK_ALL);
}

int vm_protected(struct vm *h, int (*fn)(lua_State *L, void *data), void *data)
{
    struct protected_call c = { h, fn, data, 0, 0, NULL, NULL };
    return run_protected(&c);
}

static int collect_garbage(lua_State *L)
{
    lua_gc(L, LUA_GCCOLLECT, 0);
    return 0;
}

/* A result's failure values for a task: too_big with its message. */
struct too_big {
    int (*push)(lua_State *L, const char *message);
    char message[200];
};

static int push_too_big(lua_State *L, void *data)
{
    struct too_big *t = data;
    return t->push(L, t->message);
}

/* Hands c's result over (c->fn is p->push): without the heap's grace, a second
 * time after a full collection when it did not fit, and as p->too_big's failure
 * when it does not fit then either (or bytes alone are over the limit). Returns
 * 0, or -1 when not even that could be handed over (reported). */
static int hand_over(struct vm *h, struct protected_call *c, const struct vm_pusher *p,
                     size_t bytes)
{
    size_t before = h->heap_used, needed = bytes;
    if (!h->heap_limit || bytes <= h->heap_limit) {
        h->heap_strict = 1;
        for (int memory_failures = 0;;) {
            int status = lua_cpcall(h->L, protected_trampoline, c);
            if (status == 0) {
                h->heap_strict = 0;
                return 0;
            }
            if (status != LUA_ERRMEM) {
                /* a __gc finalizer that raised: each runs once, the next try gets further */
                const char *msg = lua_tostring(h->L, -1);
                fprintf(stderr, "luaworker: error while handing a result to Lua (a __gc "
                        "finalizer that raised): %s\n", msg ? msg : "(not a string)");
            }
            lua_pop(h->L, 1);
            if (status == LUA_ERRMEM) {
                if (h->heap_refused > before && h->heap_refused - before > needed)
                    needed = h->heap_refused - before;
                if (++memory_failures == 2)
                    break;
                h->heap_strict = 0;
                if (lua_cpcall(h->L, collect_garbage, NULL) != 0)
                    lua_pop(h->L, 1);
                h->heap_strict = 1;
                before = h->heap_used;
            }
        }
        h->heap_strict = 0;
    }
    struct too_big t = { p->too_big, "" };
    const char *more = needed == bytes && bytes ? "" : "more than ";
    if (h->heap_limit)
        snprintf(t.message, sizeof t.message, "a result of %s%.1f MB does not fit under "
                 "--memory-limit=%zu (MB; the worker's Lua heap holds %.1f MB)", more,
                 (double)needed / 1048576.0, h->heap_limit >> 20, (double)h->heap_used / 1048576.0);
    else
        snprintf(t.message, sizeof t.message, "a result of %s%.1f MB: the system has no memory "
                 "for it", more, (double)needed / 1048576.0);
    c->fn = push_too_big;
    c->data = &t;
    return run_protected(c);
}

void vm_resume_with(struct vm *h, double ticket, const struct vm_pusher *p, void *data,
                      size_t bytes)
{
    struct protected_call c = { h, p->push, data, 0, 1, NULL, NULL };
    if (hand_over(h, &c, p, bytes) != 0) {
        vm_fail(h, "cannot hand a result to Lua");
        return;
    }
    vm_resume(h, ticket, c.moved);
}

int vm_keep_result(struct vm *h, const struct vm_pusher *p, void *data, size_t bytes,
                     int (*store)(lua_State *L, int count, void *data))
{
    struct protected_call c = { h, p->push, data, 0, 0, store, data };
    return hand_over(h, &c, p, bytes);
}

int vm_run(struct vm *h, const struct cli *cli)
{
    lua_State *L = h->L;
    h->co = lua_newthread(L);
    h->co_ref = luaL_ref(L, LUA_REGISTRYINDEX);

    lua_getglobal(h->co, "require");
    lua_pushstring(h->co, "luaworker.start");
    if (lua_pcall(h->co, 1, 1, 0) != 0) {
        fprintf(stderr, "luaworker: cannot load the runtime: %s\n", lua_tostring(h->co, -1));
        return 70;
    }
    lua_getfield(h->co, -1, "run");
    lua_remove(h->co, -2);
    push_cli(h->co, cli);
    push_config(h->co, h);
    int status = lua_resume(h->co, 2);
    if (status == LUA_YIELD)
        lua_settop(h->co, 0);
    else
        vm_resume_ended(h, status);
    if (!h->finished)
        ev_run(h->loop, 0);
    if (!h->finished) {
        fprintf(stderr, "luaworker: internal error: the main coroutine waits for nothing\n");
        return 70;
    }
    return h->exit_code;
}

static void free_waiters(struct vm_waiters *list)
{
    struct vm_waiter *w;
    while ((w = LIST_FIRST(list))) {
        LIST_REMOVE(w, link);
        free(w);
    }
}

void vm_close(struct vm *h)
{
    /* blocked again before their watchers go (which restores the default actions):
     * a signal that comes now, such as the supervisor's HUP to every worker, finds a
     * process on its way out, not one it kills */
    sigset_t handled;
    signals_fill(&handled);
    sigprocmask(SIG_BLOCK, &handled, NULL);
    h->closing = 1;
    struct vm_waiter *w;
    if (h->loop)
        LIST_FOREACH(w, &h->waits, link)
            ev_timer_stop(h->loop, &w->timer);
    /* the bindings: their connections and requests end without a word (no reply
     * resumes Lua now), their waiters are freed below */
    while (h->ncloser > 0) {
        h->ncloser--;
        h->closers[h->ncloser].fn(h->closers[h->ncloser].data);
    }
    if (h->loop)
        for (int i = 0; i < SIGNALS_COUNT; i++) {
            ev_ref(h->loop);
            ev_signal_stop(h->loop, &h->signals[i]);
        }
    if (h->L)
        lua_close(h->L);
    h->L = NULL;
    free_waiters(&h->waits);
    free_waiters(&h->spare);
}
