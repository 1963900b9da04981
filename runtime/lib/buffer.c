/* A growing byte buffer: see buffer.h. */
#include "lib/buffer.h"

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

void buffer_free(struct buffer *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
