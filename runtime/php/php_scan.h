/* php_scan: a cursor over PHP serialize() text that reads its tokens
 * (separators, unsigned lengths and counts, integers, floats, quoted bytes)
 * and words every error as "<what> at offset N", N being the byte offset
 * into the text.  Knows nothing of Lua.  Uses php_float. */
#ifndef LUAWORKER_PHP_SCAN_H
#define LUAWORKER_PHP_SCAN_H

#include <stddef.h>
#include <stdint.h>

struct php_scan {
    const char *s;  /* the text, only read; not owned */
    size_t len;
    size_t pos;     /* next byte to read */
    char *err;      /* caller's buffer, filled by php_scan_fail */
    size_t errlen;
};

/* Each reader below advances pos past what it read and returns 0, or returns
 * -1 after php_scan_fail (pos then says nothing useful).  A reader that finds
 * the text ending early fails with "unexpected end of input". */

/* Fills err with "<what> at offset <at>" (truncated to errlen) and returns -1. */
int php_scan_fail(struct php_scan *sc, const char *what, size_t at);

/* Reads the byte c; otherwise fails with "expected '<c>'". */
int php_scan_expect(struct php_scan *sc, char c);

/* Reads an unsigned decimal (lengths, counts, reference numbers) of at most
 * 15 digits; otherwise fails with `what` at its start. */
int php_scan_uint(struct php_scan *sc, size_t *out, const char *what);

/* Reads [+-]?[0-9]+ as a signed 64-bit integer; fails with "invalid integer"
 * or "integer out of range". */
int php_scan_int(struct php_scan *sc, int64_t *out);

/* Reads a float body and its ';' (what follows "d:"), see php_float_parse;
 * fails with "invalid float". */
int php_scan_double(struct php_scan *sc, double *out);

/* Reads <len>:"<bytes>" and points *p at the bytes inside s (*n of them);
 * fails with `what` for a bad length, "length exceeds input" when s is too
 * short. */
int php_scan_quoted(struct php_scan *sc, const char **p, size_t *n, const char *what);

#endif
