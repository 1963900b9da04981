/* fuzz_payload: libFuzzer target for the way the worker decodes a popped job.
 *
 * Each input is the raw payload as LPOP/the pop script returns it.  As
 * runtime/worker.lua does: decode it with a cjson.new() decoder, keep it only
 * when it is a table whose attempts is a number, take data.command when it
 * is a string and unserialize it with luaworker.php (for every string, not
 * only those starting with "O:" as the worker checks), then php.serialize
 * the result, as a handler that re-dispatches a command does.  All calls go
 * through lua_pcall, as in the worker: a Lua error is an expected outcome, a
 * crash or sanitizer report is the finding.  Uses the cjson module (static
 * liblua5.1-cjson.a) and php_value, registered as lua_host registers them,
 * in a state with a malloc-backed allocator. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <lauxlib.h>
#include <lualib.h>

#include "fuzz_lua.h"

#include "php/php_value.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

extern int luaopen_cjson(lua_State *L);

static lua_State *fuzz_L;
static int fuzz_decode_ref, fuzz_unserialize_ref, fuzz_serialize_ref;

static void fuzz_preload(lua_State *L, const char *name, lua_CFunction fn)
{
    lua_getglobal(L, "package");
    lua_getfield(L, -1, "preload");
    lua_pushcfunction(L, fn);
    lua_setfield(L, -2, name);
    lua_pop(L, 2);
}

/* Runs `local m = require(module); return m.<field>` or, with call set,
 * `return m.<field>().<call>`, and returns a registry reference to the
 * result.  Aborts when that fails (the harness, not the input, is wrong). */
static int fuzz_ref(lua_State *L, const char *module, const char *field, const char *call)
{
    lua_getglobal(L, "require");
    lua_pushstring(L, module);
    if (lua_pcall(L, 1, 1, 0) != 0) {
        fprintf(stderr, "fuzz_payload: require %s: %s\n", module, lua_tostring(L, -1));
        abort();
    }
    lua_getfield(L, -1, field);
    if (call != NULL) {
        if (lua_pcall(L, 0, 1, 0) != 0 || !lua_istable(L, -1)) {
            fprintf(stderr, "fuzz_payload: %s.%s() failed\n", module, field);
            abort();
        }
        lua_getfield(L, -1, call);
        lua_remove(L, -2);
    }
    if (!lua_isfunction(L, -1)) {
        fprintf(stderr, "fuzz_payload: %s.%s is not a function\n", module, call ? call : field);
        abort();
    }
    lua_remove(L, -2);
    return luaL_ref(L, LUA_REGISTRYINDEX);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    lua_State *L;
    (void)argc;
    (void)argv;
    L = fuzz_L = fuzz_lua_open("fuzz_payload");
    fuzz_preload(L, "cjson", luaopen_cjson);
    fuzz_preload(L, "luaworker.php", luaopen_luaworker_php);
    fuzz_decode_ref = fuzz_ref(L, "cjson", "new", "decode");
    fuzz_unserialize_ref = fuzz_ref(L, "luaworker.php", "unserialize", NULL);
    fuzz_serialize_ref = fuzz_ref(L, "luaworker.php", "serialize", NULL);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lua_State *L = fuzz_L;

    lua_settop(L, 0);
    lua_rawgeti(L, LUA_REGISTRYINDEX, fuzz_decode_ref);
    lua_pushlstring(L, (const char *)data, size);
    if (lua_pcall(L, 1, 1, 0) != 0 || !lua_istable(L, 1)) {
        goto out;
    }
    lua_getfield(L, 1, "attempts");
    if (lua_type(L, -1) != LUA_TNUMBER) {
        goto out;
    }
    lua_getfield(L, 1, "data");
    if (!lua_istable(L, -1)) {
        goto out;
    }
    lua_getfield(L, -1, "command");
    if (lua_type(L, -1) != LUA_TSTRING) {
        goto out;
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, fuzz_unserialize_ref);
    lua_insert(L, -2);
    if (lua_pcall(L, 1, 1, 0) != 0 || lua_isnil(L, -1)) {
        goto out;
    }
    lua_rawgeti(L, LUA_REGISTRYINDEX, fuzz_serialize_ref);
    lua_insert(L, -2);
    lua_pcall(L, 1, 1, 0);
out:
    lua_settop(L, 0);
    return 0;
}
