#include "loop/waits.h"

#include <math.h>
#include <stdio.h>

#include "loop/signal_arrival.h"
#include "loop/vm.h"

/* Timers (host.sleep, host.timer): each a waiter in h->waits while it runs. */
static void remove_timer(struct vm_waiter *w)
{
    ev_timer_stop(w->h->loop, &w->timer);
    vm_waiter_unlink(w);
}

static void cancel_timer(struct vm_waiter *w)
{
    remove_timer(w);
    vm_waiter_give(w);
}

/* Ends timer w: the task waiting for its ticket gets fired (true: the time passed;
 * false: a signal ended it early). */
static void end_timer(struct vm_waiter *w, int fired)
{
    struct vm *h = w->h;
    double ticket = w->ticket;
    remove_timer(w);
    vm_waiter_give(w);
    lua_pushboolean(h->co, fired);
    vm_resume(h, ticket, 1);
}

static void on_timer(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    end_timer(t->data, 1);
}

/* Starts a timer of seconds; pushes nothing. Returns it, or raises. */
static struct vm_waiter *start_timer(lua_State *L, struct vm *h, double seconds, int wakeable)
{
    struct vm_waiter *w = vm_waiter_take(h);
    if (!w)
        luaL_error(L, "out of memory");
    ev_timer_init(&w->timer, on_timer, seconds, 0.);
    w->timer.data = w;
    w->wakeable = wakeable;
    w->cancel = cancel_timer;
    vm_waiter_link(w);
    vm_timer_start(h, &w->timer);
    return w;
}

/* After a signal: ends every wakeable wait under way when it came, a sleep (it gets
 * false) or a wait with a deadline (as its deadline would end it). A wait the
 * resumed tasks start meanwhile is not ended: a task that sleeps again at once
 * (a handler looping on luaworker.sleep) sleeps. */
static void wake(struct vm *h)
{
    struct vm_waiter *w;
    LIST_FOREACH(w, &h->waits, link)
        w->waking = w->wakeable;
    /* each resume may start or end waits: look again from the start after each */
    for (;;) {
        LIST_FOREACH(w, &h->waits, link)
            if (w->waking)
                break;
        if (!w || h->finished)
            return;
        w->waking = 0;
        if (w->expire)
            vm_waiter_expire(w);
        else
            end_timer(w, 0);
    }
}


/* host.sleep(seconds, wakeable) -> true when the time passed, false when a stop
 * signal (or CONT, HUP) ended it early, which only a wakeable sleep allows.
 * Returns at once for seconds <= 0. */
static int l_host_sleep(lua_State *L)
{
    struct vm *h = vm_of(L);
    vm_check_wait(L);
    double seconds = luaL_checknumber(L, 1);
    if (!(seconds > 0)) {
        lua_pushboolean(L, 1);
        return 1;
    }
    return vm_yield(L, start_timer(L, h, seconds, lua_toboolean(L, 2))->ticket);
}

/* host.timer(seconds) -> ticket, handle: starts a timer without waiting for it;
 * when it fires, the loop brings its ticket (and true) to the scheduler (see
 * task.lua). Signals do not end it. handle makes host.cancel find it at once. */
static int l_host_timer(lua_State *L)
{
    struct vm *h = vm_of(L);
    double seconds = luaL_checknumber(L, 1);
    struct vm_waiter *w = start_timer(L, h, seconds > 0 ? seconds : 0., 0);
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
    struct vm *h = vm_of(L);
    double ticket = luaL_checknumber(L, 1);
    struct vm_waiter *w = lua_touserdata(L, 2);
    /* a handle whose waiter was given back since may hold another wait now */
    if (!w || w->ticket != ticket || !w->cancel)
        LIST_FOREACH(w, &h->waits, link)
            if (w->ticket == ticket)
                break;
    if (w)
        w->cancel(w);
    lua_pushboolean(L, w != NULL);
    return 1;
}

/* host.check_wait(): raises, as every function that waits does, unless the calling
 * coroutine may wait for the loop (see vm_check_wait). */
static int l_host_check_wait(lua_State *L)
{
    return vm_check_wait(L);
}

/* host.allow_waits(co): lets coroutine co wait for the loop (vm_check_wait); for
 * the coroutines of luaworker's tasks (task.lua). */
static int l_host_allow_waits(lua_State *L)
{
    struct vm *h = vm_of(L);
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
 * or false, whether USR2 paused the worker (and CONT has not resumed it), whether
 * HUP asked for a reload; each as it arrived, before the loop dispatches it
 * (signal_arrival.h): one that came while a handler kept the CPU is seen as that
 * job ends, before another starts. */
static int l_host_signals(lua_State *L)
{
    int quit, paused, reload;
    signal_arrival_read(&quit, &paused, &reload);
    if (quit)
        lua_pushinteger(L, quit);
    else
        lua_pushboolean(L, 0);
    lua_pushboolean(L, paused);
    lua_pushboolean(L, reload);
    return 3;
}

static const luaL_Reg functions[] = {
    {"sleep", l_host_sleep},
    {"timer", l_host_timer},
    {"cancel", l_host_cancel},
    {"allow_waits", l_host_allow_waits},
    {"check_wait", l_host_check_wait},
    {"signals", l_host_signals},
    {NULL, NULL},
};

void waits_register(struct vm *h)
{
    vm_add_functions(h, functions);
    vm_on_wake(h, wake);
}
