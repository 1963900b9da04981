/*
 * A growing byte buffer, NUL-terminated after its bytes (data is NULL until the
 * first byte or reserve). Starts zeroed: `struct buffer b = {0};`; buffer_free ends
 * it. The one growing buffer of the C side (the .env reader and parser, the HTTP
 * client's responses).
 */
#ifndef LUAWORKER_BUFFER_H
#define LUAWORKER_BUFFER_H

#include <stddef.h>

struct buffer {
    char *data;
    size_t len, cap;
};

/* Appends n bytes of p. Returns 0, or -1 when out of memory (b unchanged). */
int buffer_add(struct buffer *b, const void *p, size_t n);

/* Makes room for n more bytes (and the NUL) past len, for a caller that writes them
 * at data + len and then adds what it wrote to len (buffer_commit). Returns 0, or -1
 * when out of memory (b unchanged). */
int buffer_reserve(struct buffer *b, size_t n);

/* Counts n bytes written at data + len after buffer_reserve(b, n or more). */
void buffer_commit(struct buffer *b, size_t n);

/* Appends printf's text of fmt. Returns 0, or -1 when out of memory. */
int buffer_printf(struct buffer *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Frees the bytes; b is empty again. */
void buffer_free(struct buffer *b);

#endif
