/* php_value: PHP serialize() text <-> Lua values.
 *
 * Decodes the payloads that PHP's serialize() produces (Laravel queue job
 * commands) into Lua values that handlers can read, and encodes Lua values
 * back into the same format.  Decoded arrays and objects carry their PHP-only
 * details (class, mangled property names, key order, which members were
 * floats, r:/R: back-references) in a per-container metatable, so that
 * serialize(unserialize(s)) reproduces s byte for byte.  PHP null is
 * lightuserdata(NULL), the same value as cjson.null.
 *
 * The Lua module "luaworker.php" exposes unserialize, serialize, null, class,
 * object, enum, array and is_list; see php_value.c for the full mapping.
 */
#ifndef LUAWORKER_PHP_VALUE_H
#define LUAWORKER_PHP_VALUE_H

#include <stddef.h>

#include <lua.h>

/* Pushes the module table (stack effect +1).  The host registers it as
 * package.preload["luaworker.php"]. */
int luaopen_luaworker_php(lua_State *L);

/* Parses s[0..len) and pushes one Lua value (stack effect +1 on success).
 * Returns 0, or -1 with nothing pushed and err filled with
 * "<what> at offset N" (N = byte offset into s).  s is only read; err must
 * hold errlen bytes.  Never raises except on out-of-memory. */
int php_value_unserialize(lua_State *L, const char *s, size_t len, char *err, size_t errlen);

/* Serializes the value at stack index idx and pushes the resulting string
 * (stack effect +1 on success).  Returns 0, or -1 with nothing pushed and err
 * filled.  Never raises except on out-of-memory. */
int php_value_serialize(lua_State *L, int idx, char *err, size_t errlen);

#endif
