#include "redis/reply_limits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { AT_START = 0, IN_LINE, IN_HEADER, IN_BULK };

static const char too_deep[] = "-" REPLY_LIMITS_TOO_DEEP "\r\n";

/* An element of the stream ended (outside anything replaced): counts it in the
 * arrays around it, closing those it completes, and the reply when it was the
 * last. */
static void element_done(struct reply_limits *d)
{
    while (d->open > 0) {
        if (--d->left[d->open - 1] > 0)
            return;
        d->open--;
    }
    d->reply_replaced = 0;
    d->reply_bytes = 0;
}

/* A part of the reply being read is replaced: the reply is counted in d->replaced
 * at once (the reader may hand it over as soon as it has the replacement, before
 * the bytes replaced have passed). */
static void replacing(struct reply_limits *d)
{
    if (!d->reply_replaced)
        d->replaced++;
    d->reply_replaced = 1;
}

/* An element inside something replaced ended; when it was the last, the
 * replacement stands as one element of the array around it. */
static void skipped_done(struct reply_limits *d)
{
    if (--d->skip_left > 0)
        return;
    d->skipping = 0;
    element_done(d);
}

static void item_done(struct reply_limits *d)
{
    if (d->skipping)
        skipped_done(d);
    else
        element_done(d);
}

/* The header of a bulk string held back (v its length) is passed on, or replaced
 * with the string when the reply's strings so far and v are over max_string.
 * Returns 0, or -1 when emit did. */
static int pass_bulk_header(struct reply_limits *d, long long v, reply_limits_emit_fn *emit,
                            void *data)
{
    char line[64];
    d->holding = 0;
    if (d->max_string && v > d->max_string - d->reply_bytes) {
        replacing(d);
        d->skipping = 1;
        d->skip_left = 1;  /* the string itself */
        int n = snprintf(line, sizeof line, "-" REPLY_LIMITS_TOO_BIG " %lld\r\n", d->reply_bytes + v);
        return emit(data, line, (size_t)n);
    }
    if (v > 0)
        d->reply_bytes += v;
    int n = snprintf(line, sizeof line, "$%lld\r\n", v);
    return emit(data, line, (size_t)n);
}

/* A '*' or '$' header's count was read: v. Returns 0, or -1 when emit did. */
static int header_done(struct reply_limits *d, long long v, reply_limits_emit_fn *emit, void *data)
{
    if (d->type == '$') {
        if (d->holding && pass_bulk_header(d, v, emit, data))
            return -1;
        if (v >= 0) {
            d->bulk_left = v + 2;
            d->state = IN_BULK;
        } else {
            item_done(d);  /* a nil */
        }
        return 0;
    }
    if (d->skip_header) {  /* the replaced array's own count */
        d->skip_header = 0;
        d->skip_left = v > 0 ? v : 1;  /* an empty one ends at once */
        if (v <= 0)
            skipped_done(d);
    } else if (d->skipping) {
        if (v > 0)
            d->skip_left += v - 1;  /* this element is its v elements */
        else
            skipped_done(d);
    } else if (v > 0) {
        d->left[d->open++] = v;
    } else {
        element_done(d);  /* an empty or nil array */
    }
    return 0;
}

/* Not RESP2 from here: a bulk string's header held back is passed on as it came. */
static int break_stream(struct reply_limits *d, reply_limits_emit_fn *emit, void *data)
{
    d->broken = 1;
    if (!d->holding)
        return 0;
    d->holding = 0;
    return emit(data, "$", 1) || emit(data, d->digits, (size_t)d->ndigits);
}

int reply_limits_feed(struct reply_limits *d, const char *in, size_t n, reply_limits_emit_fn *emit,
                      void *data)
{
    size_t run = 0;  /* where the bytes not yet emitted start, while passing on */
    size_t i = 0;
    while (i < n && !d->broken) {
        int was_passing = !d->skipping && !d->holding;
        switch (d->state) {
        case AT_START: {
            char t = in[i];
            if (t != '*' && t != '$' && t != '+' && t != '-' && t != ':') {
                d->broken = 1;
                break;
            }
            if (!d->skipping && (t == '$' || (t == '*' && d->open == REPLY_LIMITS_ARRAYS))) {
                if (i > run && emit(data, in + run, i - run))
                    return -1;
                if (t == '$') {
                    d->holding = 1;
                } else {
                    if (emit(data, too_deep, sizeof too_deep - 1))
                        return -1;
                    d->skipping = 1;
                    d->skip_header = 1;
                    replacing(d);
                }
            }
            d->type = t;
            d->ndigits = 0;
            d->state = t == '*' || t == '$' ? IN_HEADER : IN_LINE;
            i++;
            break;
        }
        case IN_LINE: {
            const char *nl = memchr(in + i, '\n', n - i);
            if (!nl) {
                i = n;
                break;
            }
            i = (size_t)(nl - in) + 1;
            d->state = AT_START;
            item_done(d);
            break;
        }
        case IN_HEADER: {
            char ch = in[i];
            if (ch != '\r' && ch != '\n' && d->ndigits == (int)sizeof d->digits - 1) {
                if (break_stream(d, emit, data))
                    return -1;
                break;
            }
            i++;
            if (ch == '\r')
                break;
            if (ch != '\n') {
                d->digits[d->ndigits++] = ch;
                break;
            }
            d->digits[d->ndigits] = '\0';
            char *end;
            long long v = strtoll(d->digits, &end, 10);
            if (end == d->digits || *end) {
                if (break_stream(d, emit, data) || emit(data, "\r\n", 2))
                    return -1;
                break;
            }
            d->state = AT_START;
            if (header_done(d, v, emit, data))
                return -1;
            break;
        }
        default: {  /* IN_BULK */
            size_t take = (size_t)d->bulk_left < n - i ? (size_t)d->bulk_left : n - i;
            i += take;
            d->bulk_left -= (long long)take;
            if (d->bulk_left == 0) {
                d->state = AT_START;
                item_done(d);
            }
            break;
        }
        }
        if (!was_passing || d->skipping || d->holding)
            run = i;
    }
    /* Past a byte that is not RESP2 everything goes on as it is: the reader refuses
     * it and the connection ends, as without this filter. */
    if ((d->broken || (!d->skipping && !d->holding)) && n > run)
        return emit(data, in + run, n - run);
    return 0;
}
