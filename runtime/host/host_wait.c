#include "host/host_wait.h"

#include <math.h>
#include <stdio.h>

#include "host/host_redis.h"
#include "host/lua_host.h"
#include "redis/redis_conn.h"
#include "redis/redis_sub.h"

/* Timers (host.sleep, host.timer): each a waiter in h->waits while it runs. */
static void remove_timer(struct host_waiter *w)
{
    ev_timer_stop(w->h->loop, &w->timer);
    host_waiter_unlink(w);
}

static void cancel_timer(struct host_waiter *w)
{
    remove_timer(w);
    host_waiter_give(w);
}

/* Ends timer w: the task waiting for its ticket gets fired (true: the time passed;
 * false: a signal ended it early). */
static void end_timer(struct host_waiter *w, int fired)
{
    struct host *h = w->h;
    double ticket = w->ticket;
    remove_timer(w);
    host_waiter_give(w);
    lua_pushboolean(h->co, fired);
    host_resume(h, ticket, 1);
}

static void on_timer(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    end_timer(t->data, 1);
}

/* Starts a timer of seconds; pushes nothing. Returns it, or raises. */
static struct host_waiter *start_timer(lua_State *L, struct host *h, double seconds, int wakeable)
{
    struct host_waiter *w = host_waiter_take(h);
    if (!w)
        luaL_error(L, "out of memory");
    ev_timer_init(&w->timer, on_timer, seconds, 0.);
    w->timer.data = w;
    w->wakeable = wakeable;
    w->cancel = cancel_timer;
    host_waiter_link(w);
    ev_timer_start(h->loop, &w->timer);
    return w;
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
    redis_conn_command(h->conns[HOST_QUEUE_CONN], 0, 3, argv, argvlen, on_ignored_reply, h, err,
                       sizeof err);
}

static void on_block_client_id(void *data, const redisReply *reply, const char *lost,
                               enum redis_conn_loss loss)
{
    (void)lost;
    (void)loss;
    struct host *h = data;
    if (reply && reply->type == REDIS_REPLY_INTEGER)
        h->block_client_id = reply->integer;
    if (h->unblock_wanted)
        unblock_wait(h);
}

static void on_block_reply(void *data, const redisReply *reply, const char *lost,
                           enum redis_conn_loss loss)
{
    struct host *h = data;
    h->blocking = 0;
    h->unblock_wanted = 0;
    ev_timer_stop(h->loop, &h->wait_timer);
    host_redis_resume_ticket(h, HOST_BLOCK_TICKET, reply, lost, loss);
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
    struct host *h = host_of(L);
    host_check_wait(L);
    double seconds = luaL_checknumber(L, 1);
    int exact = lua_toboolean(L, 2);
    luaL_checkstring(L, 3);
    if (h->blocking)
        return luaL_error(L, "host.wait_notify: already waiting");
    /* a change came in since the caller looked, or a stop or reload signal did (it
     * would have ended the wait): no wait */
    if (h->invalidated || h->quit || h->reload) {
        lua_pushboolean(L, 1);
        lua_pushnil(L);
        return 2;
    }
    const char *argv[HOST_MAX_COMMAND_ARGS];
    size_t argvlen[HOST_MAX_COMMAND_ARGS];
    int nkeys = lua_gettop(L) - 2;
    if (nkeys + 2 > HOST_MAX_COMMAND_ARGS)
        return luaL_error(L, "host.wait_notify: too many keys (%d)", nkeys);
    argv[0] = "BLPOP";
    argvlen[0] = 5;
    host_redis_args(L, 3, argv + 1, argvlen + 1);
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
    if (redis_conn_command(c, 0, 2, id_argv, id_argvlen, on_block_client_id, h, err, sizeof err) ||
        redis_conn_command(c, 0, nkeys + 2, argv, argvlen, on_block_reply, h, err, sizeof err))
        return host_redis_unreachable(L, err);
    h->blocking = 1;
    if (seconds >= 0 && exact > 0) {
        ev_timer_init(&h->wait_timer, on_wait_timer, seconds, 0.);
        h->wait_timer.data = h;
        ev_timer_start(h->loop, &h->wait_timer);
    }
    return host_yield(L, HOST_BLOCK_TICKET);
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

/* host.take_invalidated() -> whether an invalidation message came since the last
 * call; clears the flag. */
static int l_host_take_invalidated(lua_State *L)
{
    struct host *h = host_of(L);
    lua_pushboolean(L, h->invalidated);
    h->invalidated = 0;
    return 1;
}

/* After a signal: ends the host.wait_notify under way (which then returns nil) and
 * every wakeable sleep (each gets false). */
static void wake(struct host *h)
{
    if (h->blocking)
        unblock_wait(h);
    /* each resume may start or end timers: look again from the start after each */
    for (;;) {
        struct host_waiter *w = h->waits;
        while (w && !w->wakeable)
            w = w->next;
        if (!w || h->finished)
            return;
        end_timer(w, 0);
    }
}

void host_wait_attach(struct host *h)
{
    h->wake = wake;
}

/* host.sleep(seconds, wakeable) -> true when the time passed, false when a stop
 * signal (or CONT, HUP) ended it early, which only a wakeable sleep allows.
 * Returns at once for seconds <= 0. */
static int l_host_sleep(lua_State *L)
{
    struct host *h = host_of(L);
    host_check_wait(L);
    double seconds = luaL_checknumber(L, 1);
    if (!(seconds > 0)) {
        lua_pushboolean(L, 1);
        return 1;
    }
    return host_yield(L, start_timer(L, h, seconds, lua_toboolean(L, 2))->ticket);
}

/* host.timer(seconds) -> ticket, handle: starts a timer without waiting for it;
 * when it fires, the loop brings its ticket (and true) to the scheduler (see
 * task.lua). Signals do not end it. handle makes host.cancel find it at once. */
static int l_host_timer(lua_State *L)
{
    struct host *h = host_of(L);
    double seconds = luaL_checknumber(L, 1);
    struct host_waiter *w = start_timer(L, h, seconds > 0 ? seconds : 0., 0);
    lua_pushnumber(L, w->ticket);
    lua_pushlightuserdata(L, w);
    return 2;
}

/* host.cancel(ticket[, handle]) -> whether a wait that can be cancelled (a timer of
 * host.sleep or host.timer, a request of host.http_request) had that ticket: it is
 * ended, and its ticket never comes. handle (from host.timer) spares the search.
 * Other waits (Redis commands) cannot be: their ticket comes, for nobody. */
static int l_host_cancel(lua_State *L)
{
    struct host *h = host_of(L);
    double ticket = luaL_checknumber(L, 1);
    struct host_waiter *w = lua_touserdata(L, 2);
    /* a handle whose waiter was given back since may hold another wait now */
    if (!w || w->ticket != ticket || !w->cancel)
        for (w = h->waits; w && w->ticket != ticket; w = w->next)
            ;
    if (w)
        w->cancel(w);
    lua_pushboolean(L, w != NULL);
    return 1;
}

/* host.allow_waits(co): lets coroutine co wait for the loop (host_check_wait); for
 * the coroutines of luaworker's tasks (task.lua). */
static int l_host_allow_waits(lua_State *L)
{
    struct host *h = host_of(L);
    luaL_checktype(L, 1, LUA_TTHREAD);
    if (h->waiters_ref == LUA_NOREF) {
        lua_newtable(L);
        lua_createtable(L, 0, 1);
        lua_pushliteral(L, "k");
        lua_setfield(L, -2, "__mode");
        lua_setmetatable(L, -2);
        h->waiters_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, h->waiters_ref);
    lua_pushvalue(L, 1);
    lua_pushboolean(L, 1);
    lua_rawset(L, -3);
    return 0;
}

/* host.signals() -> quit, paused, reload: the stop signal that arrived (its number)
 * or false, whether
 * USR2 paused the worker (and CONT has not resumed it), whether HUP asked for a
 * reload. */
static int l_host_signals(lua_State *L)
{
    struct host *h = host_of(L);
    if (h->quit)
        lua_pushinteger(L, h->quit);
    else
        lua_pushboolean(L, 0);
    lua_pushboolean(L, h->paused);
    lua_pushboolean(L, h->reload);
    return 3;
}

const luaL_Reg host_wait_functions[] = {
    {"sleep", l_host_sleep},
    {"timer", l_host_timer},
    {"cancel", l_host_cancel},
    {"allow_waits", l_host_allow_waits},
    {"wait_notify", l_host_wait_notify},
    {"subscribe_invalidations", l_host_subscribe_invalidations},
    {"subscribed", l_host_subscribed},
    {"take_invalidated", l_host_take_invalidated},
    {"signals", l_host_signals},
    {NULL, NULL},
};
