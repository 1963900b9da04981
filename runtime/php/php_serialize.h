/* php_serialize: Lua values -> PHP serialize() text.
 *
 * Encodes Lua values in the format PHP's unserialize() reads.  A value
 * decoded by php_unserialize and left unmodified gives back the original
 * bytes: the details recorded in its metatables (class, mangled names, key
 * order, floats, references, see php_meta) are emitted again, and values are
 * numbered as PHP's var_hash numbers them so that r:n / R:n point where they
 * did.  See php_serialize.c for how plain Lua values map.  Uses php_float and
 * php_meta. */
#ifndef LUAWORKER_PHP_SERIALIZE_H
#define LUAWORKER_PHP_SERIALIZE_H

#include <stddef.h>

#include <lua.h>

/* Serializes the value at stack index idx and pushes the resulting string
 * (stack effect +1 on success).  Returns 0, or -1 with nothing pushed and err
 * filled.  Never raises except on out-of-memory. */
int php_serialize(lua_State *L, int idx, char *err, size_t errlen);

#endif
