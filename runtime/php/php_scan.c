#include "php/php_scan.h"

#include <stdio.h>

#include "php/php_float.h"

int php_scan_fail(struct php_scan *sc, const char *what, size_t at)
{
    if (sc->errlen > 0) {
        snprintf(sc->err, sc->errlen, "%s at offset %lu", what, (unsigned long)at);
    }
    return -1;
}

int php_scan_expect(struct php_scan *sc, char c)
{
    char what[16];
    if (sc->pos >= sc->len) {
        return php_scan_fail(sc, "unexpected end of input", sc->pos);
    }
    if (sc->s[sc->pos] != c) {
        snprintf(what, sizeof what, "expected '%c'", c);
        return php_scan_fail(sc, what, sc->pos);
    }
    sc->pos++;
    return 0;
}

int php_scan_uint(struct php_scan *sc, size_t *out, const char *what)
{
    size_t start = sc->pos;
    size_t v = 0;
    while (sc->pos < sc->len && sc->s[sc->pos] >= '0' && sc->s[sc->pos] <= '9') {
        if (sc->pos - start >= 15) {
            return php_scan_fail(sc, what, start);
        }
        v = v * 10 + (size_t)(sc->s[sc->pos] - '0');
        sc->pos++;
    }
    if (sc->pos == start) {
        if (sc->pos >= sc->len) {
            return php_scan_fail(sc, "unexpected end of input", sc->pos);
        }
        return php_scan_fail(sc, what, start);
    }
    *out = v;
    return 0;
}

int php_scan_int(struct php_scan *sc, int64_t *out)
{
    size_t start = sc->pos;
    int neg = 0;
    uint64_t v = 0;
    uint64_t limit;
    size_t digits = sc->pos;
    if (sc->pos < sc->len && (sc->s[sc->pos] == '-' || sc->s[sc->pos] == '+')) {
        neg = sc->s[sc->pos] == '-';
        sc->pos++;
        digits = sc->pos;
    }
    limit = neg ? (uint64_t)INT64_MAX + 1u : (uint64_t)INT64_MAX;
    while (sc->pos < sc->len && sc->s[sc->pos] >= '0' && sc->s[sc->pos] <= '9') {
        unsigned d = (unsigned)(sc->s[sc->pos] - '0');
        if (v > (limit - d) / 10) {
            return php_scan_fail(sc, "integer out of range", start);
        }
        v = v * 10 + d;
        sc->pos++;
    }
    if (sc->pos == digits) {
        if (sc->pos >= sc->len) {
            return php_scan_fail(sc, "unexpected end of input", sc->pos);
        }
        return php_scan_fail(sc, "invalid integer", start);
    }
    if (neg) {
        *out = v == (uint64_t)INT64_MAX + 1u ? INT64_MIN : -(int64_t)v;
    } else {
        *out = (int64_t)v;
    }
    return 0;
}

int php_scan_double(struct php_scan *sc, double *out)
{
    size_t start = sc->pos;
    size_t end = start;
    while (end < sc->len && sc->s[end] != ';') {
        end++;
    }
    if (end >= sc->len) {
        return php_scan_fail(sc, "unexpected end of input", sc->len);
    }
    if (php_float_parse(sc->s + start, end - start, out) != 0) {
        return php_scan_fail(sc, "invalid float", start);
    }
    sc->pos = end + 1;
    return 0;
}

int php_scan_quoted(struct php_scan *sc, const char **p, size_t *n, const char *what)
{
    size_t at = sc->pos;
    if (php_scan_uint(sc, n, what) != 0 || php_scan_expect(sc, ':') != 0
        || php_scan_expect(sc, '"') != 0) {
        return -1;
    }
    if (*n > sc->len - sc->pos) {
        return php_scan_fail(sc, "length exceeds input", at);
    }
    *p = sc->s + sc->pos;
    sc->pos += *n;
    return php_scan_expect(sc, '"');
}
