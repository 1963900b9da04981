#include "php/php_meta.h"

#include <lauxlib.h>

#include <string.h>

/* Metatable __name of each type, indexed by enum php_meta_type. */
static const char *const php_meta_names[] = {
    NULL,
    "luaworker.php_array",
    "luaworker.php_object",
    "luaworker.php_enum",
    "luaworker.php_custom",
};

/* Registry key of the table holding the helper functions. */
static const char php_meta_helpers_key = 'h';

static const char php_meta_helpers_src[] =
    "local ffi = require('ffi')\n"
    "local int64, uint64 = ffi.typeof('int64_t'), ffi.typeof('uint64_t')\n"
    "local pint64 = ffi.typeof('const int64_t *')\n"
    "local istype, cast, tostring, type, sort = ffi.istype, ffi.cast, tostring, type, table.sort\n"
    "local function make(s) return cast(pint64, s)[0] end\n"
    "local function text(v)\n"
    "  if istype(int64, v) then return (tostring(v):sub(1, -3)) end\n"
    "  if istype(uint64, v) then\n"
    "    if v > 9223372036854775807ULL then return nil end\n"
    "    return (tostring(v):sub(1, -4))\n"
    "  end\n"
    "  return nil\n"
    "end\n"
    "local function rank(k)\n"
    "  local t = type(k)\n"
    "  if t == 'number' or (t == 'cdata' and text(k)) then return 1 end\n"
    "  if t == 'string' then return 2 end\n"
    "  return 3\n"
    "end\n"
    "local function before(a, b)\n"
    "  local ra, rb = rank(a), rank(b)\n"
    "  if ra ~= rb then return ra < rb end\n"
    "  if ra == 3 then return tostring(a) < tostring(b) end\n"
    "  return a < b\n"
    "end\n"
    "local function sortkeys(t) sort(t, before) end\n"
    "return { make, text, sortkeys }\n";

int php_meta_push_helper(lua_State *L, enum php_meta_helper which)
{
    lua_pushlightuserdata(L, (void *)&php_meta_helpers_key);
    lua_rawget(L, LUA_REGISTRYINDEX);
    if (!lua_istable(L, -1)) {
        lua_pop(L, 1);
        if (luaL_loadstring(L, php_meta_helpers_src) != 0 || lua_pcall(L, 0, 1, 0) != 0
            || !lua_istable(L, -1)) {
            lua_pop(L, 1);
            return -1;
        }
        lua_pushlightuserdata(L, (void *)&php_meta_helpers_key);
        lua_pushvalue(L, -2);
        lua_rawset(L, LUA_REGISTRYINDEX);
    }
    lua_rawgeti(L, -1, (int)which);
    lua_remove(L, -2);
    return 0;
}

int php_meta_push_int(lua_State *L, int64_t v)
{
    if (v >= -PHP_META_EXACT_INT && v <= PHP_META_EXACT_INT) {
        lua_pushnumber(L, (lua_Number)v);
        return 0;
    }
    if (php_meta_push_helper(L, PHP_META_HELPER_MAKE_INT64) != 0)
        return -1;
    lua_pushlstring(L, (const char *)&v, sizeof v);
    if (lua_pcall(L, 1, 1, 0) != 0) {
        lua_pop(L, 1);
        return -1;
    }
    return 0;
}

enum php_meta_type php_meta_type_of(lua_State *L, int idx)
{
    enum php_meta_type type = PHP_META_T_OTHER;
    if (lua_type(L, idx) != LUA_TTABLE || !lua_getmetatable(L, idx)) {
        return PHP_META_T_OTHER;
    }
    lua_getfield(L, -1, "__name");
    if (lua_type(L, -1) == LUA_TSTRING) {
        const char *name = lua_tostring(L, -1);
        int t;
        for (t = PHP_META_T_ARRAY; t <= PHP_META_T_CUSTOM; t++) {
            if (strcmp(name, php_meta_names[t]) == 0) {
                type = (enum php_meta_type)t;
                break;
            }
        }
    }
    lua_pop(L, 2);
    return type;
}

void php_meta_new(lua_State *L, enum php_meta_type type)
{
    lua_createtable(L, 0, 4);
    lua_pushstring(L, php_meta_names[type]);
    lua_setfield(L, -2, "__name");
}

void php_meta_sub(lua_State *L, int mt, const char *field)
{
    lua_getfield(L, mt, field);
    if (!lua_istable(L, -1)) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setfield(L, mt, field);
    }
}

int php_meta_valid_class(const char *p, size_t n)
{
    size_t i;
    if (n == 0) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
              || c == '_' || c == '\\' || c >= 0x80)) {
            return 0;
        }
    }
    return 1;
}

const char *php_meta_member_order(lua_State *L, int t, int mt, int *count)
{
    int order, total = 0, n = 0, seq = 1, has_keys = 0;
    lua_pushnil(L);
    while (lua_next(L, t) != 0) {
        lua_pop(L, 1);
        total++;
        if (seq && !(lua_type(L, -1) == LUA_TNUMBER && lua_tonumber(L, -1) == (lua_Number)total)) {
            seq = 0;
        }
    }
    /* lua_next order is not guaranteed ascending: confirm with rawgeti */
    if (!seq) {
        int i;
        seq = 1;
        for (i = 1; i <= total; i++) {
            lua_rawgeti(L, t, i);
            if (lua_isnil(L, -1)) {
                seq = 0;
            }
            lua_pop(L, 1);
            if (!seq) {
                break;
            }
        }
    }
    if (mt != 0) {
        lua_getfield(L, mt, "keys");
        has_keys = lua_istable(L, -1);
        lua_pop(L, 1);
    }
    if (!has_keys && seq) {
        lua_pushnil(L);
        *count = total;
        return NULL;
    }
    lua_createtable(L, total, 0);
    order = lua_gettop(L);
    if (has_keys) {
        int i, nk;
        lua_getfield(L, mt, "keys");
        nk = (int)lua_objlen(L, -1);
        lua_newtable(L); /* keys already placed */
        for (i = 1; i <= nk; i++) {
            lua_rawgeti(L, -2, i);
            if (!lua_isnil(L, -1)) {
                lua_pushvalue(L, -1);
                lua_rawget(L, t);
                if (!lua_isnil(L, -1)) {
                    lua_pushvalue(L, -2);
                    lua_rawget(L, -4);
                    if (lua_isnil(L, -1)) {
                        lua_pushvalue(L, -3);
                        lua_rawseti(L, order, ++n);
                        lua_pushvalue(L, -3);
                        lua_pushboolean(L, 1);
                        lua_rawset(L, -6);
                    }
                    lua_pop(L, 1);
                }
                lua_pop(L, 1);
            }
            lua_pop(L, 1);
        }
        if (n < total) {
            int extra = lua_gettop(L) + 1;
            int j, ne = 0;
            lua_newtable(L);
            lua_pushnil(L);
            while (lua_next(L, t) != 0) {
                lua_pop(L, 1);
                lua_pushvalue(L, -1);
                lua_rawget(L, extra - 1);
                if (lua_isnil(L, -1)) {
                    lua_pushvalue(L, -2);
                    lua_rawseti(L, extra, ++ne);
                }
                lua_pop(L, 1);
            }
            if (php_meta_push_helper(L, PHP_META_HELPER_SORT_KEYS) != 0) {
                return "cannot sort keys (no ffi)";
            }
            lua_pushvalue(L, extra);
            if (lua_pcall(L, 1, 0, 0) != 0) {
                lua_pop(L, 1);
                return "cannot sort keys";
            }
            for (j = 1; j <= ne; j++) {
                lua_rawgeti(L, extra, j);
                lua_rawseti(L, order, ++n);
            }
        }
        lua_settop(L, order);
    } else {
        lua_pushnil(L);
        while (lua_next(L, t) != 0) {
            lua_pop(L, 1);
            lua_pushvalue(L, -1);
            lua_rawseti(L, order, ++n);
        }
        if (php_meta_push_helper(L, PHP_META_HELPER_SORT_KEYS) != 0) {
            return "cannot sort keys (no ffi)";
        }
        lua_pushvalue(L, order);
        if (lua_pcall(L, 1, 0, 0) != 0) {
            lua_pop(L, 1);
            return "cannot sort keys";
        }
    }
    *count = n;
    return NULL;
}
