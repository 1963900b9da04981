#include "db/mysql_values.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "loop/vm.h"
#include "php/php_meta.h"

/* The bindings at L's index first.. as MYSQL_BINDs: nil or NULL (light userdata)
 * as NULL, booleans as 0/1, integral numbers as BIGINT, other numbers as DOUBLE,
 * strings as text (copied). See mysql_values.h. */
MYSQL_BIND *mysql_values_bind(lua_State *L, int first, unsigned long n)
{
    size_t bytes = n * (sizeof(MYSQL_BIND) + sizeof(long long) + sizeof(double));
    for (unsigned long i = 0; i < n; i++) {
        if (lua_type(L, first + (int)i) == LUA_TSTRING)
            bytes += lua_objlen(L, first + (int)i) + 1;
    }
    MYSQL_BIND *bind = calloc(1, bytes ? bytes : 1);
    if (!bind)
        return NULL;
    long long *ints = (long long *)(bind + n);
    double *doubles = (double *)(ints + n);
    char *text = (char *)(doubles + n);
    for (unsigned long i = 0; i < n; i++) {
        int idx = first + (int)i;
        MYSQL_BIND *b = &bind[i];
        switch (lua_type(L, idx)) {
        case LUA_TBOOLEAN:
            ints[i] = lua_toboolean(L, idx);
            b->buffer_type = MYSQL_TYPE_LONGLONG;
            b->buffer = &ints[i];
            break;
        case LUA_TNUMBER: {
            double v = lua_tonumber(L, idx);
            if (v == floor(v) && fabs(v) < 9.2e18) {
                ints[i] = (long long)v;
                b->buffer_type = MYSQL_TYPE_LONGLONG;
                b->buffer = &ints[i];
            } else {
                doubles[i] = v;
                b->buffer_type = MYSQL_TYPE_DOUBLE;
                b->buffer = &doubles[i];
            }
            break;
        }
        case LUA_TSTRING: {
            size_t len;
            const char *s = lua_tolstring(L, idx, &len);
            memcpy(text, s, len);
            b->buffer_type = MYSQL_TYPE_STRING;
            b->buffer = text;
            b->buffer_length = len;
            text += len + 1;
            break;
        }
        default:
            b->buffer_type = MYSQL_TYPE_NULL;
            break;
        }
    }
    return bind;
}

static int is_integer_type(enum enum_field_types t)
{
    return t == MYSQL_TYPE_TINY || t == MYSQL_TYPE_SHORT || t == MYSQL_TYPE_LONG ||
           t == MYSQL_TYPE_INT24 || t == MYSQL_TYPE_LONGLONG || t == MYSQL_TYPE_YEAR;
}

static int is_float_type(enum enum_field_types t)
{
    return t == MYSQL_TYPE_FLOAT || t == MYSQL_TYPE_DOUBLE;
}

/* Pushes an integer column's value: a number, or exact int64 cdata beyond 2^53, or
 * text for an unsigned value beyond int64 (as PDO gives it). */
static void push_integer(lua_State *L, int64_t v, int is_unsigned, const char *text, size_t len)
{
    if ((is_unsigned && (uint64_t)v > INT64_MAX) || php_meta_push_int(L, v) != 0)
        lua_pushlstring(L, text, len);
}

/* An integer column's text as int64 (an unsigned value beyond it wraps: see
 * push_integer). */
static int64_t parse_integer(const char *v, unsigned int is_unsigned)
{
    return is_unsigned ? (int64_t)strtoull(v, NULL, 10) : (int64_t)strtoll(v, NULL, 10);
}

/* Rows of the text protocol: text values, numbers for integer and float columns.
 * From the first row on, so that a second try after a lack of memory gives them all. */
static void push_rows(lua_State *L, const struct mysql_api *my, MYSQL_RES *res)
{
    unsigned int cols = my->num_fields(res);
    MYSQL_FIELD *fields = my->fetch_fields(res);
    my->data_seek(res, 0);
    lua_newtable(L);
    MYSQL_ROW row;
    for (int n = 1; (row = my->fetch_row(res)); n++) {
        unsigned long *lengths = my->fetch_lengths(res);
        lua_createtable(L, 0, (int)cols);
        for (unsigned int j = 0; j < cols; j++) {
            const char *v = row[j];
            if (!v)
                lua_pushlightuserdata(L, NULL);
            else if (is_integer_type(fields[j].type))
                push_integer(L, parse_integer(v, fields[j].flags & UNSIGNED_FLAG),
                             (fields[j].flags & UNSIGNED_FLAG) != 0, v, lengths[j]);
            else if (is_float_type(fields[j].type))
                lua_pushnumber(L, strtod(v, NULL));
            else
                lua_pushlstring(L, v, lengths[j]);
            lua_setfield(L, -2, fields[j].name);
        }
        lua_rawseti(L, -2, n);
    }
}

/* What a result column of a prepared statement is fetched into. */
struct column {
    long long i;
    double d;
    unsigned long length;
    my_bool is_null, error;
};

/* Pushes the rows of a prepared statement whose result is stored, meta its result
 * metadata. Its memory is the Lua heap's (userdata on the stack while the rows are
 * pushed): a lack of memory raised in the middle leaves nothing to free. Rows from
 * the first on, so that a second try gives them all. Returns 0; or -1 with nothing
 * pushed and err set. */
static int push_statement_rows(lua_State *L, const struct mysql_api *my, MYSQL_STMT *stmt,
                               MYSQL_RES *meta, char *err, size_t errlen)
{
    unsigned int cols = my->num_fields(meta);
    MYSQL_FIELD *fields = my->fetch_fields(meta);
    MYSQL_BIND *bind = lua_newuserdata(L, (cols + 1) * (sizeof *bind + sizeof(struct column)));
    struct column *col = (struct column *)(bind + cols + 1);
    memset(bind, 0, (cols + 1) * (sizeof *bind + sizeof *col));
    int buffers = lua_gettop(L);
    lua_pushnil(L);  /* at buffers + 1: the text buffer, a userdata once a value needs it */
    char *text = NULL;
    size_t text_size = 0;
    for (unsigned int j = 0; j < cols; j++) {
        bind[j].is_null = &col[j].is_null;
        bind[j].error = &col[j].error;
        bind[j].length = &col[j].length;
        if (is_integer_type(fields[j].type)) {
            bind[j].buffer_type = MYSQL_TYPE_LONGLONG;
            bind[j].buffer = &col[j].i;
            bind[j].is_unsigned = (fields[j].flags & UNSIGNED_FLAG) != 0;
        } else if (is_float_type(fields[j].type)) {
            bind[j].buffer_type = MYSQL_TYPE_DOUBLE;
            bind[j].buffer = &col[j].d;
        } else {
            bind[j].buffer_type = MYSQL_TYPE_STRING;  /* its length first, then the text */
        }
    }
    if (my->stmt_bind_result(stmt, bind)) {
        snprintf(err, errlen, "%s", my->stmt_error(stmt));
        lua_settop(L, buffers - 1);
        return -1;
    }
    my->stmt_data_seek(stmt, 0);
    lua_newtable(L);
    for (int n = 1;; n++) {
        int f = my->stmt_fetch(stmt);
        if (f == MYSQL_NO_DATA)
            break;
        if (f == 1) {
            snprintf(err, errlen, "%s", my->stmt_error(stmt));
            lua_settop(L, buffers - 1);
            return -1;
        }
        lua_createtable(L, 0, (int)cols);
        for (unsigned int j = 0; j < cols; j++) {
            if (col[j].is_null) {
                lua_pushlightuserdata(L, NULL);
            } else if (bind[j].buffer_type == MYSQL_TYPE_LONGLONG) {
                char digits[24];
                int len = bind[j].is_unsigned
                              ? snprintf(digits, sizeof digits, "%llu", (unsigned long long)col[j].i)
                              : snprintf(digits, sizeof digits, "%lld", col[j].i);
                push_integer(L, col[j].i, bind[j].is_unsigned, digits, (size_t)len);
            } else if (bind[j].buffer_type == MYSQL_TYPE_DOUBLE) {
                lua_pushnumber(L, col[j].d);
            } else if (col[j].length == 0) {
                lua_pushliteral(L, "");
            } else {
                if (col[j].length + 1 > text_size) {
                    text_size = col[j].length + 1;
                    text = lua_newuserdata(L, text_size);
                    lua_replace(L, buffers + 1);
                }
                MYSQL_BIND b = { 0 };
                unsigned long got = 0;
                b.buffer_type = MYSQL_TYPE_STRING;
                b.buffer = text;
                b.buffer_length = text_size;
                b.length = &got;
                my->stmt_fetch_column(stmt, &b, j, 0);
                lua_pushlstring(L, text, col[j].length);
            }
            lua_setfield(L, -2, fields[j].name);
        }
        lua_rawseti(L, -2, n);
    }
    lua_replace(L, buffers);  /* the rows where the buffers were */
    lua_settop(L, buffers);
    return 0;
}

/* (false, message, kind, sqlstate, errno) for o's error. Returns 5. */
static int push_failure(lua_State *L, const struct mysql_outcome *o)
{
    vm_push_error(L, o->message, o->connection_failed ? "connection" : "query");
    lua_pushstring(L, o->sqlstate);
    lua_pushinteger(L, o->error);
    return 5;
}

/* Pushes the values kept at ref (a table of them, their count at [0]); returns how
 * many. Allocates nothing. */
static int push_kept(lua_State *L, int ref)
{
    lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
    lua_rawgeti(L, -1, 0);
    int n = (int)lua_tointeger(L, -1);
    lua_pop(L, 1);
    for (int i = 1; i <= n; i++)
        lua_rawgeti(L, -i, i);
    lua_remove(L, -n - 1);
    return n;
}

int mysql_values_push_outcome(lua_State *L, const struct mysql_outcome *o)
{
    if (o->error)
        return push_failure(L, o);
    if (o->kept)
        return push_kept(L, o->kept);
    lua_pushboolean(L, 1);
    if (o->connected)
        return 1;
    if (o->res)
        push_rows(L, o->my, o->res);
    else
        lua_newtable(L);
    lua_pushnumber(L, o->affected);
    return 3;
}

int mysql_values_push_statement_outcome(lua_State *L, const struct mysql_api *my,
                                        MYSQL_STMT *stmt, MYSQL_RES *meta, double affected)
{
    struct mysql_outcome o = { .my = my, .error = 2000 };  /* CR_UNKNOWN_ERROR */
    lua_pushboolean(L, 1);
    if (push_statement_rows(L, my, stmt, meta, o.message, sizeof o.message)) {
        lua_pop(L, 1);
        snprintf(o.sqlstate, sizeof o.sqlstate, "HY000");
        return push_failure(L, &o);
    }
    lua_pushnumber(L, affected);
    return 3;
}

int mysql_values_push_too_big(lua_State *L, const char *message)
{
    vm_push_error(L, message, "memory");
    lua_pushliteral(L, "HY000");
    lua_pushinteger(L, 2008);  /* CR_OUT_OF_MEMORY */
    return 5;
}

int mysql_values_keep(lua_State *L, int count)
{
    lua_createtable(L, count, 1);
    lua_insert(L, -count - 1);
    for (int i = count; i >= 1; i--)
        lua_rawseti(L, -i - 1, i);
    lua_pushinteger(L, count);
    lua_rawseti(L, -2, 0);
    return luaL_ref(L, LUA_REGISTRYINDEX);
}
