/* A growing byte buffer: see buffer.h. */
#include "lib/buffer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first allocation, doubled as needed. */
#define BUFFER_FIRST 256

int buffer_reserve(struct buffer *b, size_t n)
{
    if (n > (size_t)-1 / 2 - b->len)
        return -1;
    size_t need = b->len + n + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : BUFFER_FIRST;
    while (cap < need)
        cap *= 2;
    char *data = realloc(b->data, cap);
    if (!data)
        return -1;
    b->data = data;
    b->cap = cap;
    return 0;
}

void buffer_commit(struct buffer *b, size_t n)
{
    b->len += n;
    b->data[b->len] = '\0';
}

int buffer_add(struct buffer *b, const void *p, size_t n)
{
    if (buffer_reserve(b, n))
        return -1;
    if (n)
        memcpy(b->data + b->len, p, n);
    buffer_commit(b, n);
    return 0;
}

int buffer_printf(struct buffer *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || buffer_reserve(b, (size_t)n))
        return -1;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    buffer_commit(b, (size_t)n);
    return 0;
}

void buffer_free(struct buffer *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
