/* php_float: doubles as PHP's serialize() writes them after d: and as
 * unserialize() accepts them.  Formatting follows serialize_precision = -1
 * (zend_gcvt mode 0: the shortest text that reads back as the same double).
 * Uses the C library only. */
#ifndef LUAWORKER_PHP_FLOAT_H
#define LUAWORKER_PHP_FLOAT_H

#include <stddef.h>

/* Writes d as PHP's serialize() does into buf (at least 64 bytes),
 * NUL-terminated: "0.1", "-0", "1.0E+25", "INF", "NAN"... */
void php_float_format(double d, char *buf);

/* Writes d as PHP's (string) cast does with the `precision` ini setting (14 by
 * default; PDO binds a float so): precision significant digits, rounded, trailing
 * zeros dropped, exponential from 1.0E+15 and below 1.0E-4: "0.1",
 * "0.33333333333333", "1.0E+25", "-1.5E-7". buf: at least 64 bytes. */
void php_float_format_precision(double d, int precision, char *buf);

/* Reads p[0..n) (the text between "d:" and ";") into *out.  Accepts NAN, INF,
 * -INF and [+-]? (digits* '.' digits+ | digits+ '.'? digits*)
 * ([eE] [+-]? digits+)?, at most 127 bytes.  Returns 0, or -1 with *out
 * unchanged when the text is not such a float. */
int php_float_parse(const char *p, size_t n, double *out);

#endif
