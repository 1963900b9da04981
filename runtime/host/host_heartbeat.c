#include "host/host_heartbeat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/host_system.h"
#include "host/lua_host.h"
#include "redis/redis_conn.h"

/* A heartbeat sent at `sent` was confirmed now: it extends the current run of
 * confirmations when the last one is less than the lease ago, else starts a new run. */
static void confirm(struct host *h, double sent)
{
    double now = host_system_clock();
    if (h->lease_confirmed <= 0 || now - h->lease_confirmed >= h->lease)
        h->lease_since = sent;
    if (sent > h->lease_confirmed)
        h->lease_confirmed = sent;
}

static void on_beat_reply(void *data, const redisReply *reply, const char *lost,
                          enum redis_conn_loss loss)
{
    (void)lost;
    (void)loss;
    struct host *h = data;
    if (h->closing)
        return;
    if (!reply || reply->type == REDIS_REPLY_ERROR)
        h->heartbeat_round_ok = 0;
    if (--h->heartbeat_pending == 0 && h->heartbeat_round_ok)
        confirm(h, h->heartbeat_sent);
}

/* One round: SET of each key, unless the last round is still unanswered. */
static void beat(struct host *h)
{
    if (h->heartbeat_pending > 0)
        return;
    h->heartbeat_sent = host_system_clock();
    h->heartbeat_round_ok = 1;
    for (int i = 0; i < h->heartbeat_keys; i++) {
        const char *argv[5] = {"SET", h->heartbeat_argv[i], h->heartbeat_argv[h->heartbeat_keys],
                               "PX", h->heartbeat_argv[h->heartbeat_keys + 1]};
        size_t argvlen[5];
        for (int k = 0; k < 5; k++)
            argvlen[k] = strlen(argv[k]);
        char err[256];
        if (redis_conn_command(h->conns[HOST_QUEUE_CONN], 0, 5, argv, argvlen, on_beat_reply, h,
                               err, sizeof err) == 0)
            h->heartbeat_pending++;
        else
            h->heartbeat_round_ok = 0;
    }
}

static void on_beat_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    beat(w->data);
}

static void clear(struct host *h)
{
    if (ev_is_active(&h->heartbeat_timer)) {
        ev_ref(h->loop);
        ev_timer_stop(h->loop, &h->heartbeat_timer);
    }
    for (int i = 0; h->heartbeat_argv && i < h->heartbeat_keys + 2; i++)
        free(h->heartbeat_argv[i]);
    free(h->heartbeat_argv);
    h->heartbeat_argv = NULL;
    h->heartbeat_keys = 0;
}

/* host.heartbeat(interval, ttl_ms, lease, value, key...): from now on, every
 * interval seconds, SET each key to value with PX ttl_ms on the queue connection (a
 * round; skipped while the last one is unanswered); each confirmed round holds the
 * lease for lease seconds. Replaces an earlier heartbeat. Strings only (value and
 * keys are copied). */
static int l_host_heartbeat(lua_State *L)
{
    struct host *h = host_of(L);
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
    h->lease = lease;
    clear(h);
    /* keys, then the value, then the ttl */
    char **argv = calloc((size_t)nkeys + 2, sizeof *argv);
    if (!argv)
        return luaL_error(L, "out of memory");
    h->heartbeat_argv = argv;
    h->heartbeat_keys = nkeys;
    char ms[32];
    snprintf(ms, sizeof ms, "%lld", (long long)ttl);
    for (int i = 0; i < nkeys + 2; i++) {
        const char *s = i < nkeys ? lua_tostring(L, 4 + i) : i == nkeys ? lua_tostring(L, 3) : ms;
        if (!(argv[i] = strdup(s))) {
            clear(h);
            return luaL_error(L, "out of memory");
        }
    }
    ev_timer_init(&h->heartbeat_timer, on_beat_timer, interval, interval);
    h->heartbeat_timer.data = h;
    ev_timer_start(h->loop, &h->heartbeat_timer);
    ev_unref(h->loop);  /* the heartbeat alone does not keep the loop running */
    return 0;
}

/* host.heartbeat_stop(): no more rounds. */
static int l_host_heartbeat_stop(lua_State *L)
{
    clear(host_of(L));
    return 0;
}

/* host.heartbeat_note(sent): a pop sent at host.clock() time `sent`, which set the
 * heartbeat, was confirmed now. */
static int l_host_heartbeat_note(lua_State *L)
{
    confirm(host_of(L), luaL_checknumber(L, 1));
    return 0;
}

/* host.lease() -> the host.clock() time since which the lease has been held
 * without a break, or nil when it is not held now (no heartbeat confirmed within
 * the lease). What was reserved after that time is still this worker's. */
static int l_host_lease(lua_State *L)
{
    struct host *h = host_of(L);
    if (h->lease_confirmed <= 0 || host_system_clock() - h->lease_confirmed >= h->lease)
        return 0;
    lua_pushnumber(L, h->lease_since);
    return 1;
}

const luaL_Reg host_heartbeat_functions[] = {
    {"heartbeat", l_host_heartbeat},
    {"heartbeat_stop", l_host_heartbeat_stop},
    {"heartbeat_note", l_host_heartbeat_note},
    {"lease", l_host_lease},
    {NULL, NULL},
};
