/* php_hash: PHP's hash functions that Laravel's keys are made with, for
 * "luaworker.php": md5(s) (PHP's md5(), OpenSSL's libcrypto: RateLimited's keys,
 * ThrottlesExceptions' before 12.0) and xxh128(s) (PHP's hash('xxh128', s), from
 * Debian's libxxhash, loaded on first use: Laravel 12's keys). Uses lazy_lib. */
#ifndef LUAWORKER_PHP_HASH_H
#define LUAWORKER_PHP_HASH_H

#include <lua.h>

/* php.md5(s) -> 32 lowercase hex digits. */
int php_hash_md5(lua_State *L);

/* php.xxh128(s) -> 32 lowercase hex digits, as PHP prints XXH3's 128-bit hash
 * (its canonical, big-endian form). Raises when libxxhash cannot be loaded. */
int php_hash_xxh128(lua_State *L);

#endif
