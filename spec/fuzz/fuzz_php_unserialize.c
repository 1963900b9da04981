/* fuzz_php_unserialize: libFuzzer target for php_unserialize and php_serialize.
 *
 * Each input is PHP serialize() text.  When php_unserialize accepts it, the
 * value is serialized back (s1); s1 must unserialize again and serialize to
 * exactly s1 (serialize(unserialize(serialize(x))) == serialize(x)).  A
 * value that php_serialize refuses (e.g. an array that contains itself) is
 * not an error.  Aborts on a broken round trip, and on any Lua error raised
 * through these functions, which promise to raise only when out of memory.
 * Uses php_unserialize, php_serialize (and through them php_meta, php_scan,
 * php_float) in a LuaJIT state with the standard libraries, as lua_host
 * opens it but with a malloc-backed allocator. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

#include "fuzz_lua.h"

#include "php/php_serialize.h"
#include "php/php_unserialize.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static lua_State *fuzz_L;

/* Prints what went wrong with the text involved (a) and a second text or
 * error message (b, may be NULL), and aborts. */
static void fuzz_fail(const char *what, const char *a, size_t alen, const char *b, size_t blen)
{
    fprintf(stderr, "fuzz_php_unserialize: %s\n", what);
    fprintf(stderr, "  text (%zu bytes): %.*s\n", alen, (int)alen, a);
    if (b != NULL) {
        fprintf(stderr, "  then (%zu bytes): %.*s\n", blen, (int)blen, b);
    }
    abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_L = fuzz_lua_open("fuzz_php_unserialize");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lua_State *L = fuzz_L;
    char err[128];
    size_t n1, n2;
    const char *s1, *s2;

    lua_settop(L, 0);
    if (php_unserialize(L, (const char *)data, size, err, sizeof err) != 0) {
        if (lua_gettop(L) != 0) {
            fuzz_fail("php_unserialize failed but left values on the stack", err, strlen(err), NULL, 0);
        }
        return 0;
    }
    if (lua_gettop(L) != 1) {
        fuzz_fail("php_unserialize pushed other than one value", (const char *)data, size, NULL, 0);
    }
    if (php_serialize(L, 1, err, sizeof err) != 0) {
        lua_settop(L, 0);
        return 0;
    }
    s1 = lua_tolstring(L, 2, &n1);
    if (php_unserialize(L, s1, n1, err, sizeof err) != 0) {
        fuzz_fail("php_serialize output does not unserialize", s1, n1, err, strlen(err));
    }
    if (php_serialize(L, 3, err, sizeof err) != 0) {
        fuzz_fail("value decoded from php_serialize output does not serialize", s1, n1, err, strlen(err));
    }
    s2 = lua_tolstring(L, 4, &n2);
    if (n1 != n2 || memcmp(s1, s2, n1) != 0) {
        fuzz_fail("serialize(unserialize(s)) != s for s = serialize(unserialize(input))", s1, n1, s2, n2);
    }
    lua_settop(L, 0);
    return 0;
}
