/* php_serialize: Lua values -> PHP serialize() text.
 *
 * Mapping:
 *   nil, php.null          N;
 *   boolean                b:0; b:1;
 *   number                 i: when integral with |v| <= 2^53 (and not -0),
 *                          else d: as PHP writes it (serialize_precision
 *                          = -1), except members recorded in `floats`, which
 *                          always give d:
 *   int64/uint64 cdata     i: (exact; a uint64 above 2^63-1 is an error)
 *   string                 s:
 *   table                  a:, or O: / E: / C: when its metatable says so
 *   anything else          an error ("cannot serialize <type> value")
 *
 * Serialization re-emits the metadata that php_unserialize recorded so an
 * unmodified decoded value gives back the original bytes.  Plain tables
 * serialize as a list when they are a sequence 1..n, otherwise as a map with
 * keys sorted (numbers ascending, then strings).  Members added by Lua code
 * go after the recorded ones, sorted the same way, and object members added
 * by Lua code are public.  An object, enum or custom table met again is
 * written as r:n; an array met again is written again in full, or is an error
 * ("cyclic table") when met inside itself.  Containers nest at most
 * PHP_META_MAX_DEPTH deep.
 */
#include "php/php_serialize.h"

#include <lauxlib.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "php/php_float.h"
#include "php/php_meta.h"

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
} php_serialize_writer;

static int php_serialize_emit(php_serialize_writer *w, int idx);

static int php_serialize_fail(php_serialize_writer *w, const char *what)
{
    if (w->errlen > 0) {
        snprintf(w->err, w->errlen, "%s", what);
    }
    return -1;
}

static void php_serialize_put(php_serialize_writer *w, const char *p, size_t n)
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

static void php_serialize_puts(php_serialize_writer *w, const char *s)
{
    php_serialize_put(w, s, strlen(s));
}

static void php_serialize_put_int(php_serialize_writer *w, char type, long long v)
{
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%c:%lld;", type, v);
    php_serialize_put(w, tmp, (size_t)n);
}

static void php_serialize_put_string(php_serialize_writer *w, const char *s, size_t n)
{
    char tmp[32];
    int k = snprintf(tmp, sizeof tmp, "s:%lu:\"", (unsigned long)n);
    php_serialize_put(w, tmp, (size_t)k);
    php_serialize_put(w, s, n);
    php_serialize_put(w, "\";", 2);
}

static void php_serialize_put_double(php_serialize_writer *w, double d)
{
    char tmp[72];
    tmp[0] = 'd';
    tmp[1] = ':';
    php_float_format(d, tmp + 2);
    strcat(tmp, ";");
    php_serialize_puts(w, tmp);
}

/* Gives the value at idx the next number (PHP's var_hash counter). */
static void php_serialize_number(php_serialize_writer *w, int idx)
{
    lua_pushvalue(w->L, idx);
    lua_rawseti(w->L, w->slot_values, ++w->nslots);
}

/* Emits i:<text>; for an int64/uint64 cdata at idx. */
static int php_serialize_put_cdata_int(php_serialize_writer *w, int idx, int as_key)
{
    lua_State *L = w->L;
    size_t n;
    const char *txt;
    if (php_meta_push_helper(L, PHP_META_HELPER_INT64_TEXT) != 0) {
        return php_serialize_fail(w, "cannot serialize cdata value");
    }
    lua_pushvalue(L, idx);
    if (lua_pcall(L, 1, 1, 0) != 0 || lua_type(L, -1) != LUA_TSTRING) {
        lua_pop(L, 1);
        return php_serialize_fail(w, as_key ? "invalid array key (cdata)"
                                         : "cannot serialize cdata value");
    }
    txt = lua_tolstring(L, -1, &n);
    php_serialize_put(w, "i:", 2);
    php_serialize_put(w, txt, n);
    php_serialize_put(w, ";", 1);
    lua_pop(L, 1);
    return 0;
}

/* Emits the key at idx (list: the Lua index minus one). */
static int php_serialize_emit_key(php_serialize_writer *w, int idx, int list)
{
    lua_State *L = w->L;
    switch (lua_type(L, idx)) {
    case LUA_TNUMBER: {
        double d = lua_tonumber(L, idx) - (list ? 1 : 0);
        if (d != floor(d) || d < -9223372036854775808.0 || d >= 9223372036854775808.0) {
            return php_serialize_fail(w, "invalid array key (non-integer number)");
        }
        php_serialize_put_int(w, 'i', (long long)d);
        return 0;
    }
    case LUA_TSTRING: {
        size_t n;
        const char *s = lua_tolstring(L, idx, &n);
        php_serialize_put_string(w, s, n);
        return 0;
    }
    case 10: /* LUA_TCDATA */
        return php_serialize_put_cdata_int(w, idx, 1);
    default: {
        char what[64];
        snprintf(what, sizeof what, "invalid array key (%s)", luaL_typename(L, idx));
        return php_serialize_fail(w, what);
    }
    }
}

/* Emits the value (at vidx) of the container member whose Lua key is at
 * kidx (the key itself is written by the caller), using the
 * container's metatable at mt (0 when none) for floats and references. */
static int php_serialize_emit_member(php_serialize_writer *w, int mt, int kidx, int vidx)
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
                    php_serialize_put_int(w, kind, target);
                    if (kind == 'r') {
                        php_serialize_number(w, vidx);
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
                    php_serialize_number(w, vidx);
                    php_serialize_put_double(w, lua_tonumber(L, vidx));
                    return 0;
                }
            }
            lua_settop(L, top);
        }
    }
    return php_serialize_emit(w, vidx);
}

/* Emits "<count>:{" for the members of the table at t (mt: its metatable, or 0)
 * and pushes their order (see php_meta_member_order). Returns the order's index
 * and sets *count, or returns -1. */
static int php_serialize_open_members(php_serialize_writer *w, int t, int mt, int *count)
{
    char tmp[32];
    const char *problem = php_meta_member_order(w->L, t, mt, count);
    if (problem) {
        return php_serialize_fail(w, problem);
    }
    snprintf(tmp, sizeof tmp, "%d:{", *count);
    php_serialize_puts(w, tmp);
    return lua_gettop(w->L);
}

/* Emits the members {...} of the table at t in order; mt may be 0. */
static int php_serialize_emit_members(php_serialize_writer *w, int t, int mt)
{
    lua_State *L = w->L;
    int count, i;
    int order = php_serialize_open_members(w, t, mt, &count);
    if (order < 0) {
        return -1;
    }
    for (i = 1; i <= count; i++) {
        if (lua_isnil(L, order)) {
            lua_pushnumber(L, i);
        } else {
            lua_rawgeti(L, order, i);
        }
        lua_pushvalue(L, -1);
        lua_rawget(L, t);
        if (php_serialize_emit_key(w, order + 1, lua_isnil(L, order)) != 0
            || php_serialize_emit_member(w, mt, order + 1, order + 2) != 0) {
            return -1;
        }
        lua_settop(L, order);
    }
    php_serialize_put(w, "}", 1);
    lua_pop(L, 1);
    return 0;
}

/* Emits r:<n>; if the table at idx was already emitted; returns 1 if so. */
static int php_serialize_emit_seen(php_serialize_writer *w, int idx)
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
    php_serialize_put_int(w, 'r', n);
    php_serialize_number(w, idx);
    return 1;
}

static void php_serialize_mark(php_serialize_writer *w, int idx, int tbl, int n)
{
    lua_pushvalue(w->L, idx);
    lua_pushinteger(w->L, n);
    lua_rawset(w->L, tbl);
}

/* Fetches string field `field` of the table at idx (raw), NULL if not a string. */
static const char *php_serialize_str_field(lua_State *L, int idx, const char *field, size_t *n)
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

static int php_serialize_emit_table(php_serialize_writer *w, int idx)
{
    lua_State *L = w->L;
    enum php_meta_type kind = php_meta_type_of(L, idx);
    char tmp[48];
    int rc;
    if (kind == PHP_META_T_ENUM) {
        size_t cn, kn;
        const char *cls = php_serialize_str_field(L, idx, "class", &cn);
        const char *cas = php_serialize_str_field(L, idx, "case", &kn);
        int n;
        if (cls == NULL || cas == NULL) {
            return php_serialize_fail(w, "enum needs string class and case");
        }
        if (php_serialize_emit_seen(w, idx)) {
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
            php_serialize_put_int(w, 'r', n);
            php_serialize_number(w, idx);
            return 0;
        }
        php_serialize_number(w, idx);
        php_serialize_mark(w, idx, w->slot_of, w->nslots);
        lua_pushinteger(L, w->nslots);
        lua_rawset(L, w->enums);
        snprintf(tmp, sizeof tmp, "E:%lu:\"", (unsigned long)(cn + 1 + kn));
        php_serialize_puts(w, tmp);
        php_serialize_put(w, cls, cn);
        php_serialize_put(w, ":", 1);
        php_serialize_put(w, cas, kn);
        php_serialize_put(w, "\";", 2);
        return 0;
    }
    if (kind == PHP_META_T_CUSTOM) {
        size_t cn, dn;
        const char *cls = php_serialize_str_field(L, idx, "class", &cn);
        const char *data = php_serialize_str_field(L, idx, "data", &dn);
        int i, ni;
        if (cls == NULL || data == NULL) {
            return php_serialize_fail(w, "custom value needs string class and data");
        }
        if (php_serialize_emit_seen(w, idx)) {
            return 0;
        }
        php_serialize_number(w, idx);
        php_serialize_mark(w, idx, w->slot_of, w->nslots);
        snprintf(tmp, sizeof tmp, "C:%lu:\"", (unsigned long)cn);
        php_serialize_puts(w, tmp);
        php_serialize_put(w, cls, cn);
        snprintf(tmp, sizeof tmp, "\":%lu:{", (unsigned long)dn);
        php_serialize_puts(w, tmp);
        php_serialize_put(w, data, dn);
        php_serialize_put(w, "}", 1);
        /* the payload's own values take numbers too */
        lua_getmetatable(L, idx);
        lua_getfield(L, -1, "inner");
        ni = lua_istable(L, -1) ? (int)lua_objlen(L, -1) : 0;
        for (i = 1; i <= ni; i++) {
            lua_rawgeti(L, -1, i);
            php_serialize_number(w, lua_gettop(L));
            if (lua_istable(L, -1)) {
                lua_pushvalue(L, -1);
                lua_rawget(L, w->slot_of);
                if (lua_isnil(L, -1)) {
                    php_serialize_mark(w, lua_gettop(L) - 1, w->slot_of, w->nslots);
                }
                lua_pop(L, 1);
            }
            lua_pop(L, 1);
        }
        lua_pop(L, 2);
        return 0;
    }
    if (w->depth >= PHP_META_MAX_DEPTH) {
        return php_serialize_fail(w, "nesting too deep");
    }
    if (kind == PHP_META_T_OBJECT) {
        size_t cn;
        const char *cls;
        int mt;
        if (php_serialize_emit_seen(w, idx)) {
            return 0;
        }
        lua_getmetatable(L, idx);
        mt = lua_gettop(L);
        cls = php_serialize_str_field(L, mt, "class", &cn);
        if (cls == NULL || !php_meta_valid_class(cls, cn)) {
            return php_serialize_fail(w, "object has no valid class name");
        }
        php_serialize_number(w, idx);
        php_serialize_mark(w, idx, w->slot_of, w->nslots);
        snprintf(tmp, sizeof tmp, "O:%lu:\"", (unsigned long)cn);
        php_serialize_puts(w, tmp);
        php_serialize_put(w, cls, cn);
        php_serialize_put(w, "\":", 2);
        w->depth++;
        /* members: object keys become their mangled names */
        {
            int count, i;
            int order = php_serialize_open_members(w, idx, mt, &count);
            if (order < 0) {
                return -1;
            }
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
                    php_serialize_put_string(w, m, mn);
                    lua_pop(L, 1);
                } else {
                    lua_pop(L, 1);
                    if (php_serialize_emit_key(w, k, lua_isnil(L, order)) != 0) {
                        return -1;
                    }
                }
                if (php_serialize_emit_member(w, mt, k, k + 1) != 0) {
                    return -1;
                }
                lua_settop(L, order + 1);
            }
            php_serialize_put(w, "}", 1);
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
        return php_serialize_fail(w, "cyclic table");
    }
    php_serialize_number(w, idx);
    lua_pushvalue(L, idx);
    lua_rawget(L, w->slot_of);
    if (lua_isnil(L, -1)) {
        php_serialize_mark(w, idx, w->slot_of, w->nslots);
    }
    lua_pop(L, 1);
    php_serialize_mark(w, idx, w->active, 1);
    w->depth++;
    php_serialize_put(w, "a:", 2);
    if (kind == PHP_META_T_ARRAY) {
        lua_getmetatable(L, idx);
    } else {
        lua_pushnil(L);
    }
    rc = php_serialize_emit_members(w, idx, lua_isnil(L, -1) ? 0 : lua_gettop(L));
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
static int php_serialize_emit(php_serialize_writer *w, int idx)
{
    lua_State *L = w->L;
    if (!lua_checkstack(L, 16)) {
        return php_serialize_fail(w, "nesting too deep");
    }
    switch (lua_type(L, idx)) {
    case LUA_TNIL:
        php_serialize_number(w, idx);
        php_serialize_put(w, "N;", 2);
        return 0;
    case LUA_TLIGHTUSERDATA:
        if (lua_touserdata(L, idx) != NULL) {
            break;
        }
        php_serialize_number(w, idx);
        php_serialize_put(w, "N;", 2);
        return 0;
    case LUA_TBOOLEAN:
        php_serialize_number(w, idx);
        php_serialize_put(w, lua_toboolean(L, idx) ? "b:1;" : "b:0;", 4);
        return 0;
    case LUA_TNUMBER: {
        double d = lua_tonumber(L, idx);
        php_serialize_number(w, idx);
        /* integral and exact: i:, else d: (beyond 2^53 a number is most
         * likely a float; exact big ints are int64_t cdata) */
        if (d == floor(d) && fabs(d) <= (double)PHP_META_EXACT_INT && !(d == 0 && signbit(d))) {
            php_serialize_put_int(w, 'i', (long long)d);
        } else {
            php_serialize_put_double(w, d);
        }
        return 0;
    }
    case LUA_TSTRING: {
        size_t n;
        const char *s = lua_tolstring(L, idx, &n);
        php_serialize_number(w, idx);
        php_serialize_put_string(w, s, n);
        return 0;
    }
    case LUA_TTABLE:
        return php_serialize_emit_table(w, idx);
    case 10: /* LUA_TCDATA */
        php_serialize_number(w, idx);
        return php_serialize_put_cdata_int(w, idx, 0);
    default:
        break;
    }
    {
        char what[64];
        snprintf(what, sizeof what, "cannot serialize %s value", luaL_typename(L, idx));
        return php_serialize_fail(w, what);
    }
}

int php_serialize(lua_State *L, int idx, char *err, size_t errlen)
{
    php_serialize_writer w;
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
    if (php_serialize_emit(&w, idx) != 0) {
        lua_settop(L, base);
        return -1;
    }
    lua_pushlstring(L, w.p, w.n);
    lua_replace(L, base + 1);
    lua_settop(L, base + 1);
    return 0;
}