/* fuzz_lua: the Lua state the fuzz targets that need one share: LuaJIT with a
 * malloc-backed allocator (so that AddressSanitizer sees every Lua string and
 * buffer), standard libraries open, a panic handler that aborts, and the state
 * closed at exit (LeakSanitizer cannot follow GC64 LuaJIT's tagged pointers). */
#ifndef LUAWORKER_FUZZ_LUA_H
#define LUAWORKER_FUZZ_LUA_H

#include <lua.h>

/* Returns the state, created on the first call; target names the fuzz target in
 * messages. Aborts when the state cannot be made. */
lua_State *fuzz_lua_open(const char *target);

#endif
