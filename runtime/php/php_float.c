#include "php/php_float.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Writes the shortest round-trip decimal digits of finite x > 0 into digits
 * (no dot, no trailing zeros) and the decimal exponent such that
 * x = 0.DIGITS * 10^decpt.  digits must hold 32 bytes. */
static void php_float_shortest_digits(double x, char *digits, int *decpt)
{
    char buf[48];
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        char *e;
        size_t nd = 0;
        int exp10;
        const char *c;
        snprintf(buf, sizeof buf, "%.*e", prec - 1, x);
        e = strchr(buf, 'e');
        exp10 = atoi(e + 1);
        for (c = buf; c < e; c++) {
            if (*c >= '0' && *c <= '9') {
                digits[nd++] = *c;
            }
        }
        digits[nd] = '\0';
        if (strtod(buf, NULL) != x && prec < 17) {
            /* At a power of two the interval above x is twice as wide as the
             * one below: the rounded-up neighbour may still round-trip. */
            char alt[48];
            char up[32];
            size_t i = nd;
            int carry = 1;
            memcpy(up, digits, nd + 1);
            while (i > 0 && carry) {
                i--;
                if (up[i] == '9') {
                    up[i] = '0';
                } else {
                    up[i]++;
                    carry = 0;
                }
            }
            if (carry || strtod(buf, NULL) > x) {
                continue;
            }
            snprintf(alt, sizeof alt, "%c.%se%d", up[0], up + 1, exp10);
            if (strtod(alt, NULL) != x) {
                continue;
            }
            memcpy(digits, up, nd + 1);
        }
        while (nd > 1 && digits[nd - 1] == '0') {
            digits[--nd] = '\0';
        }
        *decpt = exp10 + 1;
        return;
    }
}

/* Writes digits (x = 0.DIGITS * 10^decpt) as zend_gcvt lays them out for ndigit
 * significant digits: exponential ("1.0E+25", "1.5E-7") when decpt < -3 or decpt >
 * ndigit, else fixed ("0.0001", "120", "1.5"). */
static void php_float_layout(const char *digits, int decpt, int ndigit, char *dst)
{
    if (decpt < 0 ? decpt < -3 : decpt > ndigit) {
        const char *src = digits;
        int e = decpt - 1;
        *dst++ = *src++;
        *dst++ = '.';
        if (*src == '\0') {
            *dst++ = '0';
        }
        while (*src != '\0') {
            *dst++ = *src++;
        }
        sprintf(dst, "E%c%d", e < 0 ? '-' : '+', e < 0 ? -e : e);
    } else if (decpt <= 0) {
        *dst++ = '0';
        *dst++ = '.';
        while (decpt++ < 0) {
            *dst++ = '0';
        }
        strcpy(dst, digits);
    } else {
        const char *src = digits;
        int i;
        for (i = 0; i < decpt; i++) {
            *dst++ = *src != '\0' ? *src++ : '0';
        }
        if (*src != '\0') {
            *dst++ = '.';
            while (*src != '\0') {
                *dst++ = *src++;
            }
        }
        *dst = '\0';
    }
}

/* Writes NAN, INF, -INF, 0 or -0 for d into buf and returns NULL; else the sign of
 * a finite d != 0 and returns where its digits go. */
static char *php_float_special(double d, char *buf)
{
    if (isnan(d)) {
        strcpy(buf, "NAN");
        return NULL;
    }
    if (isinf(d)) {
        strcpy(buf, d < 0 ? "-INF" : "INF");
        return NULL;
    }
    if (signbit(d)) {
        *buf++ = '-';
    }
    if (d == 0) {
        strcpy(buf, "0");
        return NULL;
    }
    return buf;
}

void php_float_format(double d, char *buf)
{
    char digits[32];
    int decpt;
    char *dst = php_float_special(d, buf);
    if (!dst) {
        return;
    }
    php_float_shortest_digits(fabs(d), digits, &decpt);
    php_float_layout(digits, decpt, 17, dst);
}

void php_float_format_precision(double d, int precision, char *buf)
{
    char digits[48], tmp[64];
    char *dst = php_float_special(d, buf);
    size_t nd = 0;
    if (!dst) {
        return;
    }
    if (precision < 1) {
        precision = 1;
    } else if (precision > 40) {
        precision = 40;
    }
    snprintf(tmp, sizeof tmp, "%.*e", precision - 1, fabs(d));
    char *e = strchr(tmp, 'e');
    for (const char *c = tmp; c < e; c++) {
        if (*c >= '0' && *c <= '9') {
            digits[nd++] = *c;
        }
    }
    while (nd > 1 && digits[nd - 1] == '0') {
        nd--;
    }
    digits[nd] = '\0';
    php_float_layout(digits, atoi(e + 1) + 1, precision, dst);
}

int php_float_parse(const char *p, size_t n, double *out)
{
    size_t i;
    char buf[128];
    double d;
    if (n >= sizeof buf) {
        return -1;
    }
    memcpy(buf, p, n);
    buf[n] = '\0';
    if (strcmp(buf, "NAN") == 0) {
        d = NAN;
    } else if (strcmp(buf, "INF") == 0) {
        d = HUGE_VAL;
    } else if (strcmp(buf, "-INF") == 0) {
        d = -HUGE_VAL;
    } else {
        /* [+-]? (digits* '.' digits+ | digits+ '.'? digits*) ([eE] [+-]? digits+)? */
        size_t nint = 0;
        size_t nfrac = 0;
        i = 0;
        if (buf[i] == '+' || buf[i] == '-') {
            i++;
        }
        while (buf[i] >= '0' && buf[i] <= '9') {
            i++;
            nint++;
        }
        if (buf[i] == '.') {
            i++;
            while (buf[i] >= '0' && buf[i] <= '9') {
                i++;
                nfrac++;
            }
        }
        if (nint + nfrac == 0) {
            return -1;
        }
        if (buf[i] == 'e' || buf[i] == 'E') {
            size_t nexp = 0;
            i++;
            if (buf[i] == '+' || buf[i] == '-') {
                i++;
            }
            while (buf[i] >= '0' && buf[i] <= '9') {
                i++;
                nexp++;
            }
            if (nexp == 0) {
                return -1;
            }
        }
        if (buf[i] != '\0') {
            return -1;
        }
        d = strtod(buf, NULL);
    }
    *out = d;
    return 0;
}
