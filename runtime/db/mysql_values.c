#include "db/mysql_values.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Rows of the text protocol: text values, numbers for integer and float columns. */
void mysql_values_push_rows(lua_State *L, const struct mysql_api *my, MYSQL_RES *res)
{
    unsigned int cols = my->num_fields(res);
    MYSQL_FIELD *fields = my->fetch_fields(res);
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

int mysql_values_push_statement_rows(lua_State *L, const struct mysql_api *my, MYSQL_STMT *stmt,
                                     char *err, size_t errlen)
{
    MYSQL_RES *meta = my->stmt_result_metadata(stmt);
    unsigned int cols = meta ? my->num_fields(meta) : 0;
    MYSQL_FIELD *fields = meta ? my->fetch_fields(meta) : NULL;
    MYSQL_BIND *bind = calloc(cols + 1, sizeof *bind);
    struct column *col = calloc(cols + 1, sizeof *col);
    char *text = NULL;
    size_t text_size = 0;
    int rc = -1;
    if (!meta || !bind || !col) {
        snprintf(err, errlen, "%s", meta ? "out of memory" : my->stmt_error(stmt));
        goto done;
    }
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
        goto done;
    }
    lua_newtable(L);
    for (int n = 1;; n++) {
        int f = my->stmt_fetch(stmt);
        if (f == MYSQL_NO_DATA)
            break;
        if (f == 1) {
            lua_pop(L, 1);
            snprintf(err, errlen, "%s", my->stmt_error(stmt));
            goto done;
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
                    char *bigger = realloc(text, col[j].length + 1);
                    if (!bigger) {
                        lua_pop(L, 2);
                        snprintf(err, errlen, "out of memory");
                        goto done;
                    }
                    text = bigger;
                    text_size = col[j].length + 1;
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
    rc = 0;
done:
    free(text);
    free(col);
    free(bind);
    if (meta)
        my->free_result(meta);
    return rc;
}
