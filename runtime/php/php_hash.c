#include "php/php_hash.h"

#include <lauxlib.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <xxhash.h>

#include "loader/lazy_lib.h"

static const char hex[] = "0123456789abcdef";

int php_hash_md5(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (EVP_Digest(s, len, digest, &n, EVP_md5(), NULL) != 1)
        return luaL_error(L, "md5: OpenSSL could not compute it");
    char out[2 * EVP_MAX_MD_SIZE];
    for (unsigned int i = 0; i < n; i++) {
        out[2 * i] = hex[digest[i] >> 4];
        out[2 * i + 1] = hex[digest[i] & 15];
    }
    lua_pushlstring(L, out, 2 * (size_t)n);
    return 1;
}

static struct lazy_lib libxxhash = {
    .soname = "libxxhash.so.0",
    .needs = "php.xxh128 needs libxxhash (Debian's libxxhash0)",
};
static XXH128_hash_t (*xxh3_128)(const void *, size_t);
static void (*canonical_from_hash)(XXH128_canonical_t *, XXH128_hash_t);

int php_hash_xxh128(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    const struct lazy_symbol symbols[] = {
        {"XXH3_128bits", (void **)&xxh3_128},
        {"XXH128_canonicalFromHash", (void **)&canonical_from_hash},
    };
    char err[400];
    if (lazy_lib_load(&libxxhash, symbols, sizeof symbols / sizeof symbols[0], err, sizeof err))
        return luaL_error(L, "%s", err);
    XXH128_canonical_t canonical;
    canonical_from_hash(&canonical, xxh3_128(s, len));
    char out[2 * sizeof canonical.digest];
    for (size_t i = 0; i < sizeof canonical.digest; i++) {
        out[2 * i] = hex[canonical.digest[i] >> 4];
        out[2 * i + 1] = hex[canonical.digest[i] & 15];
    }
    lua_pushlstring(L, out, sizeof out);
    return 1;
}
