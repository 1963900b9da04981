/* php_hash: PHP's hash functions that Laravel's keys are made with, for
 * "luaworker.php": md5(s) -> the lowercase hex MD5 of s (PHP's md5(), as
 * RateLimited names a limit's key). Uses OpenSSL's libcrypto. */
#ifndef LUAWORKER_PHP_HASH_H
#define LUAWORKER_PHP_HASH_H

#include <lua.h>

/* php.md5(s) -> 32 lowercase hex digits. */
int php_hash_md5(lua_State *L);

#endif
