/* php_meta: how a Lua value carries what PHP knows about it and Lua does not.
 * It is the contract between php_unserialize, which records these details,
 * php_serialize, which re-emits them, and php_value, the Lua module that lets
 * handlers read and set them.  Uses LuaJIT (the ffi library for int64_t cdata).
 *
 * Each decoded array, object, enum or custom value has a metatable of its own,
 * never visible keys:
 *   __name  "luaworker.php_array" | "luaworker.php_object" |
 *           "luaworker.php_enum" | "luaworker.php_custom"
 *   class   object class name (objects)
 *   keys    sequence of Lua keys in PHP order (maps and objects; absent for
 *           lists)
 *   names   object only: Lua key -> mangled PHP name, where they differ
 *   floats  Lua key -> true for members that were d: values
 *   refs    Lua key -> n (was r:n) or -n (was R:n)
 *   inner   custom only: the values decoded from the opaque payload, which
 *           PHP numbers as if they were part of the outer value
 * Enums and custom values keep their class (and case or data) as ordinary
 * fields of the table itself.  Integers beyond 2^53 are int64_t cdata. */
#ifndef LUAWORKER_PHP_META_H
#define LUAWORKER_PHP_META_H

#include <stddef.h>
#include <stdint.h>

#include <lua.h>

/* Containers nest at most this deep, both ways. */
#define PHP_META_MAX_DEPTH 512

/* 2^53: larger integers do not fit a double exactly. */
#define PHP_META_EXACT_INT 9007199254740992LL

enum php_meta_type {
    PHP_META_T_OTHER,  /* not a table, or a table without our metatable */
    PHP_META_T_ARRAY,
    PHP_META_T_OBJECT,
    PHP_META_T_ENUM,
    PHP_META_T_CUSTOM
};

/* Classifies the value at idx by its metatable __name.  Stack unchanged. */
enum php_meta_type php_meta_type_of(lua_State *L, int idx);

/* Pushes a fresh metatable {__name = <name of type>} (stack +1); type is not
 * PHP_META_T_OTHER. */
void php_meta_new(lua_State *L, enum php_meta_type type);

/* Pushes mt[field] (a table), creating it when absent (stack +1).
 * mt is an absolute index. */
void php_meta_sub(lua_State *L, int mt, const char *field);

/* Returns 1 when p[0..n) is a PHP class name ([A-Za-z0-9_\x80-\xff\\]+),
 * else 0. */
int php_meta_valid_class(const char *p, size_t n);

/* Pushes the order in which PHP writes the members of the table at t (stack +1;
 * t absolute; mt its metatable's absolute index, or 0): nil for a sequence 1..n
 * (*count = n), else an array of its keys (*count = its length): the keys recorded
 * in mt.keys that t still has, in that order, then the others sorted as
 * PHP_META_HELPER_SORT_KEYS does. Returns NULL, or what went wrong (then the stack
 * is left as it was at the failure). */
const char *php_meta_member_order(lua_State *L, int t, int mt, int *count);

/* Lua functions for what the C API cannot do, written with LuaJIT's ffi. */
enum php_meta_helper {
    PHP_META_HELPER_MAKE_INT64 = 1, /* (8-byte string) -> int64_t cdata */
    PHP_META_HELPER_INT64_TEXT = 2, /* (v) -> decimal text of int64/uint64 cdata, or nil */
    PHP_META_HELPER_SORT_KEYS = 3   /* (array of keys) -> sorts it in place: numbers
                                     * (and int64 cdata) ascending, then strings,
                                     * then the rest by tostring */
};

/* Pushes helper function `which` (stack +1) and returns 0, or returns -1
 * with nothing pushed when the helpers cannot be loaded (no ffi).  The
 * helpers are loaded once per state and kept in the registry. */
int php_meta_push_helper(lua_State *L, enum php_meta_helper which);

/* Pushes v as a number when |v| <= 2^53, else as int64_t cdata, exact (stack +1),
 * and returns 0; returns -1 with nothing pushed when the cdata cannot be made (no
 * ffi). */
int php_meta_push_int(lua_State *L, int64_t v);

#endif
