#include "php/php_value.h"

#include <lauxlib.h>

#include "php/php_float.h"
#include "php/php_hash.h"
#include "php/php_meta.h"
#include "php/php_serialize.h"
#include "php/php_unserialize.h"

/* php.unserialize(s) -> value | nil, "<what> at offset N" */
static int l_php_unserialize(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    char err[128];
    if (php_unserialize(L, s, len, err, sizeof err) != 0) {
        lua_pushnil(L);
        lua_pushstring(L, err);
        return 2;
    }
    return 1;
}

/* php.serialize(v) -> string | nil, message */
static int l_php_serialize(lua_State *L)
{
    char err[128];
    lua_settop(L, 1);
    if (php_serialize(L, 1, err, sizeof err) != 0) {
        lua_pushnil(L);
        lua_pushstring(L, err);
        return 2;
    }
    return 1;
}

/* php.float_string(x) -> x as PHP's (string) cast gives a float with its default
 * precision of 14: "0.1", "0.33333333333333", "1.0E+25" (what PDO sends for a
 * float binding). */
static int l_php_float_string(lua_State *L)
{
    char buf[64];
    php_float_format_precision(luaL_checknumber(L, 1), 14, buf);
    lua_pushstring(L, buf);
    return 1;
}

/* php.class(v) -> class name of an object, enum or custom value, else nil */
static int l_php_class(lua_State *L)
{
    enum php_meta_type kind = php_meta_type_of(L, 1);
    if (kind == PHP_META_T_OBJECT) {
        lua_getmetatable(L, 1);
        lua_getfield(L, -1, "class");
        return 1;
    }
    if (kind == PHP_META_T_ENUM || kind == PHP_META_T_CUSTOM) {
        lua_pushliteral(L, "class");
        lua_rawget(L, 1);
        return 1;
    }
    lua_pushnil(L);
    return 1;
}

/* Copies the optional key list at arg into a new table (stack +1), or
 * pushes an empty table when the argument is absent. */
static void php_value_copy_keys(lua_State *L, int arg)
{
    int i, n;
    if (lua_isnoneornil(L, arg)) {
        lua_newtable(L);
        return;
    }
    luaL_checktype(L, arg, LUA_TTABLE);
    n = (int)lua_objlen(L, arg);
    lua_createtable(L, n, 0);
    for (i = 1; i <= n; i++) {
        lua_rawgeti(L, arg, i);
        if (lua_type(L, -1) != LUA_TSTRING && lua_type(L, -1) != LUA_TNUMBER) {
            luaL_argerror(L, arg, "keys must be strings or numbers");
        }
        lua_rawseti(L, -2, i);
    }
}

/* php.object(class, props[, keys]) -> props, now an object of that class.
 * props is adopted (its metatable replaced); keys gives the member order
 * (names may be mangled, e.g. "\0*\0name"); others follow sorted. */
static int l_php_object(lua_State *L)
{
    size_t n;
    const char *cls = luaL_checklstring(L, 1, &n);
    if (!php_meta_valid_class(cls, n)) {
        luaL_argerror(L, 1, "invalid class name");
    }
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_settop(L, 3);
    php_meta_new(L, PHP_META_T_OBJECT);
    lua_pushvalue(L, 1);
    lua_setfield(L, -2, "class");
    php_value_copy_keys(L, 3);
    lua_setfield(L, -2, "keys");
    lua_newtable(L);
    lua_setfield(L, -2, "names");
    lua_setmetatable(L, 2);
    lua_settop(L, 2);
    return 1;
}

/* php.enum(class, case) -> enum value */
static int l_php_enum(lua_State *L)
{
    size_t n;
    const char *cls = luaL_checklstring(L, 1, &n);
    if (!php_meta_valid_class(cls, n)) {
        luaL_argerror(L, 1, "invalid class name");
    }
    luaL_checkstring(L, 2);
    lua_createtable(L, 0, 2);
    lua_pushvalue(L, 1);
    lua_setfield(L, -2, "class");
    lua_pushvalue(L, 2);
    lua_setfield(L, -2, "case");
    php_meta_new(L, PHP_META_T_ENUM);
    lua_setmetatable(L, -2);
    return 1;
}

/* php.array(t[, keys]) -> t, marked as a PHP map array whose members go in
 * the order of keys (PHP keys: numbers are not shifted), then the rest
 * sorted.  Keeps float/reference marks when t was already a PHP array. */
static int l_php_array(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 2);
    if (php_meta_type_of(L, 1) == PHP_META_T_ARRAY) {
        lua_getmetatable(L, 1);
    } else {
        php_meta_new(L, PHP_META_T_ARRAY);
        lua_pushvalue(L, -1);
        lua_setmetatable(L, 1);
    }
    php_value_copy_keys(L, 2);
    lua_setfield(L, -2, "keys");
    lua_settop(L, 1);
    return 1;
}

/* php.is_list(v) -> true when v serializes as a PHP list: a table that is
 * a sequence 1..n (or empty) and not an object, enum, custom or map array. */
static int l_php_is_list(lua_State *L)
{
    enum php_meta_type kind;
    int total = 0, i;
    if (lua_type(L, 1) != LUA_TTABLE) {
        lua_pushboolean(L, 0);
        return 1;
    }
    kind = php_meta_type_of(L, 1);
    if (kind != PHP_META_T_OTHER && kind != PHP_META_T_ARRAY) {
        lua_pushboolean(L, 0);
        return 1;
    }
    if (kind == PHP_META_T_ARRAY) {
        int has_keys;
        lua_getmetatable(L, 1);
        lua_getfield(L, -1, "keys");
        has_keys = lua_istable(L, -1);
        lua_pop(L, 2);
        if (has_keys) {
            lua_pushboolean(L, 0);
            return 1;
        }
    }
    lua_pushnil(L);
    while (lua_next(L, 1) != 0) {
        lua_pop(L, 1);
        total++;
    }
    for (i = 1; i <= total; i++) {
        lua_rawgeti(L, 1, i);
        if (lua_isnil(L, -1)) {
            lua_pushboolean(L, 0);
            return 1;
        }
        lua_pop(L, 1);
    }
    lua_pushboolean(L, 1);
    return 1;
}

/* php.members(v) -> keys, names, recorded: the Lua keys of the object or array v
 * in the order PHP writes them (a plain table: its sequence, else its keys
 * sorted), their PHP names (an object's mangled ones, e.g. "\0*\0id"; else the
 * keys themselves), and how many of the keys lead in the order recorded in v
 * (read from PHP or given to php.object / php.array); the others were added by
 * Lua code and follow sorted. Raises when v is not a table. */
static int l_php_members(lua_State *L)
{
    int mt = 0, order, keys, names, recorded = 0, count, i;
    const char *problem;
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 1);
    if (php_meta_type_of(L, 1) != PHP_META_T_OTHER) {
        lua_getmetatable(L, 1);
        mt = 2;
    }
    problem = php_meta_member_order(L, 1, mt, &count);
    if (problem) {
        return luaL_error(L, "php.members: %s", problem);
    }
    order = lua_gettop(L);
    lua_createtable(L, count, 0);
    keys = order + 1;
    lua_createtable(L, count, 0);
    names = order + 2;
    for (i = 1; i <= count; i++) {
        if (lua_isnil(L, order)) {
            lua_pushinteger(L, i);
        } else {
            lua_rawgeti(L, order, i);
        }
        lua_pushvalue(L, -1);
        lua_rawseti(L, keys, i);
        if (mt != 0) {
            lua_getfield(L, mt, "names");
            if (lua_istable(L, -1)) {
                lua_pushvalue(L, -2);
                lua_rawget(L, -2);
                if (!lua_isnil(L, -1)) {
                    lua_replace(L, -3);
                } else {
                    lua_pop(L, 1);
                }
            }
            lua_pop(L, 1);
        }
        lua_rawseti(L, names, i);
    }
    if (lua_isnil(L, order)) {
        recorded = count; /* a sequence is always written in its own order */
    } else if (mt != 0) {
        lua_getfield(L, mt, "keys");
        if (lua_istable(L, -1)) {
            int nk = (int)lua_objlen(L, -1), j;
            lua_newtable(L); /* the recorded keys, as a set */
            for (j = 1; j <= nk; j++) {
                lua_rawgeti(L, -2, j);
                lua_pushboolean(L, 1);
                lua_rawset(L, -3);
            }
            while (recorded < count) {
                lua_rawgeti(L, keys, recorded + 1);
                lua_rawget(L, -2);
                if (lua_isnil(L, -1)) {
                    lua_pop(L, 1);
                    break;
                }
                lua_pop(L, 1);
                recorded++;
            }
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    lua_pushinteger(L, recorded);
    return 3;
}

/* Copies mt_from[field][key] to mt_to[field][key] (creating that table) when
 * set; key at the top of the stack. Stack unchanged. */
static void php_value_copy_mark(lua_State *L, int mt_from, int mt_to, const char *field)
{
    int key = lua_gettop(L);
    lua_getfield(L, mt_from, field);
    if (lua_istable(L, -1)) {
        lua_pushvalue(L, key);
        lua_rawget(L, -2);
        if (!lua_isnil(L, -1)) {
            php_meta_sub(L, mt_to, field);
            lua_pushvalue(L, key);
            lua_pushvalue(L, -3);
            lua_rawset(L, -3);
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
    }
    lua_settop(L, key);
}

/* php.select(v, keys[, names]) -> a new object of v's class holding v's members
 * named by keys (Lua keys; those v lacks are skipped) in that order, each with
 * its PHP name (v's, else names[key], else the key) and its float and reference
 * marks. v is left as it was; member values are shared, not copied. Raises when
 * v is not an object or keys is not a list of strings and numbers. */
static int l_php_select(lua_State *L)
{
    int src_mt, t, mt, order, n, i, kept = 0;
    if (php_meta_type_of(L, 1) != PHP_META_T_OBJECT) {
        luaL_argerror(L, 1, "expected a PHP object");
    }
    luaL_checktype(L, 2, LUA_TTABLE);
    if (!lua_isnoneornil(L, 3)) {
        luaL_checktype(L, 3, LUA_TTABLE);
    }
    lua_settop(L, 3);
    lua_getmetatable(L, 1);
    src_mt = 4;
    n = (int)lua_objlen(L, 2);
    lua_createtable(L, 0, n);
    t = 5;
    php_meta_new(L, PHP_META_T_OBJECT);
    mt = 6;
    lua_getfield(L, src_mt, "class");
    lua_setfield(L, mt, "class");
    lua_createtable(L, n, 0);
    order = 7;
    lua_pushvalue(L, order);
    lua_setfield(L, mt, "keys");
    lua_newtable(L);
    lua_setfield(L, mt, "names");
    for (i = 1; i <= n; i++) {
        lua_rawgeti(L, 2, i);
        if (lua_type(L, -1) != LUA_TSTRING && lua_type(L, -1) != LUA_TNUMBER) {
            luaL_argerror(L, 2, "keys must be strings or numbers");
        }
        lua_pushvalue(L, -1);
        lua_rawget(L, 1);
        lua_pushvalue(L, -2);
        lua_rawget(L, t);
        if (lua_isnil(L, -2) || !lua_isnil(L, -1)) { /* absent, or listed twice */
            lua_pop(L, 3);
            continue;
        }
        lua_pop(L, 1);
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, t);             /* t[key] = v[key]; key on top */
        lua_pushvalue(L, -1);
        lua_rawseti(L, order, ++kept);
        /* the PHP name: v's recorded one, else names[key] */
        lua_getfield(L, src_mt, "names");
        if (lua_istable(L, -1)) {
            lua_pushvalue(L, -2);
            lua_rawget(L, -2);
            lua_remove(L, -2);
        }
        if (lua_isnil(L, -1) && lua_istable(L, 3)) {
            lua_pop(L, 1);
            lua_pushvalue(L, -1);
            lua_rawget(L, 3);
        }
        if (lua_type(L, -1) == LUA_TSTRING && !lua_rawequal(L, -1, -2)) {
            lua_getfield(L, mt, "names");
            lua_pushvalue(L, -3);
            lua_pushvalue(L, -3);
            lua_rawset(L, -3);
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
        php_value_copy_mark(L, src_mt, mt, "floats");
        php_value_copy_mark(L, src_mt, mt, "refs");
        lua_pop(L, 1);
    }
    lua_pushvalue(L, mt);
    lua_setmetatable(L, t);
    lua_pushvalue(L, t);
    return 1;
}

int luaopen_luaworker_php(lua_State *L)
{
    static const luaL_Reg funcs[] = {
        { "unserialize", l_php_unserialize },
        { "serialize", l_php_serialize },
        { "class", l_php_class },
        { "float_string", l_php_float_string },
        { "object", l_php_object },
        { "enum", l_php_enum },
        { "array", l_php_array },
        { "is_list", l_php_is_list },
        { "members", l_php_members },
        { "select", l_php_select },
        { "md5", php_hash_md5 },
        { "xxh128", php_hash_xxh128 },
        { NULL, NULL }
    };
    lua_createtable(L, 0, 13);
    luaL_register(L, NULL, funcs);
    lua_pushlightuserdata(L, NULL);
    lua_setfield(L, -2, "null");
    return 1;
}
