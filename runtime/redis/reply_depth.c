#include "redis/reply_depth.h"

#include <stdlib.h>
#include <string.h>

enum { AT_START = 0, IN_LINE, IN_HEADER, IN_BULK };

static const char replacement[] = "-" REPLY_DEPTH_ERROR "\r\n";

/* An element of the stream ended (outside a replaced array): counts it in the
 * arrays around it, closing those it completes; a top-level reply read whole with
 * a part replaced is counted in d->replaced. */
static void element_done(struct reply_depth *d)
{
    while (d->open > 0) {
        if (--d->left[d->open - 1] > 0)
            return;
        d->open--;
    }
    if (d->reply_replaced) {
        d->replaced++;
        d->reply_replaced = 0;
    }
}

/* An element inside a replaced array ended; when it was the array's last, the
 * replacement stands as one element of the array around it. */
static void skipped_done(struct reply_depth *d)
{
    if (--d->skip_left > 0)
        return;
    d->skipping = 0;
    element_done(d);
}

/* A '*' or '$' header's count was read: v. */
static void header_done(struct reply_depth *d, long long v)
{
    if (d->type == '$') {
        if (v >= 0) {
            d->bulk_left = v + 2;
            d->state = IN_BULK;
            return;
        }
        d->skipping ? skipped_done(d) : element_done(d);  /* a nil */
        return;
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
}

int reply_depth_feed(struct reply_depth *d, const char *in, size_t n, reply_depth_emit_fn *emit,
                     void *data)
{
    size_t run = 0;  /* where the bytes not yet emitted start, when not skipping */
    size_t i = 0;
    while (i < n && !d->broken) {
        int was_skipping = d->skipping;
        switch (d->state) {
        case AT_START: {
            char t = in[i];
            if (t != '*' && t != '$' && t != '+' && t != '-' && t != ':') {
                d->broken = 1;
                break;
            }
            if (t == '*' && !d->skipping && d->open == REPLY_DEPTH_ARRAYS) {
                if ((i > run && emit(data, in + run, i - run)) ||
                    emit(data, replacement, sizeof replacement - 1))
                    return -1;
                d->skipping = 1;
                d->skip_header = 1;
                d->reply_replaced = 1;
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
            d->skipping ? skipped_done(d) : element_done(d);
            break;
        }
        case IN_HEADER: {
            char ch = in[i++];
            if (ch == '\r')
                break;
            if (ch != '\n') {
                if (d->ndigits == (int)sizeof d->digits - 1)
                    d->broken = 1;
                else
                    d->digits[d->ndigits++] = ch;
                break;
            }
            d->digits[d->ndigits] = '\0';
            char *end;
            long long v = strtoll(d->digits, &end, 10);
            if (end == d->digits || *end) {
                d->broken = 1;
                break;
            }
            d->state = AT_START;
            header_done(d, v);
            break;
        }
        default: {  /* IN_BULK */
            size_t take = (size_t)d->bulk_left < n - i ? (size_t)d->bulk_left : n - i;
            i += take;
            d->bulk_left -= (long long)take;
            if (d->bulk_left == 0) {
                d->state = AT_START;
                d->skipping ? skipped_done(d) : element_done(d);
            }
            break;
        }
        }
        if (was_skipping || d->skipping)
            run = i;
    }
    /* Past a byte that is not RESP2 everything goes on as it is: the reader refuses
     * it and the connection ends, as without this filter. */
    if ((d->broken || !d->skipping) && n > run)
        return emit(data, in + run, n - run);
    return 0;
}
