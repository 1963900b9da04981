#include "worker/database_lease_binding.h"

#include <string.h>

#include "db/sql_session.h"
#include "loop/vm.h"
#include "worker/database_lease_keeper.h"

#define MAX_SETTINGS 30

/* host.database_leases(driver, settings, parts, lease, retry_after) -> true | (false,
 * message): starts the thread that renews the leases of the jobs held, over a
 * connection of its own to the database of driver ("pgsql", "mysql" or "sqlite")
 * with settings (a table of strings, as luaworker.db's drivers make them), by the
 * statement whose four parts are the list parts, with leases of `lease` seconds
 * (database_lease_keeper_start). Nothing when it runs already. */
static int l_host_database_leases(lua_State *L)
{
    static const char *const names[] = {"pgsql", "mysql", "sqlite", NULL};
    static const enum sql_driver drivers[] = {SQL_PGSQL, SQL_MYSQL, SQL_SQLITE};
    enum sql_driver driver = drivers[luaL_checkoption(L, 1, NULL, names)];
    luaL_checktype(L, 2, LUA_TTABLE);
    luaL_checktype(L, 3, LUA_TTABLE);
    double lease = luaL_checknumber(L, 4), retry_after = luaL_checknumber(L, 5);
    luaL_argcheck(L, lease > 0, 4, "expected seconds > 0");
    luaL_argcheck(L, retry_after >= 0, 5, "expected seconds >= 0");
    const char *keys[MAX_SETTINGS], *values[MAX_SETTINGS];
    int n = 0;
    lua_pushnil(L);
    while (lua_next(L, 2)) {
        if (n == MAX_SETTINGS)
            return luaL_error(L, "too many connection settings");
        if (lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TSTRING) {
            keys[n] = lua_tostring(L, -2);
            values[n] = lua_tostring(L, -1);  /* the table keeps both strings */
            n++;
        }
        lua_pop(L, 1);
    }
    const char *parts[DATABASE_LEASE_SQL_PARTS];
    for (int i = 0; i < DATABASE_LEASE_SQL_PARTS; i++) {
        lua_rawgeti(L, 3, i + 1);
        parts[i] = lua_tostring(L, -1);
        luaL_argcheck(L, parts[i] != NULL, 3, "expected four strings");
        lua_pop(L, 1);  /* the table keeps it */
    }
    char err[300];
    struct sql_session *session = sql_session_new(driver, keys, values, n, err, sizeof err);
    if (!session || database_lease_keeper_start(session, parts, lease, retry_after, err, sizeof err) != 0)
        return vm_push_error(L, err, "connection");
    lua_pushboolean(L, 1);
    return 1;
}

/* host.database_lease(id, attempts, expires) -> a handle, or nil: from now on the
 * reservation of the row id, made by a pop that counted attempts and expiring at
 * expires (a Unix second), is renewed while its job runs. */
static int l_host_database_lease(lua_State *L)
{
    int handle = database_lease_keeper_hold((long long)luaL_checknumber(L, 1),
                                            (long long)luaL_checknumber(L, 2),
                                            luaL_checknumber(L, 3));
    if (handle < 0)
        return 0;
    lua_pushinteger(L, handle);
    return 1;
}

/* host.database_lease_charge(handle, confirmed): a held job's start was sent
 * (false), then confirmed (true): database_lease_keeper_charge. */
static int l_host_database_lease_charge(lua_State *L)
{
    database_lease_keeper_charge((int)luaL_checkinteger(L, 1), lua_toboolean(L, 2));
    return 0;
}

/* host.database_lease_expires(handle) -> the Unix second its reservation expires, as
 * last confirmed; 0 when it lapsed or is no longer this worker's. */
static int l_host_database_lease_expires(lua_State *L)
{
    lua_pushnumber(L, database_lease_keeper_expires((int)luaL_checkinteger(L, 1)));
    return 1;
}

/* host.database_lease_end(handle) -> true when its lease had lapsed and
 * host.database_lease_lapses did not say so yet: its renewals stop. */
static int l_host_database_lease_end(lua_State *L)
{
    lua_pushboolean(L, database_lease_keeper_release((int)luaL_checkinteger(L, 1)));
    return 1;
}

/* host.database_lease_lapses() -> the handles of the jobs held whose lease lapsed
 * since the last call, a list (each said once). */
static int l_host_database_lease_lapses(lua_State *L)
{
    int handles[64];
    int n = database_lease_keeper_lapsed(handles, 64);
    lua_createtable(L, n, 0);
    for (int i = 0; i < n; i++) {
        lua_pushinteger(L, handles[i]);
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

/* host.database_lease_error() -> the last renewal's failure (the database's words),
 * or nil when none failed. */
static int l_host_database_lease_error(lua_State *L)
{
    char err[256];
    if (!database_lease_keeper_error(err, sizeof err))
        return 0;
    lua_pushstring(L, err);
    return 1;
}

static const luaL_Reg functions[] = {
    {"database_leases", l_host_database_leases},
    {"database_lease", l_host_database_lease},
    {"database_lease_end", l_host_database_lease_end},
    {"database_lease_charge", l_host_database_lease_charge},
    {"database_lease_expires", l_host_database_lease_expires},
    {"database_lease_lapses", l_host_database_lease_lapses},
    {"database_lease_error", l_host_database_lease_error},
    {NULL, NULL},
};

static void close_binding(void *data)
{
    (void)data;
    database_lease_keeper_stop();
}

void database_lease_binding_register(struct vm *h)
{
    vm_add_functions(h, functions);
    vm_on_close(h, close_binding, h);
}
