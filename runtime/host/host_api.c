#include "host/host_api.h"

#include <lauxlib.h>

#include "host/host_file.h"
#include "host/host_heartbeat.h"
#include "host/host_http.h"
#include "host/host_mysql.h"
#include "host/host_pg.h"
#include "host/host_sqlite.h"
#include "host/host_redis.h"
#include "host/host_slot.h"
#include "host/host_system.h"
#include "host/host_wait.h"
#include "host/lua_host.h"

static const luaL_Reg *const units[] = {
    host_redis_functions, host_wait_functions, host_heartbeat_functions,
    host_slot_functions, host_system_functions, host_http_functions, host_pg_functions,
    host_mysql_functions, host_sqlite_functions, host_file_functions,
};

static int luaopen_host(lua_State *L)
{
    lua_newtable(L);
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        lua_pushvalue(L, lua_upvalueindex(1));
        luaL_setfuncs(L, units[i], 1);
    }
    lua_pushlightuserdata(L, &host_wait_marker);
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
    host_pg_register(L);
    host_mysql_register(L);
    host_sqlite_register(L);
    host_wait_attach(h);
}
