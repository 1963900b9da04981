#include "host/host_api.h"

#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>

#include "host/lua_host.h"
#include "redis/redis_conn.h"
#include "redis/redis_sub.h"
#include "supervisor/supervisor.h"

/* The value yielded by every waiting host function: a coroutine driver that sees it
 * must yield it on to the main coroutine and pass the resume values back down. */
static char wait_marker;

#define MAX_COMMAND_ARGS 1024

static struct host *host_of(lua_State *L)
{
    return lua_touserdata(L, lua_upvalueindex(1));
}

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

/* Resumes the main coroutine with (true, value), (false, message, "reply") for an
 * error reply, or (false, message, "connection") when the connection was lost. */
static void on_reply(void *data, const redisReply *reply, const char *lost)
{
    struct host *h = data;
    if (h->closing || h->finished)
        return;
    lua_State *co = h->co;
    if (!reply) {
        lua_pushboolean(co, 0);
        lua_pushstring(co, lost);
        lua_pushliteral(co, "connection");
        host_resume(h, 3);
    } else if (reply->type == REDIS_REPLY_ERROR) {
        lua_pushboolean(co, 0);
        lua_pushlstring(co, reply->str, reply->len);
        lua_pushliteral(co, "reply");
        host_resume(h, 3);
    } else {
        lua_pushboolean(co, 1);
        push_reply(co, reply, 1);
        host_resume(h, 2);
    }
}

/* The connection named at idx: "queue", "cache", or "block" (HOST_BLOCK_CONN, for
 * client settings such as CLIENT TRACKING; it has no scripts). */
static struct redis_conn *check_conn(lua_State *L, struct host *h, int idx)
{
    static const char *const names[] = {"queue", "cache", "block", NULL};
    return h->conns[luaL_checkoption(L, idx, NULL, names)];
}

/* Collects the arguments from index first to the top as strings (numbers are
 * converted). Raises when there are too many or one is not a string or number. */
static int collect_args(lua_State *L, int first, const char **argv, size_t *argvlen)
{
    int n = lua_gettop(L) - first + 1;
    if (n > MAX_COMMAND_ARGS)
        luaL_error(L, "too many arguments for one Redis command (%d, at most %d)", n,
                   MAX_COMMAND_ARGS);
    for (int i = 0; i < n; i++) {
        int t = lua_type(L, first + i);
        if (t != LUA_TSTRING && t != LUA_TNUMBER)
            luaL_argerror(L, first + i, "expected a string or a number");
        argv[i] = lua_tolstring(L, first + i, &argvlen[i]);
    }
    return n;
}

static int yield_wait(lua_State *L)
{
    lua_settop(L, 0);
    lua_pushlightuserdata(L, &wait_marker);
    return lua_yield(L, 1);
}

static int fail_now(lua_State *L, const char *err)
{
    lua_pushboolean(L, 0);
    lua_pushstring(L, err);
    lua_pushliteral(L, "connection");
    return 3;
}

/* Queues the command named at index 2, with the arguments after it, on the
 * connection named at index 1; fn gets its reply. Returns 0, or -1 with err set.
 * Raises on bad arguments. */
static int send_command(lua_State *L, redis_conn_reply_fn *fn, char *err, size_t errlen)
{
    struct host *h = host_of(L);
    struct redis_conn *c = check_conn(L, h, 1);
    luaL_checkstring(L, 2);
    const char *argv[MAX_COMMAND_ARGS];
    size_t argvlen[MAX_COMMAND_ARGS];
    int argc = collect_args(L, 2, argv, argvlen);
    return redis_conn_command(c, argc, argv, argvlen, fn, h, err, errlen);
}

/* Queues EVALSHA of script sc on c with the key count at index nkeys_at and the
 * keys and arguments after it; fn gets its reply. Returns 0, or -1 with err set.
 * Raises on bad arguments. */
static int send_script(lua_State *L, struct redis_conn *c, const struct script *sc, int nkeys_at,
                       redis_conn_reply_fn *fn, char *err, size_t errlen)
{
    int nkeys = (int)luaL_checkinteger(L, nkeys_at);
    const char *argv[MAX_COMMAND_ARGS];
    size_t argvlen[MAX_COMMAND_ARGS];
    int argc = collect_args(L, nkeys_at + 1, argv, argvlen);
    if (nkeys < 0 || nkeys > argc)
        luaL_argerror(L, nkeys_at, "key count out of range");
    return redis_conn_script(c, sc, nkeys, argc, argv, argvlen, fn, host_of(L), err, errlen);
}

/* host.command(conn, name, args...) -> true, reply | false, message, kind.
 * conn is "queue" or "cache". Yields until the reply. */
static int l_host_command(lua_State *L)
{
    char err[512];
    if (send_command(L, on_reply, err, sizeof err))
        return fail_now(L, err);
    return yield_wait(L);
}

/* host.script(conn, name, nkeys, keys..., args...) -> as host.command. Runs the
 * script with EVALSHA (loading it again on NOSCRIPT). Yields until the reply. */
static int l_host_script(lua_State *L)
{
    struct host *h = host_of(L);
    struct redis_conn *c = check_conn(L, h, 1);
    const struct script *sc = scripts_get(&h->scripts, luaL_checkstring(L, 2));
    if (!sc)
        return luaL_argerror(L, 2, "no such script");
    char err[512];
    if (send_script(L, c, sc, 3, on_reply, err, sizeof err))
        return fail_now(L, err);
    return yield_wait(L);
}

static void on_sent(void *data, const redisReply *reply, const char *lost)
{
    struct host *h = data;
    if (h->closing)
        return;
    if (!reply)
        snprintf(h->send_error, sizeof h->send_error, "%s", lost);
    else if (reply->type == REDIS_REPLY_ERROR)
        snprintf(h->send_error, sizeof h->send_error, "%.*s", (int)reply->len, reply->str);
    else
        return;
    h->send_errors++;
}

/* host.send(conn, name, args...) -> true | false, message. Queues a command without
 * waiting for its reply: it is written with the next command that waits, or by
 * host.flush, and a later reply on conn means it was applied. An error reply or a
 * lost connection is counted for host.send_errors. */
static int l_host_send(lua_State *L)
{
    char err[512];
    if (send_command(L, on_sent, err, sizeof err)) {
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
    struct host *h = host_of(L);
    redis_conn_flush(check_conn(L, h, 1));
    return 0;
}

/* host.send_errors() -> how many host.send commands failed since the last call
 * (0 when none) and the last one's message; clears the count. */
static int l_host_send_errors(lua_State *L)
{
    struct host *h = host_of(L);
    lua_pushinteger(L, h->send_errors);
    lua_pushstring(L, h->send_error);
    h->send_errors = 0;
    return 2;
}

static void on_sleep_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    struct host *h = w->data;
    lua_pushboolean(h->co, 1);
    host_resume(h, 1);
}

static void on_ignored_reply(void *data, const redisReply *reply, const char *lost)
{
    (void)data;
    (void)reply;
    (void)lost;
}

/* Ends the BLPOP of host.wait_notify (it replies nil) by a CLIENT UNBLOCK on the
 * queue connection, which the waiting coroutine does not use meanwhile. */
static void unblock_wait(struct host *h)
{
    if (!h->blocking || h->closing)
        return;
    if (h->block_client_id <= 0) {
        h->unblock_wanted = 1;
        return;
    }
    char id[32], err[256];
    int n = snprintf(id, sizeof id, "%lld", h->block_client_id);
    const char *argv[] = {"CLIENT", "UNBLOCK", id};
    size_t argvlen[] = {6, 7, (size_t)n};
    h->unblock_wanted = 0;
    /* when this cannot be sent, the BLPOP's own timeout ends the wait */
    redis_conn_command(h->conns[HOST_QUEUE_CONN], 3, argv, argvlen, on_ignored_reply, h, err,
                       sizeof err);
}

static void on_block_client_id(void *data, const redisReply *reply, const char *lost)
{
    (void)lost;
    struct host *h = data;
    if (reply && reply->type == REDIS_REPLY_INTEGER)
        h->block_client_id = reply->integer;
    if (h->unblock_wanted)
        unblock_wait(h);
}

static void on_block_reply(void *data, const redisReply *reply, const char *lost)
{
    struct host *h = data;
    h->blocking = 0;
    h->unblock_wanted = 0;
    ev_timer_stop(h->loop, &h->wait_timer);
    on_reply(data, reply, lost);
}

static void on_wait_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    unblock_wait(w->data);
}

/* host.wait_notify(seconds, exact, key...) -> as host.command for BLPOP key... : a
 * list {key, token} when a token came, nil when the time passed or a stop signal
 * (or CONT, HUP) ended the wait. seconds < 0 waits without a time limit. With
 * exact (or fractional seconds) the deadline is the host's own timer, exact to the
 * millisecond, which then ends the BLPOP with CLIENT UNBLOCK; otherwise it is the
 * BLPOP's timeout, which Redis applies only as exactly as its hz (100 ms by
 * default). An invalidation message (see host.subscribe_invalidations) ends it too,
 * and one that came since host.take_invalidated makes it return nil at once.
 * Yields until then. */
static int l_host_wait_notify(lua_State *L)
{
    struct host *h = host_of(L);
    double seconds = luaL_checknumber(L, 1);
    int exact = lua_toboolean(L, 2);
    luaL_checkstring(L, 3);
    if (h->blocking)
        return luaL_error(L, "host.wait_notify: already waiting");
    if (h->invalidated) {  /* a change came in since the caller looked */
        lua_pushboolean(L, 1);
        lua_pushnil(L);
        return 2;
    }
    const char *argv[MAX_COMMAND_ARGS];
    size_t argvlen[MAX_COMMAND_ARGS];
    int nkeys = lua_gettop(L) - 2;
    if (nkeys + 2 > MAX_COMMAND_ARGS)
        return luaL_error(L, "host.wait_notify: too many keys (%d)", nkeys);
    argv[0] = "BLPOP";
    argvlen[0] = 5;
    collect_args(L, 3, argv + 1, argvlen + 1);
    if (seconds >= 0 && !exact)
        exact = seconds >= 1 && seconds < 1e9 && seconds == floor(seconds) ? -1 /* Redis' timeout */ : 1;
    /* with the timer, Redis' own timeout only backs it up: a whole second past it */
    char timeout[32];
    int tn = snprintf(timeout, sizeof timeout, "%.0f",
                      seconds < 0 ? 0. : exact < 0 ? seconds : ceil(seconds) + 1.);
    argv[nkeys + 1] = timeout;
    argvlen[nkeys + 1] = (size_t)tn;

    struct redis_conn *c = h->conns[HOST_BLOCK_CONN];
    const char *id_argv[] = {"CLIENT", "ID"};
    size_t id_argvlen[] = {6, 2};
    char err[512];
    h->block_client_id = 0;
    h->unblock_wanted = 0;
    if (redis_conn_command(c, 2, id_argv, id_argvlen, on_block_client_id, h, err, sizeof err) ||
        redis_conn_command(c, nkeys + 2, argv, argvlen, on_block_reply, h, err, sizeof err))
        return fail_now(L, err);
    h->blocking = 1;
    if (seconds >= 0 && exact > 0) {
        ev_timer_init(&h->wait_timer, on_wait_timer, seconds, 0.);
        h->wait_timer.data = h;
        ev_timer_start(h->loop, &h->wait_timer);
    }
    return yield_wait(L);
}

static void on_invalidation(void *data)
{
    struct host *h = data;
    h->invalidated = 1;
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
    struct host *h = host_of(L);
    char err[600];
    long long id = 0;
    int refused;
    redis_sub_close(h->sub);
    h->sub = redis_sub_open(h->loop, &h->config.queue, "__redis__:invalidate", 1.0,
                            on_invalidation, on_subscription_lost, h, &id, &refused, err,
                            sizeof err);
    if (!h->sub) {
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
    lua_pushboolean(L, redis_sub_alive(host_of(L)->sub));
    return 1;
}

/* host.connects(conn) -> how many connections conn ("queue", "cache", "block") has
 * opened: a change means its client settings are gone. */
static int l_host_connects(lua_State *L)
{
    struct host *h = host_of(L);
    lua_pushnumber(L, (lua_Number)redis_conn_connects(check_conn(L, h, 1)));
    return 1;
}

/* host.take_invalidated() -> whether an invalidation message came since the last
 * call; clears the flag. */
static int l_host_take_invalidated(lua_State *L)
{
    struct host *h = host_of(L);
    lua_pushboolean(L, h->invalidated);
    h->invalidated = 0;
    return 1;
}

void host_api_wake(struct host *h)
{
    if (h->blocking) {
        unblock_wait(h);
        return;
    }
    if (!ev_is_active(&h->sleep_timer) || h->finished)
        return;
    ev_timer_stop(h->loop, &h->sleep_timer);
    lua_pushboolean(h->co, 0);
    host_resume(h, 1);
}

/* host.sleep(seconds) -> true when the time passed, false when a stop signal (or
 * CONT) ended it early. Returns at once for seconds <= 0. */
static int l_host_sleep(lua_State *L)
{
    struct host *h = host_of(L);
    double seconds = luaL_checknumber(L, 1);
    if (!(seconds > 0)) {
        lua_pushboolean(L, 1);
        return 1;
    }
    if (ev_is_active(&h->sleep_timer))
        return luaL_error(L, "host.sleep: already sleeping");
    ev_timer_init(&h->sleep_timer, on_sleep_timer, seconds, 0.);
    h->sleep_timer.data = h;
    ev_timer_start(h->loop, &h->sleep_timer);
    return yield_wait(L);
}

/* host.now() -> integer Unix seconds (the host clock, as Laravel's scores use). */
static int l_host_now(lua_State *L)
{
    lua_pushnumber(L, (lua_Number)time(NULL));
    return 1;
}

/* host.clock() -> monotonic seconds, for durations. */
static int l_host_clock(lua_State *L)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec / 1e9);
    return 1;
}

/* host.microtime() -> Unix time with fractions, for timestamps in JSON output. */
static int l_host_microtime(lua_State *L)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec / 1e9);
    return 1;
}

/* host.signals() -> quit, paused, reload: whether a stop signal arrived, whether
 * USR2 paused the worker (and CONT has not resumed it), whether HUP asked for a
 * reload. */
static int l_host_signals(lua_State *L)
{
    struct host *h = host_of(L);
    lua_pushboolean(L, h->quit);
    lua_pushboolean(L, h->paused);
    lua_pushboolean(L, h->reload);
    return 3;
}

/* host.supervised() -> whether a supervisor runs this process. */
static int l_host_supervised(lua_State *L)
{
    lua_pushboolean(L, host_of(L)->supervisor_fd >= 0);
    return 1;
}

/* Sends a 'B' frame with the next batch number (from 1: a zeroed slot names no
 * batch) and the parts (the queue, then payload and reserved copy of each job).
 * Returns the batch number; 0 when not supervised. */
static uint32_t send_batch(struct host *h, int nparts, const char *const *parts,
                           const size_t *lens)
{
    if (h->supervisor_fd < 0)
        return 0;
    size_t total = 4;
    for (int i = 0; i < nparts; i++)
        total += 4 + lens[i];
    char *body = malloc(total);
    if (!body)
        return 0;
    uint32_t number = ++h->batch;
    memcpy(body, &number, 4);
    char *p = body + 4;
    for (int i = 0; i < nparts; i++) {
        uint32_t n = (uint32_t)lens[i];
        memcpy(p, &n, 4);
        memcpy(p + 4, parts[i], lens[i]);
        p += 4 + lens[i];
    }
    const char *frame = body;
    supervisor_send(h->supervisor_fd, 'B', &frame, &total, 1);
    free(body);
    return number;
}

/* host.report_batch(queue, payload, reserved, ...) -> batch number: tells the
 * supervisor the jobs one pop reserved (a 'B' frame, see supervisor.h). 0 when not
 * supervised. */
static int l_host_report_batch(lua_State *L)
{
    struct host *h = host_of(L);
    int n = lua_gettop(L);
    luaL_checkstring(L, 1);
    luaL_argcheck(L, n % 2 == 1 && n <= MAX_COMMAND_ARGS, n,
                  "expected payload and reserved copy pairs");
    const char *parts[MAX_COMMAND_ARGS];
    size_t lens[MAX_COMMAND_ARGS];
    for (int i = 0; i < n; i++)
        parts[i] = luaL_checklstring(L, i + 1, &lens[i]);
    lua_pushnumber(L, send_batch(h, n, parts, lens));
    return 1;
}

/* A prefetch's reply: its jobs go to the supervisor at once (the process may end
 * before Lua looks at them), and the reply waits in the registry, as a table
 * {ok=, reply=, batch=, message=, kind=}, for host.prefetched. */
static void on_prefetch(void *data, const redisReply *reply, const char *lost)
{
    struct host *h = data;
    if (h->closing || h->finished)
        return;
    lua_State *L = h->L;
    lua_createtable(L, 0, 4);
    if (!reply || reply->type == REDIS_REPLY_ERROR) {
        lua_pushboolean(L, 0);
        lua_setfield(L, -2, "ok");
        if (reply)
            lua_pushlstring(L, reply->str, reply->len);
        else
            lua_pushstring(L, lost);
        lua_setfield(L, -2, "message");
        lua_pushstring(L, reply ? "reply" : "connection");
        lua_setfield(L, -2, "kind");
    } else {
        const char *parts[2 * 64 + 1];
        size_t lens[2 * 64 + 1];
        int n = 0;
        parts[n] = h->prefetch_queue;
        lens[n++] = strlen(h->prefetch_queue);
        for (size_t i = 0; reply->type == REDIS_REPLY_ARRAY && i + 1 < reply->elements &&
                           n + 2 <= 2 * 64 + 1;
             i += 2) {
            const redisReply *job = reply->element[i], *reserved = reply->element[i + 1];
            if (job->type != REDIS_REPLY_STRING || reserved->type != REDIS_REPLY_STRING)
                continue;
            parts[n] = job->str;
            lens[n++] = job->len;
            parts[n] = reserved->str;
            lens[n++] = reserved->len;
        }
        lua_pushboolean(L, 1);
        lua_setfield(L, -2, "ok");
        push_reply(L, reply, 1);
        lua_setfield(L, -2, "reply");
        lua_pushnumber(L, n > 1 ? send_batch(h, n, parts, lens) : 0);
        lua_setfield(L, -2, "batch");
    }
    h->prefetching = 0;
    if (h->prefetch_waiting) {
        h->prefetch_waiting = 0;
        lua_xmove(L, h->co, 1);
        host_resume(h, 1);
        return;
    }
    luaL_unref(L, LUA_REGISTRYINDEX, h->prefetch_ref);
    h->prefetch_ref = luaL_ref(L, LUA_REGISTRYINDEX);
}

/* host.prefetch(queue, nkeys, keys..., args...) -> true | false, message: queues
 * EVALSHA of scripts/pop.lua on the queue connection (taking at most 64 jobs) and
 * returns at once; host.prefetched waits for its reply. One at a time. */
static int l_host_prefetch(lua_State *L)
{
    struct host *h = host_of(L);
    size_t qlen;
    const char *q = luaL_checklstring(L, 1, &qlen);
    const struct script *sc = scripts_get(&h->scripts, "pop");
    if (h->prefetching || h->prefetch_ref != LUA_NOREF)
        return luaL_error(L, "host.prefetch: a prefetch is already under way");
    luaL_argcheck(L, qlen < sizeof h->prefetch_queue, 1, "queue name too long");
    char err[512];
    if (!sc || send_script(L, h->conns[HOST_QUEUE_CONN], sc, 2, on_prefetch, err, sizeof err)) {
        lua_pushboolean(L, 0);
        lua_pushstring(L, sc ? err : "no pop script");
        return 2;
    }
    memcpy(h->prefetch_queue, q, qlen + 1);
    h->prefetching = 1;
    lua_pushboolean(L, 1);
    return 1;
}

/* host.prefetched() -> the reply of the last host.prefetch, as {ok=true, reply=,
 * batch=} or {ok=false, message=, kind=}; nil when there is none. Yields until it
 * came. */
static int l_host_prefetched(lua_State *L)
{
    struct host *h = host_of(L);
    if (h->prefetch_ref != LUA_NOREF) {
        lua_rawgeti(L, LUA_REGISTRYINDEX, h->prefetch_ref);
        luaL_unref(L, LUA_REGISTRYINDEX, h->prefetch_ref);
        h->prefetch_ref = LUA_NOREF;
        return 1;
    }
    if (!h->prefetching)
        return 0;
    h->prefetch_waiting = 1;
    return yield_wait(L);
}

/* host.report_given_back(batch): tells the supervisor the jobs of that batch not
 * started went back to their queue (a 'G' frame). */
static int l_host_report_given_back(lua_State *L)
{
    struct host *h = host_of(L);
    uint32_t number = (uint32_t)luaL_checkinteger(L, 1);
    const char *body = (const char *)&number;
    size_t len = 4;
    if (h->supervisor_fd >= 0)
        supervisor_send(h->supervisor_fd, 'G', &body, &len, 1);
    return 0;
}

/* host.report_start(timeout, batch, index): job index (from 1) of that batch
 * started; the supervisor ends the process when it runs past timeout seconds (cut
 * to 0..UINT32_MAX, it comes from the payload; 0 = none). No system call. No-op
 * when not supervised. */
static int l_host_report_start(lua_State *L)
{
    struct host *h = host_of(L);
    lua_Number seconds = luaL_checknumber(L, 1);
    uint32_t timeout = !(seconds > 0) ? 0 : seconds >= (lua_Number)UINT32_MAX ? UINT32_MAX
                                                                             : (uint32_t)seconds;
    h->job_batch = (uint32_t)luaL_checkinteger(L, 2);
    h->job_index = (uint32_t)luaL_checkinteger(L, 3) - 1;
    if (h->slot)
        supervisor_slot_set(h->slot, h->job_batch, h->job_index, 1, timeout);
    return 0;
}

/* host.report_end(): the job started last ended. No system call. */
static int l_host_report_end(lua_State *L)
{
    struct host *h = host_of(L);
    if (h->slot)
        supervisor_slot_set(h->slot, h->job_batch, h->job_index, 0, 0);
    return 0;
}

/* host.report(type[, body]): sends a frame of that type ("R" ready, "X" exiting
 * with body = reason) to the supervisor. No-op when not supervised. */
static int l_host_report(lua_State *L)
{
    struct host *h = host_of(L);
    size_t tlen, len = 0;
    const char *type = luaL_checklstring(L, 1, &tlen);
    const char *body = luaL_optlstring(L, 2, "", &len);
    luaL_argcheck(L, tlen == 1, 1, "expected one character");
    if (h->supervisor_fd >= 0)
        supervisor_send(h->supervisor_fd, type[0], &body, &len, 1);
    return 0;
}

/* host.handover() -> a list of {kind, timeout, queue, payload, reserved} records
 * (see supervisor.h: kind "T", "D" or "G"), what the previous process left; nil
 * when it left nothing or the process is not supervised. Reads the supervisor's
 * first frame (blocking). */
static int l_host_handover(lua_State *L)
{
    struct host *h = host_of(L);
    char type;
    char *body;
    size_t len;
    if (h->supervisor_fd < 0 || supervisor_receive(h->supervisor_fd, &type, &body, &len))
        return 0;
    if (type != 'H') {
        free(body);
        return 0;
    }
    static const char *const fields[] = {"queue", "payload", "reserved"};
    lua_newtable(L);
    size_t off = 0;
    for (int n = 1; len - off >= 5; n++) {
        char kind = body[off];
        uint32_t timeout;
        memcpy(&timeout, body + off + 1, 4);
        size_t at = off + 5;
        lua_createtable(L, 0, 5);
        lua_pushlstring(L, &kind, 1);
        lua_setfield(L, -2, "kind");
        lua_pushnumber(L, timeout);
        lua_setfield(L, -2, "timeout");
        int whole = 1;
        for (int i = 0; i < 3 && whole; i++) {
            uint32_t plen;
            if (len - at < 4) {
                whole = 0;
                break;
            }
            memcpy(&plen, body + at, 4);
            if (plen > len - at - 4) {
                whole = 0;
                break;
            }
            lua_pushlstring(L, body + at + 4, plen);
            lua_setfield(L, -2, fields[i]);
            at += 4 + plen;
        }
        if (!whole) {
            lua_pop(L, 1);
            break;
        }
        lua_rawseti(L, -2, n);
        off = at;
    }
    free(body);
    return 1;
}

static void random_bytes(unsigned char *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(buf + got, n - got, 0);
        if (r > 0)
            got += (size_t)r;
    }
}

/* host.random_id(n) -> n random characters from [A-Za-z0-9] (Str::random). */
static int l_host_random_id(lua_State *L)
{
    static const char alphabet[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    int n = (int)luaL_checkinteger(L, 1);
    luaL_argcheck(L, n > 0 && n <= 256, 1, "expected 1 to 256");
    unsigned char raw[256];
    char out[256];
    random_bytes(raw, (size_t)n);
    for (int i = 0; i < n; i++)
        out[i] = alphabet[raw[i] % 62];
    lua_pushlstring(L, out, (size_t)n);
    return 1;
}

/* host.uuid() -> a random version 4 UUID, lowercase (Str::uuid). */
static int l_host_uuid(lua_State *L)
{
    unsigned char b[16];
    char out[37];
    random_bytes(b, sizeof b);
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, sizeof out,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
             b[13], b[14], b[15]);
    lua_pushstring(L, out);
    return 1;
}

/* host.rss_mb() -> resident memory of this process in MB, or nil. Keeps
 * /proc/self/statm open: one pread per call. */
static int l_host_rss_mb(lua_State *L)
{
    static int fd = -1;
    char buf[128];
    long size, resident;
    if (fd < 0)
        fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) {
        lua_pushnil(L);
        return 1;
    }
    buf[n] = '\0';
    if (sscanf(buf, "%ld %ld", &size, &resident) != 2) {
        lua_pushnil(L);
        return 1;
    }
    lua_pushnumber(L, (lua_Number)resident * (lua_Number)sysconf(_SC_PAGESIZE) / 1048576.0);
    return 1;
}

/* host.describe(conn) -> "host:port/db" of that connection (no password). */
static int l_host_describe(lua_State *L)
{
    struct host *h = host_of(L);
    lua_pushstring(L, redis_conn_describe(check_conn(L, h, 1)));
    return 1;
}

static const luaL_Reg host_functions[] = {
    {"command", l_host_command},
    {"script", l_host_script},
    {"send", l_host_send},
    {"flush", l_host_flush},
    {"send_errors", l_host_send_errors},
    {"sleep", l_host_sleep},
    {"wait_notify", l_host_wait_notify},
    {"subscribe_invalidations", l_host_subscribe_invalidations},
    {"subscribed", l_host_subscribed},
    {"connects", l_host_connects},
    {"take_invalidated", l_host_take_invalidated},
    {"now", l_host_now},
    {"clock", l_host_clock},
    {"microtime", l_host_microtime},
    {"signals", l_host_signals},
    {"supervised", l_host_supervised},
    {"report_batch", l_host_report_batch},
    {"report_given_back", l_host_report_given_back},
    {"prefetch", l_host_prefetch},
    {"prefetched", l_host_prefetched},
    {"report_start", l_host_report_start},
    {"report_end", l_host_report_end},
    {"report", l_host_report},
    {"handover", l_host_handover},
    {"random_id", l_host_random_id},
    {"uuid", l_host_uuid},
    {"rss_mb", l_host_rss_mb},
    {"describe", l_host_describe},
    {NULL, NULL},
};

static int luaopen_host(lua_State *L)
{
    lua_newtable(L);
    lua_pushvalue(L, lua_upvalueindex(1));
    luaL_setfuncs(L, host_functions, 1);
    lua_pushlightuserdata(L, &wait_marker);
    lua_setfield(L, -2, "WAIT");
    return 1;
}

void host_api_register(struct host *h)
{
    lua_State *L = h->L;
    lua_getglobal(L, "package");
    lua_getfield(L, -1, "preload");
    lua_pushlightuserdata(L, h);
    lua_pushcclosure(L, luaopen_host, 1);
    lua_setfield(L, -2, "luaworker.host");
    lua_pop(L, 2);
}
