/* php_unserialize: PHP serialize() text -> Lua values.
 *
 * Decodes the payloads that PHP's serialize() produces (Laravel queue job
 * commands) into Lua values that handlers can read.  What Lua cannot hold
 * (class, mangled property names, key order, which members were floats,
 * r:/R: back-references) goes into each container's metatable, as php_meta
 * describes, so that php_serialize can give back the original bytes.  Values
 * are numbered as PHP's var_hash numbers them, so r:n / R:n resolve to the
 * same Lua value.  See php_unserialize.c for the full mapping.  Uses php_scan
 * and php_meta. */
#ifndef LUAWORKER_PHP_UNSERIALIZE_H
#define LUAWORKER_PHP_UNSERIALIZE_H

#include <stddef.h>

#include <lua.h>

/* Parses s[0..len) and pushes one Lua value (stack effect +1 on success).
 * Returns 0, or -1 with nothing pushed and err filled with
 * "<what> at offset N" (N = byte offset into s).  s is only read; err must
 * hold errlen bytes.  Never raises except on out-of-memory. */
int php_unserialize(lua_State *L, const char *s, size_t len, char *err, size_t errlen);

#endif
