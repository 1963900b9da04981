/* php_unserialize: PHP serialize() text -> Lua values.
 *
 * Decodes the payloads that PHP's serialize() produces (Laravel queue job
 * commands) into Lua values that handlers can read.  What Lua cannot hold
 * (class, mangled property names, key order, which members were floats,
 * r:/R: back-references) goes into each container's metatable, as php_meta
 * describes, so that php_serialize can give back the original bytes.  Values
 * are numbered as PHP's var_hash numbers them, so r:n / R:n resolve to the
 * same Lua value.  Uses php_scan and php_meta.
 *
 * Mapping (the contract Lua handlers rely on):
 *   N;            php.null == lightuserdata(NULL) == cjson.null
 *   b:0; b:1;     boolean
 *   i:<n>;        number when |n| <= 2^53, otherwise an int64_t cdata (exact)
 *   d:<x>;        number (INF, -INF, NAN included); as a member, its key goes
 *                 in the container's `floats`
 *   s:<n>:"..";   string (binary safe)
 *   a:<n>:{..}    table.  Keys exactly 0..n-1 in order: a sequence t[1..n].
 *                 Otherwise a map keyed by the PHP keys (int keys stay
 *                 numbers) whose key order is kept in the metatable.
 *   O:..:{..}     table of properties by bare name (visibility stripped);
 *                 class, mangled names and order kept in the metatable.
 *   E:..:"A:B";   table {class = "A", case = "B"} marked as enum.
 *   C:..:{..}     table {class = ..., data = <raw payload>} marked as custom.
 *   r:<n>; R:<n>; the n-th value already decoded (shared identity); as a
 *                 member, its key goes in the container's `refs`.
 * Limits: containers nest at most PHP_META_MAX_DEPTH deep, and an element
 * count must fit the remaining input (6 bytes a member at least). */
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
