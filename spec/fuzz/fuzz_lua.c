#include "fuzz_lua.h"

#include <stdio.h>
#include <stdlib.h>

#include <lauxlib.h>
#include <lualib.h>

static lua_State *fuzz_lua_state;
static const char *fuzz_lua_target = "fuzz";

static void *fuzz_lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    (void)ud;
    (void)osize;
    if (nsize == 0) {
        free(ptr);
        return NULL;
    }
    return realloc(ptr, nsize);
}

static void fuzz_lua_close(void)
{
    lua_close(fuzz_lua_state);
}

static int fuzz_lua_panic(lua_State *L)
{
    fprintf(stderr, "%s: unprotected Lua error: %s\n", fuzz_lua_target,
            lua_tostring(L, -1) ? lua_tostring(L, -1) : "(not a string)");
    abort();
}

lua_State *fuzz_lua_open(const char *target)
{
    if (fuzz_lua_state)
        return fuzz_lua_state;
    fuzz_lua_target = target;
    fuzz_lua_state = lua_newstate(fuzz_lua_alloc, NULL);
    if (fuzz_lua_state == NULL) {
        fprintf(stderr, "%s: cannot create the Lua state\n", target);
        abort();
    }
    lua_atpanic(fuzz_lua_state, fuzz_lua_panic);
    atexit(fuzz_lua_close);
    luaL_openlibs(fuzz_lua_state);
    return fuzz_lua_state;
}
