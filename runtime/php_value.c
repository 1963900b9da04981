/* php_value: PHP serialize() text <-> Lua values.
 *
 * Mapping (the contract Lua handlers rely on):
 *   N;            php.null == lightuserdata(NULL) == cjson.null
 *   b:0; b:1;     boolean
 *   i:<n>;        number when |n| <= 2^53, otherwise an int64_t cdata (exact)
 *   d:<x>;        number (INF, -INF, NAN included).  Lua numbers serialize
 *                 as i: when integral with |v| <= 2^53, else as d:, except
 *                 members recorded in `floats`, which always give d:
 *   s:<n>:"..";   string (binary safe)
 *   a:<n>:{..}    table.  Keys exactly 0..n-1 in order: a sequence t[1..n].
 *                 Otherwise a map keyed by the PHP keys (int keys stay
 *                 numbers) whose key order is kept in the metatable.
 *   O:..:{..}     table of properties by bare name (visibility stripped);
 *                 class, mangled names and order kept in the metatable.
 *   E:..:"A:B";   table {class = "A", case = "B"} marked as enum.
 *   C:..:{..}     table {class = ..., data = <raw payload>} marked as custom.
 *   r:<n>; R:<n>; the n-th value already decoded (shared identity).
 *
 * Metadata lives in one metatable per container, never in visible keys:
 *   __name  "luaworker.php_array" | "luaworker.php_object" |
 *           "luaworker.php_enum" | "luaworker.php_custom"
 *   class   object class name (objects)
 *   keys    sequence of Lua keys in PHP order (maps and objects; absent for
 *           lists)
 *   names   object only: Lua key -> mangled PHP name, where they differ
 *   floats  Lua key -> true for members that were d: values
 *   refs    Lua key -> n (was r:n) or -n (was R:n)
 *   inner   custom only: the values decoded from the opaque payload, which
 *           PHP numbers as if they were part of the outer value
 *
 * Serialization re-emits that metadata so an unmodified decoded value gives
 * back the original bytes.  Plain tables serialize as a list when they are a
 * sequence 1..n, otherwise as a map with keys sorted (numbers ascending, then
 * strings).  Members added by Lua code go after the recorded ones, sorted the
 * same way, and object members added by Lua code are public.
 */
#include "php_value.h"

#include <lauxlib.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PHP_VALUE_MAX_DEPTH 512
#define PHP_VALUE_ARRAY "luaworker.php_array"
#define PHP_VALUE_OBJECT "luaworker.php_object"
#define PHP_VALUE_ENUM "luaworker.php_enum"
#define PHP_VALUE_CUSTOM "luaworker.php_custom"

/* 2^53: larger integers do not fit a double exactly. */
#define PHP_VALUE_EXACT_INT 9007199254740992LL

enum php_value_kind {
    PHP_VALUE_KIND_PLAIN,
    PHP_VALUE_KIND_FLOAT,
    PHP_VALUE_KIND_REF
};

enum php_value_helper {
    PHP_VALUE_HELPER_MAKE_INT64 = 1, /* (8-byte string) -> int64_t cdata */
    PHP_VALUE_HELPER_INT64_TEXT = 2, /* (v) -> decimal text of int64/uint64 cdata, or nil */
    PHP_VALUE_HELPER_SORT_KEYS = 3   /* (array of keys) -> sorts it in place */
};

/* Registry key of the table holding the helper functions. */
static const char php_value_helpers_key = 'h';

static const char php_value_helpers_src[] =
    "local ffi = require('ffi')\n"
    "local int64, uint64 = ffi.typeof('int64_t'), ffi.typeof('uint64_t')\n"
    "local pint64 = ffi.typeof('const int64_t *')\n"
    "local istype, cast, tostring, type, sort = ffi.istype, ffi.cast, tostring, type, table.sort\n"
    "local function make(s) return cast(pint64, s)[0] end\n"
    "local function text(v)\n"
    "  if istype(int64, v) then return (tostring(v):sub(1, -3)) end\n"
    "  if istype(uint64, v) then\n"
    "    if v > 9223372036854775807ULL then return nil end\n"
    "    return (tostring(v):sub(1, -4))\n"
    "  end\n"
    "  return nil\n"
    "end\n"
    "local function rank(k)\n"
    "  local t = type(k)\n"
    "  if t == 'number' or (t == 'cdata' and text(k)) then return 1 end\n"
    "  if t == 'string' then return 2 end\n"
    "  return 3\n"
    "end\n"
    "local function before(a, b)\n"
    "  local ra, rb = rank(a), rank(b)\n"
    "  if ra ~= rb then return ra < rb end\n"
    "  if ra == 3 then return tostring(a) < tostring(b) end\n"
    "  return a < b\n"
    "end\n"
    "local function sortkeys(t) sort(t, before) end\n"
    "return { make, text, sortkeys }\n";

/* Pushes helper function `which` (stack +1) and returns 0, or returns -1
 * with nothing pushed when the helpers cannot be loaded (no ffi). */
static int php_value_push_helper(lua_State *L, enum php_value_helper which)
{
    lua_pushlightuserdata(L, (void *)&php_value_helpers_key);
    lua_rawget(L, LUA_REGISTRYINDEX);
    if (!lua_istable(L, -1)) {
        lua_pop(L, 1);
        if (luaL_loadstring(L, php_value_helpers_src) != 0 || lua_pcall(L, 0, 1, 0) != 0
            || !lua_istable(L, -1)) {
            lua_pop(L, 1);
            return -1;
        }
        lua_pushlightuserdata(L, (void *)&php_value_helpers_key);
        lua_pushvalue(L, -2);
        lua_rawset(L, LUA_REGISTRYINDEX);
    }
    lua_rawgeti(L, -1, (int)which);
    lua_remove(L, -2);
    return 0;
}

enum php_value_type {
    PHP_VALUE_T_OTHER,  /* not a table, or a table without our metatable */
    PHP_VALUE_T_ARRAY,
    PHP_VALUE_T_OBJECT,
    PHP_VALUE_T_ENUM,
    PHP_VALUE_T_CUSTOM
};

/* Classifies the value at idx by its metatable __name.  Stack unchanged. */
static enum php_value_type php_value_type_of(lua_State *L, int idx)
{
    enum php_value_type type = PHP_VALUE_T_OTHER;
    if (lua_type(L, idx) != LUA_TTABLE || !lua_getmetatable(L, idx)) {
        return PHP_VALUE_T_OTHER;
    }
    lua_getfield(L, -1, "__name");
    if (lua_type(L, -1) == LUA_TSTRING) {
        const char *name = lua_tostring(L, -1);
        if (strcmp(name, PHP_VALUE_ARRAY) == 0) {
            type = PHP_VALUE_T_ARRAY;
        } else if (strcmp(name, PHP_VALUE_OBJECT) == 0) {
            type = PHP_VALUE_T_OBJECT;
        } else if (strcmp(name, PHP_VALUE_ENUM) == 0) {
            type = PHP_VALUE_T_ENUM;
        } else if (strcmp(name, PHP_VALUE_CUSTOM) == 0) {
            type = PHP_VALUE_T_CUSTOM;
        }
    }
    lua_pop(L, 2);
    return type;
}

/* Pushes a fresh metatable {__name = name} (stack +1). */
static void php_value_new_meta(lua_State *L, const char *name)
{
    lua_createtable(L, 0, 4);
    lua_pushstring(L, name);
    lua_setfield(L, -2, "__name");
}

/* Pushes mt[field] (a table), creating it when absent (stack +1).
 * mt is an absolute index. */
static void php_value_meta_sub(lua_State *L, int mt, const char *field)
{
    lua_getfield(L, mt, field);
    if (!lua_istable(L, -1)) {
        lua_pop(L, 1);
        lua_newtable(L);
        lua_pushvalue(L, -1);
        lua_setfield(L, mt, field);
    }
}

/* ------------------------------------------------------------------ */
/* Float formatting: PHP's serialize_precision = -1 (zend_gcvt mode 0). */

/* Writes the shortest round-trip decimal digits of finite x > 0 into digits
 * (no dot, no trailing zeros) and the decimal exponent such that
 * x = 0.DIGITS * 10^decpt.  digits must hold 32 bytes. */
static void php_value_shortest_digits(double x, char *digits, int *decpt)
{
    char buf[48];
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        char *e;
        size_t nd = 0;
        int exp10;
        const char *c;
        snprintf(buf, sizeof buf, "%.*e", prec - 1, x);
        e = strchr(buf, 'e');
        exp10 = atoi(e + 1);
        for (c = buf; c < e; c++) {
            if (*c >= '0' && *c <= '9') {
                digits[nd++] = *c;
            }
        }
        digits[nd] = '\0';
        if (strtod(buf, NULL) != x && prec < 17) {
            /* At a power of two the interval above x is twice as wide as the
             * one below: the rounded-up neighbour may still round-trip. */
            char alt[48];
            char up[32];
            size_t i = nd;
            int carry = 1;
            memcpy(up, digits, nd + 1);
            while (i > 0 && carry) {
                i--;
                if (up[i] == '9') {
                    up[i] = '0';
                } else {
                    up[i]++;
                    carry = 0;
                }
            }
            if (carry || strtod(buf, NULL) > x) {
                continue;
            }
            snprintf(alt, sizeof alt, "%c.%se%d", up[0], up + 1, exp10);
            if (strtod(alt, NULL) != x) {
                continue;
            }
            memcpy(digits, up, nd + 1);
        }
        while (nd > 1 && digits[nd - 1] == '0') {
            digits[--nd] = '\0';
        }
        *decpt = exp10 + 1;
        return;
    }
}

/* Formats d exactly like PHP's serialize() does (buf >= 64 bytes). */
static void php_value_format_double(double d, char *buf)
{
    char digits[32];
    char *dst = buf;
    int decpt;
    if (isnan(d)) {
        strcpy(buf, "NAN");
        return;
    }
    if (isinf(d)) {
        strcpy(buf, d < 0 ? "-INF" : "INF");
        return;
    }
    if (signbit(d)) {
        *dst++ = '-';
        d = -d;
    }
    if (d == 0) {
        strcpy(dst, "0");
        return;
    }
    php_value_shortest_digits(d, digits, &decpt);
    if (decpt < 0 ? decpt < -3 : decpt > 17) {
        /* exponential format, e.g. 1.0E+25 */
        const char *src = digits;
        int e = decpt - 1;
        *dst++ = *src++;
        *dst++ = '.';
        if (*src == '\0') {
            *dst++ = '0';
        }
        while (*src != '\0') {
            *dst++ = *src++;
        }
        sprintf(dst, "E%c%d", e < 0 ? '-' : '+', e < 0 ? -e : e);
    } else if (decpt <= 0) {
        *dst++ = '0';
        *dst++ = '.';
        while (decpt++ < 0) {
            *dst++ = '0';
        }
        strcpy(dst, digits);
    } else {
        const char *src = digits;
        int i;
        for (i = 0; i < decpt; i++) {
            *dst++ = *src != '\0' ? *src++ : '0';
        }
        if (*src != '\0') {
            *dst++ = '.';
            while (*src != '\0') {
                *dst++ = *src++;
            }
        }
        *dst = '\0';
    }
}

/* ------------------------------------------------------------------ */
/* Unserialize */

typedef struct {
    lua_State *L;
    const char *s;
    size_t len;
    size_t pos;
    int depth;
    int slots;      /* absolute stack index of the slot table (n -> value) */
    int nslots;     /* values numbered so far, PHP's var_hash numbering */
    int last_ref;   /* after a KIND_REF value: n for r:n, -n for R:n */
    char *err;      /* caller's buffer, filled once on the first error */
    size_t errlen;
} php_value_reader;

static int php_value_parse(php_value_reader *r, enum php_value_kind *kind);

/* Records "<what> at offset <at>" and returns -1. */
static int php_value_fail(php_value_reader *r, const char *what, size_t at)
{
    if (r->errlen > 0) {
        snprintf(r->err, r->errlen, "%s at offset %lu", what, (unsigned long)at);
    }
    return -1;
}

static int php_value_expect(php_value_reader *r, char c)
{
    char what[16];
    if (r->pos >= r->len) {
        return php_value_fail(r, "unexpected end of input", r->pos);
    }
    if (r->s[r->pos] != c) {
        snprintf(what, sizeof what, "expected '%c'", c);
        return php_value_fail(r, what, r->pos);
    }
    r->pos++;
    return 0;
}

/* Parses an unsigned decimal (lengths, counts, reference numbers) of at
 * most 15 digits; `what` names it in the error. */
static int php_value_parse_uiv(php_value_reader *r, size_t *out, const char *what)
{
    size_t start = r->pos;
    size_t v = 0;
    while (r->pos < r->len && r->s[r->pos] >= '0' && r->s[r->pos] <= '9') {
        if (r->pos - start >= 15) {
            return php_value_fail(r, what, start);
        }
        v = v * 10 + (size_t)(r->s[r->pos] - '0');
        r->pos++;
    }
    if (r->pos == start) {
        if (r->pos >= r->len) {
            return php_value_fail(r, "unexpected end of input", r->pos);
        }
        return php_value_fail(r, what, start);
    }
    *out = v;
    return 0;
}

/* Parses [+-]?[0-9]+ into a signed 64-bit integer. */
static int php_value_parse_int(php_value_reader *r, int64_t *out)
{
    size_t start = r->pos;
    int neg = 0;
    uint64_t v = 0;
    uint64_t limit;
    size_t digits = r->pos;
    if (r->pos < r->len && (r->s[r->pos] == '-' || r->s[r->pos] == '+')) {
        neg = r->s[r->pos] == '-';
        r->pos++;
        digits = r->pos;
    }
    limit = neg ? (uint64_t)INT64_MAX + 1u : (uint64_t)INT64_MAX;
    while (r->pos < r->len && r->s[r->pos] >= '0' && r->s[r->pos] <= '9') {
        unsigned d = (unsigned)(r->s[r->pos] - '0');
        if (v > (limit - d) / 10) {
            return php_value_fail(r, "integer out of range", start);
        }
        v = v * 10 + d;
        r->pos++;
    }
    if (r->pos == digits) {
        if (r->pos >= r->len) {
            return php_value_fail(r, "unexpected end of input", r->pos);
        }
        return php_value_fail(r, "invalid integer", start);
    }
    if (neg) {
        *out = v == (uint64_t)INT64_MAX + 1u ? INT64_MIN : -(int64_t)v;
    } else {
        *out = (int64_t)v;
    }
    return 0;
}

/* Pushes v as a number, or as int64_t cdata when beyond 2^53 (stack +1). */
static int php_value_push_int(php_value_reader *r, int64_t v, size_t at)
{
    lua_State *L = r->L;
    if (v >= -PHP_VALUE_EXACT_INT && v <= PHP_VALUE_EXACT_INT) {
        lua_pushnumber(L, (lua_Number)v);
        return 0;
    }
    if (php_value_push_helper(L, PHP_VALUE_HELPER_MAKE_INT64) != 0) {
        return php_value_fail(r, "64-bit integer unsupported (no ffi)", at);
    }
    lua_pushlstring(L, (const char *)&v, sizeof v);
    if (lua_pcall(L, 1, 1, 0) != 0) {
        lua_pop(L, 1);
        return php_value_fail(r, "64-bit integer unsupported (no ffi)", at);
    }
    return 0;
}

/* Parses the body of d:...; (at r->pos) and pushes the number. */
static int php_value_parse_double(php_value_reader *r)
{
    size_t start = r->pos;
    size_t end = start;
    size_t i;
    char buf[128];
    double d;
    while (end < r->len && r->s[end] != ';') {
        end++;
    }
    if (end >= r->len) {
        return php_value_fail(r, "unexpected end of input", r->len);
    }
    if (end - start >= sizeof buf) {
        return php_value_fail(r, "invalid float", start);
    }
    memcpy(buf, r->s + start, end - start);
    buf[end - start] = '\0';
    if (strcmp(buf, "NAN") == 0) {
        d = NAN;
    } else if (strcmp(buf, "INF") == 0) {
        d = HUGE_VAL;
    } else if (strcmp(buf, "-INF") == 0) {
        d = -HUGE_VAL;
    } else {
        /* [+-]? (digits* '.' digits+ | digits+ '.'? digits*) ([eE] [+-]? digits+)? */
        size_t nint = 0;
        size_t nfrac = 0;
        i = 0;
        if (buf[i] == '+' || buf[i] == '-') {
            i++;
        }
        while (buf[i] >= '0' && buf[i] <= '9') {
            i++;
            nint++;
        }
        if (buf[i] == '.') {
            i++;
            while (buf[i] >= '0' && buf[i] <= '9') {
                i++;
                nfrac++;
            }
        }
        if (nint + nfrac == 0) {
            return php_value_fail(r, "invalid float", start);
        }
        if (buf[i] == 'e' || buf[i] == 'E') {
            size_t nexp = 0;
            i++;
            if (buf[i] == '+' || buf[i] == '-') {
                i++;
            }
            while (buf[i] >= '0' && buf[i] <= '9') {
                i++;
                nexp++;
            }
            if (nexp == 0) {
                return php_value_fail(r, "invalid float", start);
            }
        }
        if (buf[i] != '\0') {
            return php_value_fail(r, "invalid float", start);
        }
        d = strtod(buf, NULL);
    }
    r->pos = end + 1;
    lua_pushnumber(r->L, (lua_Number)d);
    return 0;
}

/* Parses <len>:"<bytes>" (at r->pos); returns the bytes in place. */
static int php_value_parse_quoted(php_value_reader *r, const char **p, size_t *n, const char *what)
{
    size_t at = r->pos;
    if (php_value_parse_uiv(r, n, what) != 0 || php_value_expect(r, ':') != 0
        || php_value_expect(r, '"') != 0) {
        return -1;
    }
    if (*n > r->len - r->pos) {
        return php_value_fail(r, "length exceeds input", at);
    }
    *p = r->s + r->pos;
    r->pos += *n;
    return php_value_expect(r, '"');
}

/* PHP class names: [A-Za-z0-9_\x80-\xff\\]+ */
static int php_value_valid_class(const char *p, size_t n)
{
    size_t i;
    if (n == 0) {
        return 0;
    }
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
              || c == '_' || c == '\\' || c >= 0x80)) {
            return 0;
        }
    }
    return 1;
}

/* Parses <count>:{ and checks the count against the remaining input
 * (each member needs at least 6 bytes, e.g. i:0;N;). */
static int php_value_parse_count(php_value_reader *r, size_t *count, size_t at)
{
    size_t cat = r->pos;
    if (php_value_parse_uiv(r, count, "invalid element count") != 0
        || php_value_expect(r, ':') != 0 || php_value_expect(r, '{') != 0) {
        return -1;
    }
    if (*count > (r->len - r->pos) / 6) {
        return php_value_fail(r, "element count exceeds input", cat);
    }
    if (r->depth >= PHP_VALUE_MAX_DEPTH) {
        return php_value_fail(r, "nesting too deep", at);
    }
    return 0;
}

/* Parses an array or object key (i: or s:) and pushes it (stack +1).
 * *is_int / *ival describe an integer key. */
static int php_value_parse_key(php_value_reader *r, int *is_int, int64_t *ival)
{
    size_t at = r->pos;
    if (r->pos + 1 >= r->len) {
        return php_value_fail(r, "unexpected end of input", r->len);
    }
    if (r->s[r->pos] == 'i' && r->s[r->pos + 1] == ':') {
        r->pos += 2;
        if (php_value_parse_int(r, ival) != 0 || php_value_expect(r, ';') != 0) {
            return -1;
        }
        *is_int = 1;
        return php_value_push_int(r, *ival, at);
    }
    if (r->s[r->pos] == 's' && r->s[r->pos + 1] == ':') {
        const char *p;
        size_t n;
        r->pos += 2;
        if (php_value_parse_quoted(r, &p, &n, "invalid string length") != 0
            || php_value_expect(r, ';') != 0) {
            return -1;
        }
        *is_int = 0;
        lua_pushlstring(r->L, p, n);
        return 0;
    }
    return php_value_fail(r, "invalid key", at);
}

/* Stores a member's metadata: floats[key] or refs[key] (key at kidx). */
static void php_value_note_kind(php_value_reader *r, int mt, int kidx, enum php_value_kind kind)
{
    lua_State *L = r->L;
    if (kind == PHP_VALUE_KIND_PLAIN) {
        return;
    }
    php_value_meta_sub(L, mt, kind == PHP_VALUE_KIND_FLOAT ? "floats" : "refs");
    lua_pushvalue(L, kidx);
    if (kind == PHP_VALUE_KIND_FLOAT) {
        lua_pushboolean(L, 1);
    } else {
        lua_pushinteger(L, r->last_ref);
    }
    lua_rawset(L, -3);
    lua_pop(L, 1);
}

/* Moves tbl[1..n] to tbl[0..n-1] (tbl absolute). */
static void php_value_shift_down(lua_State *L, int tbl, int n)
{
    int j;
    for (j = 1; j <= n; j++) {
        lua_rawgeti(L, tbl, j);
        lua_rawseti(L, tbl, j - 1);
    }
    lua_pushnil(L);
    lua_rawseti(L, tbl, n);
}

/* a:<n>:{...} (r->pos after "a:"); pushes the table. */
static int php_value_parse_array(php_value_reader *r, size_t at)
{
    lua_State *L = r->L;
    size_t count, i;
    int t, mt, keys, list = 1;
    if (php_value_parse_count(r, &count, at) != 0) {
        return -1;
    }
    lua_createtable(L, (int)count, 0);
    t = lua_gettop(L);
    php_value_new_meta(L, PHP_VALUE_ARRAY);
    mt = t + 1;
    lua_pushnil(L); /* becomes the keys table if this is a map */
    keys = t + 2;
    lua_pushvalue(L, mt);
    lua_setmetatable(L, t);
    lua_pushvalue(L, t);
    lua_rawseti(L, r->slots, ++r->nslots);
    r->depth++;
    for (i = 0; i < count; i++) {
        int is_int;
        int64_t ival = 0;
        enum php_value_kind kind;
        int k;
        if (php_value_parse_key(r, &is_int, &ival) != 0) {
            return -1;
        }
        k = lua_gettop(L);
        if (php_value_parse(r, &kind) != 0) {
            return -1;
        }
        if (list && !(is_int && ival == (int64_t)i)) {
            /* Not a list after all: re-key the members 1..i as 0..i-1. */
            size_t j;
            const char *subs[2] = { "floats", "refs" };
            int s;
            list = 0;
            php_value_shift_down(L, t, (int)i);
            for (s = 0; s < 2; s++) {
                lua_getfield(L, mt, subs[s]);
                if (lua_istable(L, -1)) {
                    php_value_shift_down(L, lua_gettop(L), (int)i);
                }
                lua_pop(L, 1);
            }
            lua_createtable(L, (int)count, 0);
            for (j = 0; j < i; j++) {
                lua_pushnumber(L, (lua_Number)j);
                lua_rawseti(L, -2, (int)j + 1);
            }
            lua_pushvalue(L, -1);
            lua_setfield(L, mt, "keys");
            lua_replace(L, keys);
        }
        if (list) {
            lua_rawseti(L, t, (int)i + 1);
            lua_pushnumber(L, (lua_Number)i + 1);
            lua_replace(L, k);
        } else {
            lua_pushvalue(L, k);
            lua_rawget(L, t);
            if (lua_isnil(L, -1)) {
                lua_pushvalue(L, k);
                lua_rawseti(L, keys, (int)lua_objlen(L, keys) + 1);
            }
            lua_pop(L, 1);
            lua_pushvalue(L, k);
            lua_insert(L, -2);
            lua_rawset(L, t);
        }
        php_value_note_kind(r, mt, k, kind);
        lua_settop(L, k - 1);
    }
    r->depth--;
    if (php_value_expect(r, '}') != 0) {
        return -1;
    }
    lua_settop(L, t);
    return 0;
}

/* O:<n>:"Class":<n>:{...} (r->pos after "O:"); pushes the table. */
static int php_value_parse_object(php_value_reader *r, size_t at)
{
    lua_State *L = r->L;
    const char *cls;
    size_t clen, count, i;
    int t, mt, keys, names, seen, index;
    if (php_value_parse_quoted(r, &cls, &clen, "invalid class name length") != 0
        || php_value_expect(r, ':') != 0) {
        return -1;
    }
    if (!php_value_valid_class(cls, clen)) {
        return php_value_fail(r, "invalid class name", at + 2);
    }
    if (php_value_parse_count(r, &count, at) != 0) {
        return -1;
    }
    lua_createtable(L, 0, (int)count);
    t = lua_gettop(L);
    php_value_new_meta(L, PHP_VALUE_OBJECT);
    mt = t + 1;
    lua_pushlstring(L, cls, clen);
    lua_setfield(L, mt, "class");
    lua_createtable(L, (int)count, 0);
    keys = t + 2;
    lua_pushvalue(L, keys);
    lua_setfield(L, mt, "keys");
    lua_newtable(L);
    names = t + 3;
    lua_pushvalue(L, names);
    lua_setfield(L, mt, "names");
    lua_newtable(L); /* mangled name -> Lua key */
    seen = t + 4;
    lua_newtable(L); /* Lua key -> position in keys */
    index = t + 5;
    lua_pushvalue(L, mt);
    lua_setmetatable(L, t);
    lua_pushvalue(L, t);
    lua_rawseti(L, r->slots, ++r->nslots);
    r->depth++;
    for (i = 0; i < count; i++) {
        int is_int;
        int64_t ival;
        enum php_value_kind kind;
        int k, v;
        if (php_value_parse_key(r, &is_int, &ival) != 0) {
            return -1;
        }
        k = lua_gettop(L);
        if (php_value_parse(r, &kind) != 0) {
            return -1;
        }
        v = k + 1;
        if (is_int) {
            lua_pushvalue(L, k); /* Lua key */
        } else {
            size_t mlen;
            const char *m = lua_tolstring(L, k, &mlen);
            lua_pushvalue(L, k);
            lua_rawget(L, seen);
            if (lua_isnil(L, -1)) {
                /* bare name: after the second NUL of \0Class\0name / \0*\0name */
                const char *bare = m;
                size_t blen = mlen;
                if (mlen > 0 && m[0] == '\0') {
                    const char *z = memchr(m + 1, '\0', mlen - 1);
                    if (z != NULL) {
                        bare = z + 1;
                        blen = mlen - (size_t)(bare - m);
                    }
                }
                lua_pop(L, 1);
                lua_pushlstring(L, bare, blen);
                lua_pushvalue(L, -1);
                lua_rawget(L, t);
                if (!lua_isnil(L, -1)) {
                    lua_pop(L, 1);
                    if (bare != m) {
                        /* collision: the later one keeps its mangled name */
                        lua_pop(L, 1);
                        lua_pushvalue(L, k);
                    } else {
                        /* a public name taken by an earlier non-public one:
                         * the earlier one moves to its mangled name */
                        int b = lua_gettop(L);
                        lua_pushvalue(L, b);
                        lua_rawget(L, names); /* earlier mangled name m0 */
                        lua_pushvalue(L, -1);
                        lua_pushvalue(L, b);
                        lua_rawget(L, t);
                        lua_rawset(L, t);     /* t[m0] = t[bare] */
                        lua_pushvalue(L, b);
                        lua_rawget(L, index);
                        lua_pushvalue(L, -2);
                        lua_rawseti(L, keys, (int)lua_tointeger(L, -2)); /* keys[i] = m0 */
                        lua_pushvalue(L, -2);
                        lua_insert(L, -2);
                        lua_rawset(L, index); /* index[m0] = i */
                        lua_pushvalue(L, -1);
                        lua_pushvalue(L, -1);
                        lua_rawset(L, seen);  /* seen[m0] = m0 */
                        {
                            const char *subs[2] = { "floats", "refs" };
                            int s;
                            for (s = 0; s < 2; s++) {
                                lua_getfield(L, mt, subs[s]);
                                if (lua_istable(L, -1)) {
                                    lua_pushvalue(L, -2);
                                    lua_pushvalue(L, b);
                                    lua_rawget(L, -3);
                                    lua_rawset(L, -3);
                                    lua_pushvalue(L, b);
                                    lua_pushnil(L);
                                    lua_rawset(L, -3);
                                }
                                lua_pop(L, 1);
                            }
                        }
                        lua_pop(L, 1);
                        lua_pushvalue(L, b);
                        lua_pushnil(L);
                        lua_rawset(L, t);
                        lua_pushvalue(L, b);
                        lua_pushnil(L);
                        lua_rawset(L, names);
                        lua_pushvalue(L, b);
                        lua_pushnil(L);
                        lua_rawset(L, index);
                    }
                } else {
                    lua_pop(L, 1);
                }
                /* stack: k v luakey ; record names/seen */
                if (!lua_rawequal(L, -1, k)) {
                    lua_pushvalue(L, -1);
                    lua_pushvalue(L, k);
                    lua_rawset(L, names);
                }
                lua_pushvalue(L, k);
                lua_pushvalue(L, -2);
                lua_rawset(L, seen);
            }
        }
        /* stack: k v luakey */
        lua_pushvalue(L, -1);
        lua_rawget(L, t);
        if (lua_isnil(L, -1)) {
            int n = (int)lua_objlen(L, keys) + 1;
            lua_pushvalue(L, -2);
            lua_rawseti(L, keys, n);
            lua_pushvalue(L, -2);
            lua_pushinteger(L, n);
            lua_rawset(L, index);
        }
        lua_pop(L, 1);
        lua_pushvalue(L, -1);
        lua_pushvalue(L, v);
        lua_rawset(L, t);
        php_value_note_kind(r, mt, lua_gettop(L), kind);
        lua_settop(L, k - 1);
    }
    r->depth--;
    if (php_value_expect(r, '}') != 0) {
        return -1;
    }
    lua_settop(L, t);
    return 0;
}

/* E:<n>:"Enum:Case"; (r->pos after "E:"); pushes the table. */
static int php_value_parse_enum(php_value_reader *r, size_t at)
{
    lua_State *L = r->L;
    const char *p, *colon;
    size_t n;
    if (php_value_parse_quoted(r, &p, &n, "invalid enum length") != 0
        || php_value_expect(r, ';') != 0) {
        return -1;
    }
    colon = memchr(p, ':', n);
    if (colon == NULL || !php_value_valid_class(p, (size_t)(colon - p)) || colon + 1 == p + n) {
        return php_value_fail(r, "invalid enum name", at);
    }
    lua_createtable(L, 0, 2);
    lua_pushlstring(L, p, (size_t)(colon - p));
    lua_setfield(L, -2, "class");
    lua_pushlstring(L, colon + 1, (size_t)(p + n - colon - 1));
    lua_setfield(L, -2, "case");
    php_value_new_meta(L, PHP_VALUE_ENUM);
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_rawseti(L, r->slots, ++r->nslots);
    return 0;
}

/* C:<n>:"Class":<n>:{data} (r->pos after "C:"); pushes the table. */
static int php_value_parse_custom(php_value_reader *r, size_t at)
{
    lua_State *L = r->L;
    const char *cls, *data;
    size_t clen, dlen, dat;
    int t, first;
    php_value_reader sub;
    char suberr[8];
    enum php_value_kind kind;
    if (php_value_parse_quoted(r, &cls, &clen, "invalid class name length") != 0
        || php_value_expect(r, ':') != 0) {
        return -1;
    }
    if (!php_value_valid_class(cls, clen)) {
        return php_value_fail(r, "invalid class name", at + 2);
    }
    dat = r->pos;
    if (php_value_parse_uiv(r, &dlen, "invalid data length") != 0 || php_value_expect(r, ':') != 0
        || php_value_expect(r, '{') != 0) {
        return -1;
    }
    if (dlen > r->len - r->pos) {
        return php_value_fail(r, "length exceeds input", dat);
    }
    data = r->s + r->pos;
    r->pos += dlen;
    if (php_value_expect(r, '}') != 0) {
        return -1;
    }
    if (r->depth >= PHP_VALUE_MAX_DEPTH) {
        return php_value_fail(r, "nesting too deep", at);
    }
    lua_createtable(L, 0, 2);
    t = lua_gettop(L);
    lua_pushlstring(L, cls, clen);
    lua_setfield(L, t, "class");
    lua_pushlstring(L, data, dlen);
    lua_setfield(L, t, "data");
    php_value_new_meta(L, PHP_VALUE_CUSTOM);
    lua_pushvalue(L, -1);
    lua_setmetatable(L, t);
    lua_pushvalue(L, t);
    lua_rawseti(L, r->slots, ++r->nslots);
    /* Serializable::serialize() usually calls serialize() itself, which
     * shares PHP's numbering with the outer value: number what it holds. */
    first = r->nslots;
    sub = *r;
    sub.s = data;
    sub.len = dlen;
    sub.pos = 0;
    sub.depth = r->depth + 1;
    sub.err = suberr;
    sub.errlen = sizeof suberr;
    if (php_value_parse(&sub, &kind) == 0 && sub.pos == dlen) {
        int j;
        lua_createtable(L, sub.nslots - first, 0);
        for (j = first + 1; j <= sub.nslots; j++) {
            lua_rawgeti(L, r->slots, j);
            lua_rawseti(L, -2, j - first);
        }
        lua_setfield(L, t + 1, "inner");
        r->nslots = sub.nslots;
    }
    lua_settop(L, t);
    return 0;
}

/* Parses one value at r->pos and pushes it (stack +1).  *kind tells the
 * container whether it was a float or an r:/R: token.  On error returns -1;
 * the caller resets the stack. */
static int php_value_parse(php_value_reader *r, enum php_value_kind *kind)
{
    lua_State *L = r->L;
    size_t at = r->pos;
    char type;
    *kind = PHP_VALUE_KIND_PLAIN;
    if (!lua_checkstack(L, 12)) {
        return php_value_fail(r, "nesting too deep", at);
    }
    if (r->pos >= r->len) {
        return php_value_fail(r, "unexpected end of input", r->pos);
    }
    type = r->s[r->pos];
    if (strchr("NbidsaOECrR", type) == NULL || type == '\0') {
        char what[32];
        if (type > ' ' && type < 127) {
            snprintf(what, sizeof what, "unknown type '%c'", type);
        } else {
            snprintf(what, sizeof what, "unknown type");
        }
        return php_value_fail(r, what, at);
    }
    r->pos++;
    if (type == 'N') {
        if (php_value_expect(r, ';') != 0) {
            return -1;
        }
        lua_pushlightuserdata(L, NULL);
        lua_pushvalue(L, -1);
        lua_rawseti(L, r->slots, ++r->nslots);
        return 0;
    }
    if (php_value_expect(r, ':') != 0) {
        return -1;
    }
    switch (type) {
    case 'b':
        if (r->pos >= r->len) {
            return php_value_fail(r, "unexpected end of input", r->pos);
        }
        if (r->s[r->pos] != '0' && r->s[r->pos] != '1') {
            return php_value_fail(r, "invalid boolean", r->pos);
        }
        r->pos++;
        if (php_value_expect(r, ';') != 0) {
            return -1;
        }
        lua_pushboolean(L, r->s[r->pos - 2] == '1');
        break;
    case 'i': {
        int64_t v;
        if (php_value_parse_int(r, &v) != 0 || php_value_expect(r, ';') != 0
            || php_value_push_int(r, v, at) != 0) {
            return -1;
        }
        break;
    }
    case 'd':
        if (php_value_parse_double(r) != 0) {
            return -1;
        }
        *kind = PHP_VALUE_KIND_FLOAT;
        break;
    case 's': {
        const char *p;
        size_t n;
        if (php_value_parse_quoted(r, &p, &n, "invalid string length") != 0
            || php_value_expect(r, ';') != 0) {
            return -1;
        }
        lua_pushlstring(L, p, n);
        break;
    }
    case 'a':
        return php_value_parse_array(r, at);
    case 'O':
        return php_value_parse_object(r, at);
    case 'E':
        return php_value_parse_enum(r, at);
    case 'C':
        return php_value_parse_custom(r, at);
    default: { /* r or R */
        size_t n;
        if (php_value_parse_uiv(r, &n, "invalid reference") != 0 || php_value_expect(r, ';') != 0) {
            return -1;
        }
        if (n < 1 || n > (size_t)r->nslots) {
            return php_value_fail(r, "reference out of range", at);
        }
        lua_rawgeti(L, r->slots, (int)n);
        *kind = PHP_VALUE_KIND_REF;
        r->last_ref = type == 'r' ? (int)n : -(int)n;
        if (type == 'R') {
            return 0; /* R: takes no number of its own */
        }
        break;
    }
    }
    lua_pushvalue(L, -1);
    lua_rawseti(L, r->slots, ++r->nslots);
    return 0;
}

int php_value_unserialize(lua_State *L, const char *s, size_t len, char *err, size_t errlen)
{
    php_value_reader r;
    enum php_value_kind kind;
    int base = lua_gettop(L);
    if (!lua_checkstack(L, 16)) {
        if (errlen > 0) {
            snprintf(err, errlen, "stack overflow at offset 0");
        }
        return -1;
    }
    lua_newtable(L);
    r.L = L;
    r.s = s;
    r.len = len;
    r.pos = 0;
    r.depth = 0;
    r.slots = base + 1;
    r.nslots = 0;
    r.last_ref = 0;
    r.err = err;
    r.errlen = errlen;
    if (php_value_parse(&r, &kind) != 0) {
        lua_settop(L, base);
        return -1;
    }
    if (r.pos != len) {
        php_value_fail(&r, "trailing data", r.pos);
        lua_settop(L, base);
        return -1;
    }
    lua_replace(L, base + 1);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Serialize */

typedef struct {
    lua_State *L;
    int buf;        /* absolute index of the buffer userdata */
    char *p;        /* its memory */
    size_t n, cap;
    int slot_of;    /* table -> its number (first emission) */
    int slot_values;/* number -> value emitted there */
    int active;     /* arrays being emitted (cycle check) */
    int enums;      /* "Class:Case" -> number */
    int nslots;
    int depth;
    char *err;
    size_t errlen;
} php_value_writer;

static int php_value_emit(php_value_writer *w, int idx);

static int php_value_wfail(php_value_writer *w, const char *what)
{
    if (w->errlen > 0) {
        snprintf(w->err, w->errlen, "%s", what);
    }
    return -1;
}

static void php_value_put(php_value_writer *w, const char *p, size_t n)
{
    if (w->cap - w->n < n) {
        size_t cap = w->cap * 2;
        char *np;
        while (cap - w->n < n) {
            cap *= 2;
        }
        np = lua_newuserdata(w->L, cap);
        memcpy(np, w->p, w->n);
        lua_replace(w->L, w->buf);
        w->p = np;
        w->cap = cap;
    }
    memcpy(w->p + w->n, p, n);
    w->n += n;
}

static void php_value_puts(php_value_writer *w, const char *s)
{
    php_value_put(w, s, strlen(s));
}

static void php_value_put_int(php_value_writer *w, char type, long long v)
{
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%c:%lld;", type, v);
    php_value_put(w, tmp, (size_t)n);
}

static void php_value_put_string(php_value_writer *w, const char *s, size_t n)
{
    char tmp[32];
    int k = snprintf(tmp, sizeof tmp, "s:%lu:\"", (unsigned long)n);
    php_value_put(w, tmp, (size_t)k);
    php_value_put(w, s, n);
    php_value_put(w, "\";", 2);
}

static void php_value_put_double(php_value_writer *w, double d)
{
    char tmp[72];
    tmp[0] = 'd';
    tmp[1] = ':';
    php_value_format_double(d, tmp + 2);
    strcat(tmp, ";");
    php_value_puts(w, tmp);
}

/* Gives the value at idx the next number (PHP's var_hash counter). */
static void php_value_number(php_value_writer *w, int idx)
{
    lua_pushvalue(w->L, idx);
    lua_rawseti(w->L, w->slot_values, ++w->nslots);
}

/* Emits i:<text>; for an int64/uint64 cdata at idx. */
static int php_value_put_cdata_int(php_value_writer *w, int idx, int as_key)
{
    lua_State *L = w->L;
    size_t n;
    const char *txt;
    if (php_value_push_helper(L, PHP_VALUE_HELPER_INT64_TEXT) != 0) {
        return php_value_wfail(w, "cannot serialize cdata value");
    }
    lua_pushvalue(L, idx);
    if (lua_pcall(L, 1, 1, 0) != 0 || lua_type(L, -1) != LUA_TSTRING) {
        lua_pop(L, 1);
        return php_value_wfail(w, as_key ? "invalid array key (cdata)"
                                         : "cannot serialize cdata value");
    }
    txt = lua_tolstring(L, -1, &n);
    php_value_put(w, "i:", 2);
    php_value_put(w, txt, n);
    php_value_put(w, ";", 1);
    lua_pop(L, 1);
    return 0;
}

/* Emits the key at idx (list: the Lua index minus one). */
static int php_value_emit_key(php_value_writer *w, int idx, int list)
{
    lua_State *L = w->L;
    switch (lua_type(L, idx)) {
    case LUA_TNUMBER: {
        double d = lua_tonumber(L, idx) - (list ? 1 : 0);
        if (d != floor(d) || d < -9223372036854775808.0 || d >= 9223372036854775808.0) {
            return php_value_wfail(w, "invalid array key (non-integer number)");
        }
        php_value_put_int(w, 'i', (long long)d);
        return 0;
    }
    case LUA_TSTRING: {
        size_t n;
        const char *s = lua_tolstring(L, idx, &n);
        php_value_put_string(w, s, n);
        return 0;
    }
    case 10: /* LUA_TCDATA */
        return php_value_put_cdata_int(w, idx, 1);
    default: {
        char what[64];
        snprintf(what, sizeof what, "invalid array key (%s)", luaL_typename(L, idx));
        return php_value_wfail(w, what);
    }
    }
}

/* Emits the value (at vidx) of the container member whose Lua key is at
 * kidx (the key itself is written by the caller), using the
 * container's metatable at mt (0 when none) for floats and references. */
static int php_value_emit_member(php_value_writer *w, int mt, int kidx, int vidx)
{
    lua_State *L = w->L;
    int top = lua_gettop(L);
    if (mt != 0) {
        lua_getfield(L, mt, "refs");
        if (lua_istable(L, -1)) {
            lua_pushvalue(L, kidx);
            lua_rawget(L, -2);
            if (lua_type(L, -1) == LUA_TNUMBER) {
                int ref = (int)lua_tointeger(L, -1);
                char kind = ref > 0 ? 'r' : 'R';
                int target = 0;
                if (lua_istable(L, vidx)) {
                    lua_pushvalue(L, vidx);
                    lua_rawget(L, w->slot_of);
                    target = (int)lua_tointeger(L, -1);
                } else {
                    int orig = ref > 0 ? ref : -ref;
                    lua_rawgeti(L, w->slot_values, orig);
                    if (orig <= w->nslots && lua_rawequal(L, -1, vidx)) {
                        target = orig;
                    }
                }
                if (target > 0) {
                    php_value_put_int(w, kind, target);
                    if (kind == 'r') {
                        php_value_number(w, vidx);
                    }
                    lua_settop(L, top);
                    return 0;
                }
            }
        }
        lua_settop(L, top);
        if (lua_type(L, vidx) == LUA_TNUMBER) {
            lua_getfield(L, mt, "floats");
            if (lua_istable(L, -1)) {
                lua_pushvalue(L, kidx);
                lua_rawget(L, -2);
                if (lua_toboolean(L, -1)) {
                    lua_settop(L, top);
                    php_value_number(w, vidx);
                    php_value_put_double(w, lua_tonumber(L, vidx));
                    return 0;
                }
            }
            lua_settop(L, top);
        }
    }
    return php_value_emit(w, vidx);
}

/* Pushes the member order of the table at t (stack +1): either nil for a
 * sequence 1..n (*count = n) or an array of keys (*count = its length).
 * Keys recorded in mt.keys come first (when present in t), the rest sorted. */
static int php_value_order(php_value_writer *w, int t, int mt, int *count)
{
    lua_State *L = w->L;
    int order, total = 0, n = 0, seq = 1, has_keys = 0;
    lua_pushnil(L);
    while (lua_next(L, t) != 0) {
        lua_pop(L, 1);
        total++;
        if (seq && !(lua_type(L, -1) == LUA_TNUMBER && lua_tonumber(L, -1) == (lua_Number)total)) {
            seq = 0;
        }
    }
    /* lua_next order is not guaranteed ascending: confirm with rawgeti */
    if (!seq) {
        int i;
        seq = 1;
        for (i = 1; i <= total; i++) {
            lua_rawgeti(L, t, i);
            if (lua_isnil(L, -1)) {
                seq = 0;
            }
            lua_pop(L, 1);
            if (!seq) {
                break;
            }
        }
    }
    if (mt != 0) {
        lua_getfield(L, mt, "keys");
        has_keys = lua_istable(L, -1);
        lua_pop(L, 1);
    }
    if (!has_keys && seq) {
        lua_pushnil(L);
        *count = total;
        return 0;
    }
    lua_createtable(L, total, 0);
    order = lua_gettop(L);
    if (has_keys) {
        int i, nk;
        lua_getfield(L, mt, "keys");
        nk = (int)lua_objlen(L, -1);
        lua_newtable(L); /* keys already placed */
        for (i = 1; i <= nk; i++) {
            lua_rawgeti(L, -2, i);
            if (!lua_isnil(L, -1)) {
                lua_pushvalue(L, -1);
                lua_rawget(L, t);
                if (!lua_isnil(L, -1)) {
                    lua_pushvalue(L, -2);
                    lua_rawget(L, -4);
                    if (lua_isnil(L, -1)) {
                        lua_pushvalue(L, -3);
                        lua_rawseti(L, order, ++n);
                        lua_pushvalue(L, -3);
                        lua_pushboolean(L, 1);
                        lua_rawset(L, -6);
                    }
                    lua_pop(L, 1);
                }
                lua_pop(L, 1);
            }
            lua_pop(L, 1);
        }
        if (n < total) {
            int extra = lua_gettop(L) + 1;
            int j, ne = 0;
            lua_newtable(L);
            lua_pushnil(L);
            while (lua_next(L, t) != 0) {
                lua_pop(L, 1);
                lua_pushvalue(L, -1);
                lua_rawget(L, extra - 1);
                if (lua_isnil(L, -1)) {
                    lua_pushvalue(L, -2);
                    lua_rawseti(L, extra, ++ne);
                }
                lua_pop(L, 1);
            }
            if (php_value_push_helper(L, PHP_VALUE_HELPER_SORT_KEYS) != 0) {
                return php_value_wfail(w, "cannot sort keys (no ffi)");
            }
            lua_pushvalue(L, extra);
            if (lua_pcall(L, 1, 0, 0) != 0) {
                lua_pop(L, 1);
                return php_value_wfail(w, "cannot sort keys");
            }
            for (j = 1; j <= ne; j++) {
                lua_rawgeti(L, extra, j);
                lua_rawseti(L, order, ++n);
            }
        }
        lua_settop(L, order);
    } else {
        lua_pushnil(L);
        while (lua_next(L, t) != 0) {
            lua_pop(L, 1);
            lua_pushvalue(L, -1);
            lua_rawseti(L, order, ++n);
        }
        if (php_value_push_helper(L, PHP_VALUE_HELPER_SORT_KEYS) != 0) {
            return php_value_wfail(w, "cannot sort keys (no ffi)");
        }
        lua_pushvalue(L, order);
        if (lua_pcall(L, 1, 0, 0) != 0) {
            lua_pop(L, 1);
            return php_value_wfail(w, "cannot sort keys");
        }
    }
    *count = n;
    return 0;
}

/* Emits the members {...} of the table at t in order; mt may be 0. */
static int php_value_emit_members(php_value_writer *w, int t, int mt)
{
    lua_State *L = w->L;
    int count, i, order;
    char tmp[32];
    if (php_value_order(w, t, mt, &count) != 0) {
        return -1;
    }
    order = lua_gettop(L);
    snprintf(tmp, sizeof tmp, "%d:{", count);
    php_value_puts(w, tmp);
    for (i = 1; i <= count; i++) {
        if (lua_isnil(L, order)) {
            lua_pushnumber(L, i);
        } else {
            lua_rawgeti(L, order, i);
        }
        lua_pushvalue(L, -1);
        lua_rawget(L, t);
        if (php_value_emit_key(w, order + 1, lua_isnil(L, order)) != 0
            || php_value_emit_member(w, mt, order + 1, order + 2) != 0) {
            return -1;
        }
        lua_settop(L, order);
    }
    php_value_put(w, "}", 1);
    lua_pop(L, 1);
    return 0;
}

/* Emits r:<n>; if the table at idx was already emitted; returns 1 if so. */
static int php_value_emit_seen(php_value_writer *w, int idx)
{
    lua_State *L = w->L;
    int n;
    lua_pushvalue(L, idx);
    lua_rawget(L, w->slot_of);
    n = (int)lua_tointeger(L, -1);
    lua_pop(L, 1);
    if (n == 0) {
        return 0;
    }
    php_value_put_int(w, 'r', n);
    php_value_number(w, idx);
    return 1;
}

static void php_value_mark(php_value_writer *w, int idx, int tbl, int n)
{
    lua_pushvalue(w->L, idx);
    lua_pushinteger(w->L, n);
    lua_rawset(w->L, tbl);
}

/* Fetches string field `field` of the table at idx (raw), NULL if not a string. */
static const char *php_value_str_field(lua_State *L, int idx, const char *field, size_t *n)
{
    const char *s = NULL;
    lua_pushstring(L, field);
    lua_rawget(L, idx);
    if (lua_type(L, -1) == LUA_TSTRING) {
        s = lua_tolstring(L, -1, n); /* stays valid: referenced by the table */
    }
    lua_pop(L, 1);
    return s;
}

static int php_value_emit_table(php_value_writer *w, int idx)
{
    lua_State *L = w->L;
    enum php_value_type kind = php_value_type_of(L, idx);
    char tmp[48];
    int rc;
    if (kind == PHP_VALUE_T_ENUM) {
        size_t cn, kn;
        const char *cls = php_value_str_field(L, idx, "class", &cn);
        const char *cas = php_value_str_field(L, idx, "case", &kn);
        int n;
        if (cls == NULL || cas == NULL) {
            return php_value_wfail(w, "enum needs string class and case");
        }
        if (php_value_emit_seen(w, idx)) {
            return 0;
        }
        lua_pushlstring(L, cls, cn);
        lua_pushliteral(L, ":");
        lua_pushlstring(L, cas, kn);
        lua_concat(L, 3);
        lua_pushvalue(L, -1);
        lua_rawget(L, w->enums);
        n = (int)lua_tointeger(L, -1);
        lua_pop(L, 1);
        if (n > 0) {
            lua_pop(L, 1);
            php_value_put_int(w, 'r', n);
            php_value_number(w, idx);
            return 0;
        }
        php_value_number(w, idx);
        php_value_mark(w, idx, w->slot_of, w->nslots);
        lua_pushinteger(L, w->nslots);
        lua_rawset(L, w->enums);
        snprintf(tmp, sizeof tmp, "E:%lu:\"", (unsigned long)(cn + 1 + kn));
        php_value_puts(w, tmp);
        php_value_put(w, cls, cn);
        php_value_put(w, ":", 1);
        php_value_put(w, cas, kn);
        php_value_put(w, "\";", 2);
        return 0;
    }
    if (kind == PHP_VALUE_T_CUSTOM) {
        size_t cn, dn;
        const char *cls = php_value_str_field(L, idx, "class", &cn);
        const char *data = php_value_str_field(L, idx, "data", &dn);
        int i, ni;
        if (cls == NULL || data == NULL) {
            return php_value_wfail(w, "custom value needs string class and data");
        }
        if (php_value_emit_seen(w, idx)) {
            return 0;
        }
        php_value_number(w, idx);
        php_value_mark(w, idx, w->slot_of, w->nslots);
        snprintf(tmp, sizeof tmp, "C:%lu:\"", (unsigned long)cn);
        php_value_puts(w, tmp);
        php_value_put(w, cls, cn);
        snprintf(tmp, sizeof tmp, "\":%lu:{", (unsigned long)dn);
        php_value_puts(w, tmp);
        php_value_put(w, data, dn);
        php_value_put(w, "}", 1);
        /* the payload's own values take numbers too */
        lua_getmetatable(L, idx);
        lua_getfield(L, -1, "inner");
        ni = lua_istable(L, -1) ? (int)lua_objlen(L, -1) : 0;
        for (i = 1; i <= ni; i++) {
            lua_rawgeti(L, -1, i);
            php_value_number(w, lua_gettop(L));
            if (lua_istable(L, -1)) {
                lua_pushvalue(L, -1);
                lua_rawget(L, w->slot_of);
                if (lua_isnil(L, -1)) {
                    php_value_mark(w, lua_gettop(L) - 1, w->slot_of, w->nslots);
                }
                lua_pop(L, 1);
            }
            lua_pop(L, 1);
        }
        lua_pop(L, 2);
        return 0;
    }
    if (w->depth >= PHP_VALUE_MAX_DEPTH) {
        return php_value_wfail(w, "nesting too deep");
    }
    if (kind == PHP_VALUE_T_OBJECT) {
        size_t cn;
        const char *cls;
        int mt;
        if (php_value_emit_seen(w, idx)) {
            return 0;
        }
        lua_getmetatable(L, idx);
        mt = lua_gettop(L);
        cls = php_value_str_field(L, mt, "class", &cn);
        if (cls == NULL || !php_value_valid_class(cls, cn)) {
            return php_value_wfail(w, "object has no valid class name");
        }
        php_value_number(w, idx);
        php_value_mark(w, idx, w->slot_of, w->nslots);
        snprintf(tmp, sizeof tmp, "O:%lu:\"", (unsigned long)cn);
        php_value_puts(w, tmp);
        php_value_put(w, cls, cn);
        php_value_put(w, "\":", 2);
        w->depth++;
        /* members: object keys become their mangled names */
        {
            int count, i, order;
            if (php_value_order(w, idx, mt, &count) != 0) {
                return -1;
            }
            order = lua_gettop(L);
            snprintf(tmp, sizeof tmp, "%d:{", count);
            php_value_puts(w, tmp);
            lua_getfield(L, mt, "names");
            for (i = 1; i <= count; i++) {
                int k;
                if (lua_isnil(L, order)) {
                    lua_pushnumber(L, i);
                } else {
                    lua_rawgeti(L, order, i);
                }
                k = lua_gettop(L);
                lua_pushvalue(L, k);
                lua_rawget(L, idx);
                if (lua_istable(L, order + 1)) {
                    lua_pushvalue(L, k);
                    lua_rawget(L, order + 1);
                } else {
                    lua_pushnil(L);
                }
                if (lua_type(L, -1) == LUA_TSTRING) {
                    size_t mn;
                    const char *m = lua_tolstring(L, -1, &mn);
                    php_value_put_string(w, m, mn);
                    lua_pop(L, 1);
                } else {
                    lua_pop(L, 1);
                    if (php_value_emit_key(w, k, lua_isnil(L, order)) != 0) {
                        return -1;
                    }
                }
                if (php_value_emit_member(w, mt, k, k + 1) != 0) {
                    return -1;
                }
                lua_settop(L, order + 1);
            }
            php_value_put(w, "}", 1);
        }
        w->depth--;
        lua_settop(L, mt - 1);
        return 0;
    }
    /* array (ours or a plain table) */
    lua_pushvalue(L, idx);
    lua_rawget(L, w->active);
    rc = lua_isnil(L, -1);
    lua_pop(L, 1);
    if (!rc) {
        return php_value_wfail(w, "cyclic table");
    }
    php_value_number(w, idx);
    lua_pushvalue(L, idx);
    lua_rawget(L, w->slot_of);
    if (lua_isnil(L, -1)) {
        php_value_mark(w, idx, w->slot_of, w->nslots);
    }
    lua_pop(L, 1);
    php_value_mark(w, idx, w->active, 1);
    w->depth++;
    php_value_put(w, "a:", 2);
    if (kind == PHP_VALUE_T_ARRAY) {
        lua_getmetatable(L, idx);
    } else {
        lua_pushnil(L);
    }
    rc = php_value_emit_members(w, idx, lua_isnil(L, -1) ? 0 : lua_gettop(L));
    if (rc != 0) {
        return -1;
    }
    lua_pop(L, 1);
    w->depth--;
    lua_pushvalue(L, idx);
    lua_pushnil(L);
    lua_rawset(L, w->active);
    return 0;
}

/* Emits the value at absolute index idx.  Stack unchanged on success. */
static int php_value_emit(php_value_writer *w, int idx)
{
    lua_State *L = w->L;
    if (!lua_checkstack(L, 16)) {
        return php_value_wfail(w, "nesting too deep");
    }
    switch (lua_type(L, idx)) {
    case LUA_TNIL:
        php_value_number(w, idx);
        php_value_put(w, "N;", 2);
        return 0;
    case LUA_TLIGHTUSERDATA:
        if (lua_touserdata(L, idx) != NULL) {
            break;
        }
        php_value_number(w, idx);
        php_value_put(w, "N;", 2);
        return 0;
    case LUA_TBOOLEAN:
        php_value_number(w, idx);
        php_value_put(w, lua_toboolean(L, idx) ? "b:1;" : "b:0;", 4);
        return 0;
    case LUA_TNUMBER: {
        double d = lua_tonumber(L, idx);
        php_value_number(w, idx);
        /* integral and exact: i:, else d: (beyond 2^53 a number is most
         * likely a float; exact big ints are int64_t cdata) */
        if (d == floor(d) && fabs(d) <= (double)PHP_VALUE_EXACT_INT && !(d == 0 && signbit(d))) {
            php_value_put_int(w, 'i', (long long)d);
        } else {
            php_value_put_double(w, d);
        }
        return 0;
    }
    case LUA_TSTRING: {
        size_t n;
        const char *s = lua_tolstring(L, idx, &n);
        php_value_number(w, idx);
        php_value_put_string(w, s, n);
        return 0;
    }
    case LUA_TTABLE:
        return php_value_emit_table(w, idx);
    case 10: /* LUA_TCDATA */
        php_value_number(w, idx);
        return php_value_put_cdata_int(w, idx, 0);
    default:
        break;
    }
    {
        char what[64];
        snprintf(what, sizeof what, "cannot serialize %s value", luaL_typename(L, idx));
        return php_value_wfail(w, what);
    }
}

int php_value_serialize(lua_State *L, int idx, char *err, size_t errlen)
{
    php_value_writer w;
    int base = lua_gettop(L);
    if (idx < 0 && idx > LUA_REGISTRYINDEX) {
        idx = base + idx + 1;
    }
    if (!lua_checkstack(L, 24)) {
        if (errlen > 0) {
            snprintf(err, errlen, "stack overflow");
        }
        return -1;
    }
    w.L = L;
    w.cap = 256;
    w.n = 0;
    w.p = lua_newuserdata(L, w.cap);
    w.buf = base + 1;
    lua_newtable(L);
    w.slot_of = base + 2;
    lua_newtable(L);
    w.slot_values = base + 3;
    lua_newtable(L);
    w.active = base + 4;
    lua_newtable(L);
    w.enums = base + 5;
    w.nslots = 0;
    w.depth = 0;
    w.err = err;
    w.errlen = errlen;
    if (php_value_emit(&w, idx) != 0) {
        lua_settop(L, base);
        return -1;
    }
    lua_pushlstring(L, w.p, w.n);
    lua_replace(L, base + 1);
    lua_settop(L, base + 1);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Lua module */

/* php.unserialize(s) -> value | nil, "<what> at offset N" */
static int l_php_unserialize(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    char err[128];
    if (php_value_unserialize(L, s, len, err, sizeof err) != 0) {
        lua_pushnil(L);
        lua_pushstring(L, err);
        return 2;
    }
    return 1;
}

/* php.serialize(v) -> string | nil, message */
static int l_php_serialize(lua_State *L)
{
    char err[128];
    lua_settop(L, 1);
    if (php_value_serialize(L, 1, err, sizeof err) != 0) {
        lua_pushnil(L);
        lua_pushstring(L, err);
        return 2;
    }
    return 1;
}

/* php.class(v) -> class name of an object, enum or custom value, else nil */
static int l_php_class(lua_State *L)
{
    enum php_value_type kind = php_value_type_of(L, 1);
    if (kind == PHP_VALUE_T_OBJECT) {
        lua_getmetatable(L, 1);
        lua_getfield(L, -1, "class");
        return 1;
    }
    if (kind == PHP_VALUE_T_ENUM || kind == PHP_VALUE_T_CUSTOM) {
        lua_pushliteral(L, "class");
        lua_rawget(L, 1);
        return 1;
    }
    lua_pushnil(L);
    return 1;
}

/* Copies the optional key list at arg into a new table (stack +1), or
 * pushes an empty table when the argument is absent. */
static void php_value_copy_keys(lua_State *L, int arg)
{
    int i, n;
    if (lua_isnoneornil(L, arg)) {
        lua_newtable(L);
        return;
    }
    luaL_checktype(L, arg, LUA_TTABLE);
    n = (int)lua_objlen(L, arg);
    lua_createtable(L, n, 0);
    for (i = 1; i <= n; i++) {
        lua_rawgeti(L, arg, i);
        if (lua_type(L, -1) != LUA_TSTRING && lua_type(L, -1) != LUA_TNUMBER) {
            luaL_argerror(L, arg, "keys must be strings or numbers");
        }
        lua_rawseti(L, -2, i);
    }
}

/* php.object(class, props[, keys]) -> props, now an object of that class.
 * props is adopted (its metatable replaced); keys gives the member order
 * (names may be mangled, e.g. "\0*\0name"); others follow sorted. */
static int l_php_object(lua_State *L)
{
    size_t n;
    const char *cls = luaL_checklstring(L, 1, &n);
    if (!php_value_valid_class(cls, n)) {
        luaL_argerror(L, 1, "invalid class name");
    }
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_settop(L, 3);
    php_value_new_meta(L, PHP_VALUE_OBJECT);
    lua_pushvalue(L, 1);
    lua_setfield(L, -2, "class");
    php_value_copy_keys(L, 3);
    lua_setfield(L, -2, "keys");
    lua_newtable(L);
    lua_setfield(L, -2, "names");
    lua_setmetatable(L, 2);
    lua_settop(L, 2);
    return 1;
}

/* php.enum(class, case) -> enum value */
static int l_php_enum(lua_State *L)
{
    size_t n;
    const char *cls = luaL_checklstring(L, 1, &n);
    if (!php_value_valid_class(cls, n)) {
        luaL_argerror(L, 1, "invalid class name");
    }
    luaL_checkstring(L, 2);
    lua_createtable(L, 0, 2);
    lua_pushvalue(L, 1);
    lua_setfield(L, -2, "class");
    lua_pushvalue(L, 2);
    lua_setfield(L, -2, "case");
    php_value_new_meta(L, PHP_VALUE_ENUM);
    lua_setmetatable(L, -2);
    return 1;
}

/* php.array(t[, keys]) -> t, marked as a PHP map array whose members go in
 * the order of keys (PHP keys: numbers are not shifted), then the rest
 * sorted.  Keeps float/reference marks when t was already a PHP array. */
static int l_php_array(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 2);
    if (php_value_type_of(L, 1) == PHP_VALUE_T_ARRAY) {
        lua_getmetatable(L, 1);
    } else {
        php_value_new_meta(L, PHP_VALUE_ARRAY);
        lua_pushvalue(L, -1);
        lua_setmetatable(L, 1);
    }
    php_value_copy_keys(L, 2);
    lua_setfield(L, -2, "keys");
    lua_settop(L, 1);
    return 1;
}

/* php.is_list(v) -> true when v serializes as a PHP list: a table that is
 * a sequence 1..n (or empty) and not an object, enum, custom or map array. */
static int l_php_is_list(lua_State *L)
{
    enum php_value_type kind;
    int total = 0, i;
    if (lua_type(L, 1) != LUA_TTABLE) {
        lua_pushboolean(L, 0);
        return 1;
    }
    kind = php_value_type_of(L, 1);
    if (kind != PHP_VALUE_T_OTHER && kind != PHP_VALUE_T_ARRAY) {
        lua_pushboolean(L, 0);
        return 1;
    }
    if (kind == PHP_VALUE_T_ARRAY) {
        int has_keys;
        lua_getmetatable(L, 1);
        lua_getfield(L, -1, "keys");
        has_keys = lua_istable(L, -1);
        lua_pop(L, 2);
        if (has_keys) {
            lua_pushboolean(L, 0);
            return 1;
        }
    }
    lua_pushnil(L);
    while (lua_next(L, 1) != 0) {
        lua_pop(L, 1);
        total++;
    }
    for (i = 1; i <= total; i++) {
        lua_rawgeti(L, 1, i);
        if (lua_isnil(L, -1)) {
            lua_pushboolean(L, 0);
            return 1;
        }
        lua_pop(L, 1);
    }
    lua_pushboolean(L, 1);
    return 1;
}

int luaopen_luaworker_php(lua_State *L)
{
    static const luaL_Reg funcs[] = {
        { "unserialize", l_php_unserialize },
        { "serialize", l_php_serialize },
        { "class", l_php_class },
        { "object", l_php_object },
        { "enum", l_php_enum },
        { "array", l_php_array },
        { "is_list", l_php_is_list },
        { NULL, NULL }
    };
    lua_createtable(L, 0, 8);
    luaL_register(L, NULL, funcs);
    lua_pushlightuserdata(L, NULL);
    lua_setfield(L, -2, "null");
    return 1;
}
