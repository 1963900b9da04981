/* pg_rows: a statement's rows, kept compact as libpq's single-row mode hands them
 * over (see pg_rows.h). */
#include "db/pg_rows.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "php/php_meta.h"

void pg_rows_start(struct pg_rows *rows, size_t limit)
{
    memset(rows, 0, sizeof *rows);
    rows->cols = -1;
    rows->limit = limit;
}

void pg_rows_free(struct pg_rows *rows)
{
    if (rows->names) {
        for (int i = 0; i < rows->cols; i++)
            free(rows->names[i]);
        free(rows->names);
    }
    buffer_free(&rows->data);
    pg_rows_start(rows, 0);
}

/* Counts rows only from now on: what was kept is freed. */
static void drop(struct pg_rows *rows)
{
    rows->dropped = 1;
    buffer_free(&rows->data);
    rows->count = 0;
}

/* Takes the columns' names and types from the first row's result. */
static int describe(struct pg_rows *rows, const struct pg_api *pq, const PGresult *r)
{
    int cols = pq->nfields(r);
    char **names = calloc((size_t)cols + 1, sizeof *names + sizeof(Oid));
    if (!names)
        return -1;
    Oid *types = (Oid *)(names + cols + 1);
    for (int i = 0; i < cols; i++) {
        types[i] = pq->ftype(r, i);
        if (!(names[i] = strdup(pq->fname(r, i)))) {
            while (i-- > 0)
                free(names[i]);
            free(names);
            return -1;
        }
    }
    rows->names = names;
    rows->types = types;
    rows->cols = cols;
    return 0;
}

void pg_rows_add(struct pg_rows *rows, const struct pg_api *pq, const PGresult *r)
{
    if (rows->cols < 0 && describe(rows, pq, r)) {
        rows->cols = 0;
        drop(rows);
    }
    size_t row_bytes = 0;
    for (int j = 0; j < rows->cols; j++)
        row_bytes += (size_t)pq->getlength(r, 0, j);
    rows->bytes += row_bytes;
    if (!rows->dropped && rows->limit && rows->bytes > rows->limit)
        drop(rows);
    if (rows->dropped)
        return;
    if (buffer_reserve(&rows->data, row_bytes + (size_t)rows->cols * 5)) {
        drop(rows);
        return;
    }
    for (int j = 0; j < rows->cols; j++) {
        unsigned char null = pq->getisnull(r, 0, j) != 0;
        uint32_t len = (uint32_t)pq->getlength(r, 0, j);
        buffer_add(&rows->data, &null, 1);
        buffer_add(&rows->data, &len, sizeof len);
        buffer_add(&rows->data, pq->getvalue(r, 0, j), len);
    }
    rows->count++;
}

/* Pushes a column's value (its text, len bytes) by its type. */
static void push_value(lua_State *L, Oid type, const char *v, size_t len)
{
    char number[64];  /* the text of a number, NUL-terminated for strtoll / strtod */
    int numeric = type == 20 || type == 21 || type == 23 || type == 26 || type == 700 ||
                  type == 701;
    if (numeric && len < sizeof number) {
        memcpy(number, v, len);
        number[len] = '\0';
    }
    switch (numeric && len >= sizeof number ? 0 : type) {
    case 16:  /* bool */
        lua_pushboolean(L, len > 0 && v[0] == 't');
        return;
    case 20: case 21: case 23: case 26: {  /* int8, int2, int4, oid */
        errno = 0;
        long long n = strtoll(number, NULL, 10);
        if (errno == 0 && php_meta_push_int(L, (int64_t)n) == 0)
            return;
        break;
    }
    case 700: case 701:  /* float4, float8 */
        lua_pushnumber(L, strtod(number, NULL));
        return;
    default:
        break;
    }
    lua_pushlstring(L, v, len);
}

void pg_rows_push(lua_State *L, const struct pg_rows *rows)
{
    const char *p = rows->data.data;
    lua_createtable(L, rows->count > INT32_MAX ? INT32_MAX : (int)rows->count, 0);
    for (size_t i = 0; i < rows->count; i++) {
        lua_createtable(L, 0, rows->cols);
        for (int j = 0; j < rows->cols; j++) {
            unsigned char null = (unsigned char)*p++;
            uint32_t len;
            memcpy(&len, p, sizeof len);
            p += sizeof len;
            if (null)
                lua_pushlightuserdata(L, NULL);
            else
                push_value(L, rows->types[j], p, len);
            p += len;
            lua_setfield(L, -2, rows->names[j]);
        }
        lua_rawseti(L, -2, (int)(i + 1));
    }
}
