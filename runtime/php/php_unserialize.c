#include "php/php_unserialize.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "php/php_meta.h"
#include "php/php_scan.h"

/* What a parsed value was, for its container's floats / refs metadata. */
enum php_unserialize_kind {
    PHP_UNSERIALIZE_KIND_PLAIN,
    PHP_UNSERIALIZE_KIND_FLOAT,
    PHP_UNSERIALIZE_KIND_REF
};

typedef struct {
    lua_State *L;
    struct php_scan in; /* the text, its position and the caller's err buffer */
    int depth;
    int slots;      /* absolute stack index of the slot table (n -> value) */
    int nslots;     /* values numbered so far, PHP's var_hash numbering */
    int last_ref;   /* after a ..._KIND_REF value: n for r:n, -n for R:n */
} php_unserialize_reader;

static int php_unserialize_parse(php_unserialize_reader *r, enum php_unserialize_kind *kind);

/* Pushes v as a number, or as int64_t cdata when beyond 2^53 (stack +1). */
static int php_unserialize_push_int(php_unserialize_reader *r, int64_t v, size_t at)
{
    if (php_meta_push_int(r->L, v) != 0) {
        return php_scan_fail(&r->in, "64-bit integer unsupported (no ffi)", at);
    }
    return 0;
}

/* Parses <count>:{ and checks the count against the remaining input
 * (each member needs at least 6 bytes, e.g. i:0;N;). */
static int php_unserialize_parse_count(php_unserialize_reader *r, size_t *count, size_t at)
{
    size_t cat = r->in.pos;
    if (php_scan_uint(&r->in, count, "invalid element count") != 0
        || php_scan_expect(&r->in, ':') != 0 || php_scan_expect(&r->in, '{') != 0) {
        return -1;
    }
    if (*count > (r->in.len - r->in.pos) / 6) {
        return php_scan_fail(&r->in, "element count exceeds input", cat);
    }
    if (r->depth >= PHP_META_MAX_DEPTH) {
        return php_scan_fail(&r->in, "nesting too deep", at);
    }
    return 0;
}

/* Parses an array or object key (i: or s:) and pushes it (stack +1).
 * *is_int / *ival describe an integer key. */
static int php_unserialize_parse_key(php_unserialize_reader *r, int *is_int, int64_t *ival)
{
    size_t at = r->in.pos;
    if (r->in.pos + 1 >= r->in.len) {
        return php_scan_fail(&r->in, "unexpected end of input", r->in.len);
    }
    if (r->in.s[r->in.pos] == 'i' && r->in.s[r->in.pos + 1] == ':') {
        r->in.pos += 2;
        if (php_scan_int(&r->in, ival) != 0 || php_scan_expect(&r->in, ';') != 0) {
            return -1;
        }
        *is_int = 1;
        return php_unserialize_push_int(r, *ival, at);
    }
    if (r->in.s[r->in.pos] == 's' && r->in.s[r->in.pos + 1] == ':') {
        const char *p;
        size_t n;
        r->in.pos += 2;
        if (php_scan_quoted(&r->in, &p, &n, "invalid string length") != 0
            || php_scan_expect(&r->in, ';') != 0) {
            return -1;
        }
        *is_int = 0;
        lua_pushlstring(r->L, p, n);
        return 0;
    }
    return php_scan_fail(&r->in, "invalid key", at);
}

/* Stores a member's metadata: floats[key] or refs[key] (key at kidx). */
static void php_unserialize_note_kind(php_unserialize_reader *r, int mt, int kidx, enum php_unserialize_kind kind)
{
    lua_State *L = r->L;
    if (kind == PHP_UNSERIALIZE_KIND_PLAIN) {
        return;
    }
    php_meta_sub(L, mt, kind == PHP_UNSERIALIZE_KIND_FLOAT ? "floats" : "refs");
    lua_pushvalue(L, kidx);
    if (kind == PHP_UNSERIALIZE_KIND_FLOAT) {
        lua_pushboolean(L, 1);
    } else {
        lua_pushinteger(L, r->last_ref);
    }
    lua_rawset(L, -3);
    lua_pop(L, 1);
}

/* Moves tbl[1..n] to tbl[0..n-1] (tbl absolute). */
static void php_unserialize_shift_down(lua_State *L, int tbl, int n)
{
    int j;
    for (j = 1; j <= n; j++) {
        lua_rawgeti(L, tbl, j);
        lua_rawseti(L, tbl, j - 1);
    }
    lua_pushnil(L);
    lua_rawseti(L, tbl, n);
}

/* Starts a container whose table is at stack index t: gives it its metatable
 * (at mt), numbers it for r:/R: references and enters its level. */
static void php_unserialize_open(php_unserialize_reader *r, int t, int mt)
{
    lua_pushvalue(r->L, mt);
    lua_setmetatable(r->L, t);
    lua_pushvalue(r->L, t);
    lua_rawseti(r->L, r->slots, ++r->nslots);
    r->depth++;
}

/* Ends a container whose table is at stack index t: leaves its level, expects
 * the closing '}' and drops everything above the table. Returns 0 or -1. */
static int php_unserialize_close(php_unserialize_reader *r, int t)
{
    r->depth--;
    if (php_scan_expect(&r->in, '}') != 0) {
        return -1;
    }
    lua_settop(r->L, t);
    return 0;
}

/* a:<n>:{...} (r->in.pos after "a:"); pushes the table. */
static int php_unserialize_parse_array(php_unserialize_reader *r, size_t at)
{
    lua_State *L = r->L;
    size_t count, i;
    int t, mt, keys, list = 1;
    if (php_unserialize_parse_count(r, &count, at) != 0) {
        return -1;
    }
    lua_createtable(L, (int)count, 0);
    t = lua_gettop(L);
    php_meta_new(L, PHP_META_T_ARRAY);
    mt = t + 1;
    lua_pushnil(L); /* becomes the keys table if this is a map */
    keys = t + 2;
    php_unserialize_open(r, t, mt);
    for (i = 0; i < count; i++) {
        int is_int;
        int64_t ival = 0;
        enum php_unserialize_kind kind;
        int k;
        if (php_unserialize_parse_key(r, &is_int, &ival) != 0) {
            return -1;
        }
        k = lua_gettop(L);
        if (php_unserialize_parse(r, &kind) != 0) {
            return -1;
        }
        if (list && !(is_int && ival == (int64_t)i)) {
            /* Not a list after all: re-key the members 1..i as 0..i-1. */
            size_t j;
            const char *subs[2] = { "floats", "refs" };
            int s;
            list = 0;
            php_unserialize_shift_down(L, t, (int)i);
            for (s = 0; s < 2; s++) {
                lua_getfield(L, mt, subs[s]);
                if (lua_istable(L, -1)) {
                    php_unserialize_shift_down(L, lua_gettop(L), (int)i);
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
        php_unserialize_note_kind(r, mt, k, kind);
        lua_settop(L, k - 1);
    }
    return php_unserialize_close(r, t);
}

/* O:<n>:"Class":<n>:{...} (r->in.pos after "O:"); pushes the table. */
static int php_unserialize_parse_object(php_unserialize_reader *r, size_t at)
{
    lua_State *L = r->L;
    const char *cls;
    size_t clen, count, i;
    int t, mt, keys, names, seen, index;
    if (php_scan_quoted(&r->in, &cls, &clen, "invalid class name length") != 0
        || php_scan_expect(&r->in, ':') != 0) {
        return -1;
    }
    if (!php_meta_valid_class(cls, clen)) {
        return php_scan_fail(&r->in, "invalid class name", at + 2);
    }
    if (php_unserialize_parse_count(r, &count, at) != 0) {
        return -1;
    }
    lua_createtable(L, 0, (int)count);
    t = lua_gettop(L);
    php_meta_new(L, PHP_META_T_OBJECT);
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
    php_unserialize_open(r, t, mt);
    for (i = 0; i < count; i++) {
        int is_int;
        int64_t ival;
        enum php_unserialize_kind kind;
        int k, v;
        if (php_unserialize_parse_key(r, &is_int, &ival) != 0) {
            return -1;
        }
        k = lua_gettop(L);
        if (php_unserialize_parse(r, &kind) != 0) {
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
        php_unserialize_note_kind(r, mt, lua_gettop(L), kind);
        lua_settop(L, k - 1);
    }
    return php_unserialize_close(r, t);
}

/* E:<n>:"Enum:Case"; (r->in.pos after "E:"); pushes the table. */
static int php_unserialize_parse_enum(php_unserialize_reader *r, size_t at)
{
    lua_State *L = r->L;
    const char *p, *colon;
    size_t n;
    if (php_scan_quoted(&r->in, &p, &n, "invalid enum length") != 0
        || php_scan_expect(&r->in, ';') != 0) {
        return -1;
    }
    colon = memchr(p, ':', n);
    if (colon == NULL || !php_meta_valid_class(p, (size_t)(colon - p)) || colon + 1 == p + n) {
        return php_scan_fail(&r->in, "invalid enum name", at);
    }
    lua_createtable(L, 0, 2);
    lua_pushlstring(L, p, (size_t)(colon - p));
    lua_setfield(L, -2, "class");
    lua_pushlstring(L, colon + 1, (size_t)(p + n - colon - 1));
    lua_setfield(L, -2, "case");
    php_meta_new(L, PHP_META_T_ENUM);
    lua_setmetatable(L, -2);
    lua_pushvalue(L, -1);
    lua_rawseti(L, r->slots, ++r->nslots);
    return 0;
}

/* C:<n>:"Class":<n>:{data} (r->in.pos after "C:"); pushes the table. */
static int php_unserialize_parse_custom(php_unserialize_reader *r, size_t at)
{
    lua_State *L = r->L;
    const char *cls, *data;
    size_t clen, dlen, dat;
    int t, first;
    php_unserialize_reader sub;
    char suberr[8];
    enum php_unserialize_kind kind;
    if (php_scan_quoted(&r->in, &cls, &clen, "invalid class name length") != 0
        || php_scan_expect(&r->in, ':') != 0) {
        return -1;
    }
    if (!php_meta_valid_class(cls, clen)) {
        return php_scan_fail(&r->in, "invalid class name", at + 2);
    }
    dat = r->in.pos;
    if (php_scan_uint(&r->in, &dlen, "invalid data length") != 0 || php_scan_expect(&r->in, ':') != 0
        || php_scan_expect(&r->in, '{') != 0) {
        return -1;
    }
    if (dlen > r->in.len - r->in.pos) {
        return php_scan_fail(&r->in, "length exceeds input", dat);
    }
    data = r->in.s + r->in.pos;
    r->in.pos += dlen;
    if (php_scan_expect(&r->in, '}') != 0) {
        return -1;
    }
    if (r->depth >= PHP_META_MAX_DEPTH) {
        return php_scan_fail(&r->in, "nesting too deep", at);
    }
    lua_createtable(L, 0, 2);
    t = lua_gettop(L);
    lua_pushlstring(L, cls, clen);
    lua_setfield(L, t, "class");
    lua_pushlstring(L, data, dlen);
    lua_setfield(L, t, "data");
    php_meta_new(L, PHP_META_T_CUSTOM);
    lua_pushvalue(L, -1);
    lua_setmetatable(L, t);
    lua_pushvalue(L, t);
    lua_rawseti(L, r->slots, ++r->nslots);
    /* Serializable::serialize() usually calls serialize() itself, which
     * shares PHP's numbering with the outer value: number what it holds. */
    first = r->nslots;
    sub = *r;
    sub.in.s = data;
    sub.in.len = dlen;
    sub.in.pos = 0;
    sub.depth = r->depth + 1;
    sub.in.err = suberr;
    sub.in.errlen = sizeof suberr;
    if (php_unserialize_parse(&sub, &kind) == 0 && sub.in.pos == dlen) {
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

/* Parses one value at r->in.pos and pushes it (stack +1).  *kind tells the
 * container whether it was a float or an r:/R: token.  On error returns -1;
 * the caller resets the stack. */
static int php_unserialize_parse(php_unserialize_reader *r, enum php_unserialize_kind *kind)
{
    lua_State *L = r->L;
    size_t at = r->in.pos;
    char type;
    *kind = PHP_UNSERIALIZE_KIND_PLAIN;
    if (!lua_checkstack(L, 12)) {
        return php_scan_fail(&r->in, "nesting too deep", at);
    }
    if (r->in.pos >= r->in.len) {
        return php_scan_fail(&r->in, "unexpected end of input", r->in.pos);
    }
    type = r->in.s[r->in.pos];
    if (strchr("NbidsaOECrR", type) == NULL || type == '\0') {
        char what[32];
        if (type > ' ' && type < 127) {
            snprintf(what, sizeof what, "unknown type '%c'", type);
        } else {
            snprintf(what, sizeof what, "unknown type");
        }
        return php_scan_fail(&r->in, what, at);
    }
    r->in.pos++;
    if (type == 'N') {
        if (php_scan_expect(&r->in, ';') != 0) {
            return -1;
        }
        lua_pushlightuserdata(L, NULL);
        lua_pushvalue(L, -1);
        lua_rawseti(L, r->slots, ++r->nslots);
        return 0;
    }
    if (php_scan_expect(&r->in, ':') != 0) {
        return -1;
    }
    switch (type) {
    case 'b':
        if (r->in.pos >= r->in.len) {
            return php_scan_fail(&r->in, "unexpected end of input", r->in.pos);
        }
        if (r->in.s[r->in.pos] != '0' && r->in.s[r->in.pos] != '1') {
            return php_scan_fail(&r->in, "invalid boolean", r->in.pos);
        }
        r->in.pos++;
        if (php_scan_expect(&r->in, ';') != 0) {
            return -1;
        }
        lua_pushboolean(L, r->in.s[r->in.pos - 2] == '1');
        break;
    case 'i': {
        int64_t v;
        if (php_scan_int(&r->in, &v) != 0 || php_scan_expect(&r->in, ';') != 0
            || php_unserialize_push_int(r, v, at) != 0) {
            return -1;
        }
        break;
    }
    case 'd': {
        double d;
        if (php_scan_double(&r->in, &d) != 0) {
            return -1;
        }
        lua_pushnumber(L, (lua_Number)d);
        *kind = PHP_UNSERIALIZE_KIND_FLOAT;
        break;
    }
    case 's': {
        const char *p;
        size_t n;
        if (php_scan_quoted(&r->in, &p, &n, "invalid string length") != 0
            || php_scan_expect(&r->in, ';') != 0) {
            return -1;
        }
        lua_pushlstring(L, p, n);
        break;
    }
    case 'a':
        return php_unserialize_parse_array(r, at);
    case 'O':
        return php_unserialize_parse_object(r, at);
    case 'E':
        return php_unserialize_parse_enum(r, at);
    case 'C':
        return php_unserialize_parse_custom(r, at);
    default: { /* r or R */
        size_t n;
        if (php_scan_uint(&r->in, &n, "invalid reference") != 0 || php_scan_expect(&r->in, ';') != 0) {
            return -1;
        }
        if (n < 1 || n > (size_t)r->nslots) {
            return php_scan_fail(&r->in, "reference out of range", at);
        }
        lua_rawgeti(L, r->slots, (int)n);
        *kind = PHP_UNSERIALIZE_KIND_REF;
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

int php_unserialize(lua_State *L, const char *s, size_t len, char *err, size_t errlen)
{
    enum php_unserialize_kind kind;
    int base = lua_gettop(L);
    if (!lua_checkstack(L, 16)) {
        if (errlen > 0) {
            snprintf(err, errlen, "stack overflow at offset 0");
        }
        return -1;
    }
    lua_newtable(L);
    php_unserialize_reader r = { .L = L, .slots = base + 1,
                                 .in = { .s = s, .len = len, .err = err, .errlen = errlen } };
    if (php_unserialize_parse(&r, &kind) != 0) {
        lua_settop(L, base);
        return -1;
    }
    if (r.in.pos != len) {
        php_scan_fail(&r.in, "trailing data", r.in.pos);
        lua_settop(L, base);
        return -1;
    }
    lua_replace(L, base + 1);
    return 0;
}