#include "redis/idle_wait.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <lauxlib.h>

#include "loop/signal_arrival.h"
#include "loop/vm.h"
#include "redis/key_slot.h"
#include "redis/redis_binding.h"
#include "redis/redis_client.h"
#include "redis/redis_sub.h"

/* The ticket of host.wait_notify's wait, one at a time (below
 * VM_FIRST_WAITER_TICKET; redis_binding has 2). */
enum { BLOCK_TICKET = 1 };

/* The wait's state (one vm a process). */
static struct {
    ev_timer wait_timer;            /* ends the BLPOP at its deadline */
    int blocking;                   /* a BLPOP is in flight */
    int unblock_wanted;             /* end it as soon as its client id is known */
    long long block_client_id;      /* CLIENT ID of the block connection, 0 until known */
    struct redis_sub *sub;          /* listens to __redis__:invalidate, or NULL */
    int invalidated;                /* an invalidation came since host.take_invalidated */
    char key[512];                  /* the BLPOP's first key: where it waits */
    size_t keylen;
} iw;

/* On a cluster, a BLPOP waits on the keys of one slot: a wait on keys of other
 * slots too ends after this long at most, for the worker to look at them. */
#define OTHER_SLOTS_WAIT 1.0

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
    if (!iw.blocking || h->closing)
        return;
    if (iw.block_client_id <= 0) {
        iw.unblock_wanted = 1;
        return;
    }
    char id[32], err[256];
    int n = snprintf(id, sizeof id, "%lld", iw.block_client_id);
    const char *argv[] = {"CLIENT", "UNBLOCK", id};
    size_t argvlen[] = {6, 7, (size_t)n};
    iw.unblock_wanted = 0;
    /* when this cannot be sent, the BLPOP's own timeout ends the wait */
    redis_client_command_at(redis_binding_conn(REDIS_BINDING_QUEUE), iw.key, iw.keylen, 0, 3, argv,
                            argvlen, on_ignored_reply, h, err, sizeof err);
}

static void on_block_client_id(void *data, const redisReply *reply, const char *lost,
                               enum redis_conn_loss loss)
{
    (void)lost;
    (void)loss;
    struct vm *h = data;
    if (reply && reply->type == REDIS_REPLY_INTEGER)
        iw.block_client_id = reply->integer;
    if (iw.unblock_wanted)
        unblock_wait(h);
}

static void on_block_reply(void *data, const redisReply *reply, const char *lost,
                           enum redis_conn_loss loss)
{
    struct vm *h = data;
    iw.blocking = 0;
    iw.unblock_wanted = 0;
    ev_timer_stop(h->loop, &iw.wait_timer);
    redis_binding_resume(h, BLOCK_TICKET, reply, lost, loss);
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
    int quit, paused, reload;
    signal_arrival_read(&quit, &paused, &reload);
    int exact = lua_toboolean(L, 2);
    luaL_checkstring(L, 3);
    if (iw.blocking)
        return luaL_error(L, "host.wait_notify: already waiting");
    /* a change came in since the caller looked, or a stop or reload signal did (it
     * would have ended the wait): no wait */
    if (iw.invalidated || quit || reload) {
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
    redis_binding_args(L, 3, argv + 1, argvlen + 1);
    struct redis_client *c = redis_binding_conn(REDIS_BINDING_BLOCK);
    /* (only a cluster routes by it: one server takes any length) */
    iw.keylen = argvlen[1] < sizeof iw.key ? argvlen[1] : 0;
    memcpy(iw.key, argv[1], iw.keylen);
    if (redis_client_is_cluster(c)) {
        if (iw.keylen == 0)
            return luaL_argerror(L, 3, "key too long for a cluster's wait");
        /* one slot's keys (CROSSSLOT otherwise), the first key's */
        int slot = key_slot(argv[1], argvlen[1]), kept = 1;
        for (int i = 2; i <= nkeys; i++) {
            if (key_slot(argv[i], argvlen[i]) == slot) {
                argv[kept + 1] = argv[i];
                argvlen[kept + 1] = argvlen[i];
                kept++;
            }
        }
        if (kept < nkeys && (seconds < 0 || seconds > OTHER_SLOTS_WAIT)) {
            seconds = OTHER_SLOTS_WAIT;
            exact = 1;
        }
        nkeys = kept;
        redis_client_pin(c, iw.key, iw.keylen);
    }
    if (seconds >= 0 && !exact)
        exact = seconds >= 1 && seconds < 1e9 && seconds == floor(seconds) ? -1 /* Redis' timeout */ : 1;
    /* with the timer, Redis' own timeout only backs it up: a whole second past it */
    char timeout[32];
    int tn = snprintf(timeout, sizeof timeout, "%.0f",
                      seconds < 0 ? 0. : exact < 0 ? seconds : ceil(seconds) + 1.);
    argv[nkeys + 1] = timeout;
    argvlen[nkeys + 1] = (size_t)tn;

    const char *id_argv[] = {"CLIENT", "ID"};
    size_t id_argvlen[] = {6, 2};
    char err[512];
    iw.block_client_id = 0;
    iw.unblock_wanted = 0;
    if (redis_client_command(c, 0, 2, id_argv, id_argvlen, on_block_client_id, h, err, sizeof err) ||
        redis_client_command(c, 0, nkeys + 2, argv, argvlen, on_block_reply, h, err, sizeof err))
        return redis_binding_unreachable(L, err);
    iw.blocking = 1;
    if (seconds >= 0 && exact > 0) {
        ev_timer_init(&iw.wait_timer, on_wait_timer, seconds, 0.);
        iw.wait_timer.data = h;
        vm_timer_start(h, &iw.wait_timer);
    }
    return vm_yield(L, BLOCK_TICKET);
}

static void on_invalidation(void *data)
{
    struct vm *h = data;
    iw.invalidated = 1;
    unblock_wait(h);
}

static void on_subscription_lost(void *data)
{
    (void)data;
}

/* host.subscribe_invalidations(key) -> true, client id | false, message, kind
 * ("reply" when Redis refused a step, "connection" when it could not be reached).
 * Subscribes a connection of its own to __redis__:invalidate on the server that
 * holds key (on a cluster, the block connection's keyless commands go there too
 * from now on: its CLIENT TRACKING), blocking, at most a second per step; CLIENT
 * TRACKING ... REDIRECT <client id> sends its messages there: each ends a
 * host.wait_notify, or the next one, and sets the flag host.take_invalidated
 * reads. An earlier subscription is closed first. */
static int l_host_subscribe_invalidations(lua_State *L)
{
    struct vm *h = vm_of(L);
    size_t keylen;
    const char *key = luaL_checklstring(L, 1, &keylen);
    char err[600];
    long long id = 0;
    int refused;
    struct redis_client *block = redis_binding_conn(REDIS_BINDING_BLOCK);
    redis_client_pin(block, key, keylen);
    redis_sub_close(iw.sub);
    iw.sub = redis_sub_open(h->loop, redis_client_settings(block), "__redis__:invalidate", 1.0,
                            on_invalidation, on_subscription_lost, h, &id, &refused, err,
                            sizeof err);
    if (!iw.sub) {
        return vm_push_error(L, err, refused ? "reply" : "connection");
    }
    lua_pushboolean(L, 1);
    lua_pushnumber(L, (lua_Number)id);
    return 2;
}

/* host.subscribed() -> whether the subscription of host.subscribe_invalidations
 * still holds. */
static int l_host_subscribed(lua_State *L)
{
    lua_pushboolean(L, redis_sub_alive(iw.sub));
    return 1;
}

/* host.take_invalidated() -> whether an invalidation message came since the last
 * call; clears the flag. */
static int l_host_take_invalidated(lua_State *L)
{
    lua_pushboolean(L, iw.invalidated);
    iw.invalidated = 0;
    return 1;
}

static const luaL_Reg functions[] = {
    {"wait_notify", l_host_wait_notify},
    {"subscribe_invalidations", l_host_subscribe_invalidations},
    {"subscribed", l_host_subscribed},
    {"take_invalidated", l_host_take_invalidated},
    {NULL, NULL},
};

/* After a signal: ends the host.wait_notify under way (which then returns nil). */
static void wake(struct vm *h)
{
    if (iw.blocking)
        unblock_wait(h);
}

static void close_wait(void *data)
{
    struct vm *h = data;
    if (h->loop)
        ev_timer_stop(h->loop, &iw.wait_timer);
    redis_sub_close(iw.sub);
    iw.sub = NULL;
}

void idle_wait_register(struct vm *h)
{
    vm_add_functions(h, functions);
    vm_on_wake(h, wake);
    vm_on_close(h, close_wait, h);
}
