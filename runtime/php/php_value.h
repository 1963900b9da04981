/* php_value: the Lua module "luaworker.php", PHP values for handlers.
 *
 * unserialize and serialize convert between PHP serialize() text (Laravel
 * queue job commands) and Lua values, so that serialize(unserialize(s))
 * reproduces s byte for byte for arrays and objects (a bare top-level float
 * with an integral value, "d:1;", comes back as "i:1;": the float mark lives
 * on the containing array or object); null is PHP null, lightuserdata(NULL), the same
 * value as cjson.null; class, object, enum, array and is_list read and set
 * the PHP-only details (class, member order, map vs list) that each
 * container carries in its metatable; members lists them in PHP's order with
 * their PHP names, select copies an object with some of its members in a
 * given order.  The text mappings are in
 * php_unserialize.c and php_serialize.c, the metatable layout in php_meta.h.
 * md5 and xxh128 are PHP's md5() and hash('xxh128') (php_hash). Uses php_unserialize, php_serialize, php_meta and php_hash.
 */
#ifndef LUAWORKER_PHP_VALUE_H
#define LUAWORKER_PHP_VALUE_H

#include <lua.h>

/* Pushes the module table (stack effect +1).  The host registers it as
 * package.preload["luaworker.php"]. */
int luaopen_luaworker_php(lua_State *L);

#endif
