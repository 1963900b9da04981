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

static const luaL_Reg functions[] = {
    {"uncompilable_handlers", l_host_uncompilable_handlers},
    {NULL, NULL},
};

void handler_check_binding_register(struct vm *h)
{
    vm_add_functions(h, functions);
}
