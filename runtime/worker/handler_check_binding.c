#include "worker/handler_check_binding.h"

#include <lauxlib.h>

#include "loop/vm.h"
#include "supervisor/handler_watch.h"

/* host.uncompilable_handlers(dir) -> nil when every handler file below dir
 * compiles; else how many do not and their errors ("path:line: message", "; "
 * between them). Runs none. */
static int l_host_uncompilable_handlers(lua_State *L)
{
    char err[4096];
    int bad = handler_watch_check(luaL_checkstring(L, 1), err, sizeof err);
    if (bad == 0)
        return 0;
    lua_pushinteger(L, bad);
    lua_pushstring(L, err);
    return 2;
}

static void add_file(void *data, const char *path)
{
    lua_State *L = data;
    lua_pushstring(L, path);
    lua_rawseti(L, -2, (int)lua_objlen(L, -2) + 1);
}

/* host.handler_files(dir) -> the handler files below dir (the supervisor's watch's
 * walk: *.lua, no name starting with a dot), relative to dir, sorted. */
static int l_host_handler_files(lua_State *L)
{
    const char *dir = luaL_checkstring(L, 1);
    lua_newtable(L);
    handler_watch_files(dir, add_file, L);
    return 1;
}

static const luaL_Reg functions[] = {
    {"uncompilable_handlers", l_host_uncompilable_handlers},
    {"handler_files", l_host_handler_files},
    {NULL, NULL},
};

void handler_check_binding_register(struct vm *h)
{
    vm_add_functions(h, functions);
}
