#include "worker/heartbeat_binding.h"

#include "loop/vm.h"
#include "worker/lease_keeper.h"

/* host.heartbeat(interval, ttl_ms, lease, value, key...): from now on, every
 * interval seconds, SET each key to value with PX ttl_ms (a round; skipped while the
 * last one is unanswered), from lease_keeper's thread and connection to the queue's
 * Redis; each confirmed round holds the lease for lease seconds. Replaces an earlier
 * heartbeat. Strings only (value and keys are copied). */
static int l_host_heartbeat(lua_State *L)
{
    struct vm *h = vm_of(L);
    double interval = luaL_checknumber(L, 1);
    lua_Integer ttl = luaL_checkinteger(L, 2);
    double lease = luaL_checknumber(L, 3);
    const char *value = luaL_checkstring(L, 4);
    int nkeys = lua_gettop(L) - 4;
    luaL_argcheck(L, interval > 0, 1, "expected seconds > 0");
    luaL_argcheck(L, ttl > 0, 2, "expected milliseconds > 0");
    luaL_argcheck(L, lease > 0 && lease * 1000 < (double)ttl, 3, "expected seconds > 0, below the TTL");
    luaL_argcheck(L, nkeys > 0 && nkeys <= 1024, 5, "expected 1 to 1024 keys");
    const char *keys[1024];
    for (int i = 0; i < nkeys; i++)
        keys[i] = luaL_checkstring(L, 5 + i);
    char err[256];
    if (lease_keeper_start(&h->config.queue, err, sizeof err) != 0)
        return luaL_error(L, "%s", err);
    if (lease_keeper_beat(interval, (long long)ttl, lease, value, keys, nkeys) != 0)
        return luaL_error(L, "out of memory");
    return 0;
}

/* host.heartbeat_stop(): no more rounds. */
static int l_host_heartbeat_stop(lua_State *L)
{
    (void)L;
    lease_keeper_beat_stop();
    return 0;
}

/* host.heartbeat_note(sent, sent_wall): a pop sent at host.clock() time `sent`
 * (host.microtime() `sent_wall`), which set the heartbeat, was confirmed now. */
static int l_host_heartbeat_note(lua_State *L)
{
    lease_keeper_confirm(luaL_checknumber(L, 1), luaL_checknumber(L, 2));
    return 0;
}

/* host.lease() -> the host.clock() time since which the lease has been held
 * without a break, or nil when it is not held now. What was reserved after that
 * time is still this worker's. */
static int l_host_lease(lua_State *L)
{
    double since;
    if (!lease_keeper_lease(&since))
        return 0;
    lua_pushnumber(L, since);
    return 1;
}

/* host.lease_job(key, member, expires) -> a handle, or nil: from now on the lease
 * of the job whose reserved copy is member in the sorted set key, with the score
 * expires (a Unix second), is renewed while it runs (lease_keeper_hold). */
static int l_host_lease_job(lua_State *L)
{
    size_t keylen, memberlen;
    const char *key = luaL_checklstring(L, 1, &keylen);
    const char *member = luaL_checklstring(L, 2, &memberlen);
    int handle = lease_keeper_hold(key, keylen, member, memberlen, luaL_checknumber(L, 3));
    if (handle < 0)
        return 0;
    lua_pushinteger(L, handle);
    return 1;
}

/* host.lease_end(handle) -> true when its lease had lapsed and host.lease_lapses
 * did not say so yet: its renewals stop. */
static int l_host_lease_end(lua_State *L)
{
    lua_pushboolean(L, lease_keeper_release((int)luaL_checkinteger(L, 1)));
    return 1;
}

/* host.lease_lapses() -> the handles of the jobs held whose lease lapsed since the
 * last call, a list (each said once). */
static int l_host_lease_lapses(lua_State *L)
{
    int handles[64];
    int n = lease_keeper_lapsed(handles, 64);
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_pushinteger(L, handles[i]);
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

static const luaL_Reg functions[] = {
    {"heartbeat", l_host_heartbeat},
    {"heartbeat_stop", l_host_heartbeat_stop},
    {"heartbeat_note", l_host_heartbeat_note},
    {"lease", l_host_lease},
    {"lease_job", l_host_lease_job},
    {"lease_end", l_host_lease_end},
    {"lease_lapses", l_host_lease_lapses},
    {NULL, NULL},
};

static void close_binding(void *data)
{
    (void)data;
    lease_keeper_stop();
}

void heartbeat_binding_register(struct vm *h)
{
    vm_add_functions(h, functions);
    vm_on_close(h, close_binding, h);
}
