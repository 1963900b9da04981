#include "php/php_hash.h"

#include <lauxlib.h>
#include <openssl/evp.h>

int php_hash_md5(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (EVP_Digest(s, len, digest, &n, EVP_md5(), NULL) != 1)
        return luaL_error(L, "md5: OpenSSL could not compute it");
    static const char hex[] = "0123456789abcdef";
    char out[2 * EVP_MAX_MD_SIZE];
    for (unsigned int i = 0; i < n; i++) {
        out[2 * i] = hex[digest[i] >> 4];
        out[2 * i + 1] = hex[digest[i] & 15];
    }
    lua_pushlstring(L, out, 2 * (size_t)n);
    return 1;
}
