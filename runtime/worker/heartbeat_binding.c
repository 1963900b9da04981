#include "worker/heartbeat_binding.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loop/system.h"
#include "loop/vm.h"
#include "redis/redis_binding.h"
#include "redis/redis_client.h"

/* The heartbeat's state (one vm a process); times are system_clock(), those named
 * _wall system_wall_clock(). */
static struct {
    ev_timer timer;
    char **argv;                    /* the keys, the value, the ttl in ms; owned */
    int keys;
    int pending;                    /* replies of the round in flight */
    int round_ok;
    double sent, sent_wall;         /* when the round in flight was sent */
    double lease;                   /* seconds a confirmed heartbeat holds the lease */
    double lease_confirmed;         /* when the last confirmed heartbeat was sent */
    double lease_confirmed_wall;
    double lease_since;             /* when the first of an unbroken run of them was */
} hb;

/* Whether the lease has lapsed: no heartbeat confirmed, or the last one sent a
 * lease ago or more by either clock (a wall clock set back counts for nothing). */
static int lease_lapsed(void)
{
    return hb.lease_confirmed <= 0 || system_clock() - hb.lease_confirmed >= hb.lease ||
           system_wall_clock() - hb.lease_confirmed_wall >= hb.lease;
}

/* A heartbeat sent at `sent` (`sent_wall` by the wall clock) was confirmed now: it
 * extends the current run of confirmations unless the lease lapsed, else starts a
 * new run. */
static void confirm(double sent, double sent_wall)
{
    if (lease_lapsed())
        hb.lease_since = sent;
    if (sent > hb.lease_confirmed) {
        hb.lease_confirmed = sent;
        hb.lease_confirmed_wall = sent_wall;
    }
}

static void on_beat_reply(void *data, const redisReply *reply, const char *lost,
                          enum redis_conn_loss loss)
{
    (void)lost;
    (void)loss;
    struct vm *h = data;
    if (h->closing)
        return;
    if (!reply || reply->type == REDIS_REPLY_ERROR)
        hb.round_ok = 0;
    if (--hb.pending == 0 && hb.round_ok)
        confirm(hb.sent, hb.sent_wall);
}

/* One round: SET of each key, unless the last round is still unanswered. */
static void beat(struct vm *h)
{
    if (hb.pending > 0)
        return;
    hb.sent = system_clock();
    hb.sent_wall = system_wall_clock();
    hb.round_ok = 1;
    for (int i = 0; i < hb.keys; i++) {
        const char *argv[5] = {"SET", hb.argv[i], hb.argv[hb.keys],
                               "PX", hb.argv[hb.keys + 1]};
        size_t argvlen[5];
        for (int k = 0; k < 5; k++)
            argvlen[k] = strlen(argv[k]);
        char err[256];
        if (redis_client_command(redis_binding_conn(REDIS_BINDING_QUEUE), 0, 5, argv, argvlen, on_beat_reply, h,
                               err, sizeof err) == 0)
            hb.pending++;
        else
            hb.round_ok = 0;
    }
}

static void on_beat_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    beat(w->data);
}

static void clear(struct vm *h)
{
    if (ev_is_active(&hb.timer)) {
        ev_ref(h->loop);
        ev_timer_stop(h->loop, &hb.timer);
    }
    for (int i = 0; hb.argv && i < hb.keys + 2; i++)
        free(hb.argv[i]);
    free(hb.argv);
    hb.argv = NULL;
    hb.keys = 0;
}

/* host.heartbeat(interval, ttl_ms, lease, value, key...): from now on, every
 * interval seconds, SET each key to value with PX ttl_ms on the queue connection (a
 * round; skipped while the last one is unanswered); each confirmed round holds the
 * lease for lease seconds. Replaces an earlier heartbeat. Strings only (value and
 * keys are copied). */
static int l_host_heartbeat(lua_State *L)
{
    struct vm *h = vm_of(L);
    double interval = luaL_checknumber(L, 1);
    lua_Integer ttl = luaL_checkinteger(L, 2);
    double lease = luaL_checknumber(L, 3);
    luaL_checkstring(L, 4);
    int nkeys = lua_gettop(L) - 4;
    luaL_argcheck(L, interval > 0, 1, "expected seconds > 0");
    luaL_argcheck(L, ttl > 0, 2, "expected milliseconds > 0");
    luaL_argcheck(L, lease > 0 && lease * 1000 < (double)ttl, 3, "expected seconds > 0, below the TTL");
    luaL_argcheck(L, nkeys > 0, 5, "expected a key");
    for (int i = 0; i < nkeys; i++)
        luaL_checkstring(L, 5 + i);
    lua_remove(L, 3);
    hb.lease = lease;
    clear(h);
    /* keys, then the value, then the ttl */
    char **argv = calloc((size_t)nkeys + 2, sizeof *argv);
    if (!argv)
        return luaL_error(L, "out of memory");
    hb.argv = argv;
    hb.keys = nkeys;
    char ms[32];
    snprintf(ms, sizeof ms, "%lld", (long long)ttl);
    for (int i = 0; i < nkeys + 2; i++) {
        const char *s = i < nkeys ? lua_tostring(L, 4 + i) : i == nkeys ? lua_tostring(L, 3) : ms;
        if (!(argv[i] = strdup(s))) {
            clear(h);
            return luaL_error(L, "out of memory");
        }
    }
    ev_timer_init(&hb.timer, on_beat_timer, interval, interval);
    hb.timer.data = h;
    ev_timer_start(h->loop, &hb.timer);
    ev_unref(h->loop);  /* the heartbeat alone does not keep the loop running */
    return 0;
}

/* host.heartbeat_stop(): no more rounds. */
static int l_host_heartbeat_stop(lua_State *L)
{
    clear(vm_of(L));
    return 0;
}

/* host.heartbeat_note(sent, sent_wall): a pop sent at host.clock() time `sent`
 * (host.microtime() `sent_wall`), which set the heartbeat, was confirmed now. */
static int l_host_heartbeat_note(lua_State *L)
{
    confirm(luaL_checknumber(L, 1), luaL_checknumber(L, 2));
    return 0;
}

/* host.lease() -> the host.clock() time since which the lease has been held
 * without a break, or nil when it is not held now (it lapsed: see lease_lapsed).
 * What was reserved after that time is still this worker's. */
static int l_host_lease(lua_State *L)
{
    if (lease_lapsed())
        return 0;
    lua_pushnumber(L, hb.lease_since);
    return 1;
}

static const luaL_Reg functions[] = {
    {"heartbeat", l_host_heartbeat},
    {"heartbeat_stop", l_host_heartbeat_stop},
    {"heartbeat_note", l_host_heartbeat_note},
    {"lease", l_host_lease},
    {NULL, NULL},
};

static void close_binding(void *data)
{
    struct vm *h = data;
    if (h->loop && ev_is_active(&hb.timer)) {
        ev_ref(h->loop);  /* host.heartbeat unref'd it */
        ev_timer_stop(h->loop, &hb.timer);
    }
    for (int i = 0; hb.argv && i < hb.keys + 2; i++)
        free(hb.argv[i]);
    free(hb.argv);
    hb.argv = NULL;
}

void heartbeat_binding_register(struct vm *h)
{
    vm_add_functions(h, functions);
    vm_on_close(h, close_binding, h);
}
