/* reply_depth: keeps Redis replies within the nesting hiredis 0.14's reader reads.
 * That reader takes an array nested in at most 7 others; on a deeper one it stops
 * with a protocol error, which ends the connection and with it the replies of every
 * command in flight on it: one handler's EVAL returning nested tables would fail
 * the commands of the jobs beside it. This filter sits between the socket and the
 * reader: it passes the byte stream (RESP2) through unchanged, except that an array
 * nested in 8 others is replaced, whole, by the error element REPLY_DEPTH_ERROR.
 * The command that asked for that reply is then answered with that error alone
 * (see redis_conn). Bulk strings are counted, not scanned. Uses nothing. */
#ifndef LUAWORKER_REPLY_DEPTH_H
#define LUAWORKER_REPLY_DEPTH_H

#include <stddef.h>

/* Arrays the reader takes around an element: one at the top and 7 nested. */
enum { REPLY_DEPTH_ARRAYS = 8 };

/* The error put in place of a deeper array (without RESP's "-" and CRLF). */
#define REPLY_DEPTH_ERROR                                                                  \
    "ERR luaworker's Redis client (hiredis 0.14) reads arrays nested 8 deep at most; "    \
    "this reply nests deeper: the command ran, its reply is dropped"

/* The state of one connection's stream; zeroed (= {0}) at each new connection. */
struct reply_depth {
    int state;                             /* where in an element the stream is */
    char type;                             /* the element's first byte */
    char digits[24];                       /* of a '*' or '$' header, read so far */
    int ndigits;
    long long bulk_left;                   /* bytes of a bulk string still to come, CRLF included */
    int open;                              /* arrays open around the next element */
    long long left[REPLY_DEPTH_ARRAYS];    /* elements still to come in each */
    int skipping;                          /* inside an array being replaced */
    int skip_header;                       /* reading the replaced array's own header */
    long long skip_left;                   /* elements still to come in it, nested ones included */
    int broken;                            /* not RESP2: passed on as it is, for the reader to refuse */
    int reply_replaced;                    /* the reply being read has a part replaced */
    unsigned replaced;                     /* replies with a part replaced, read whole, not yet claimed */
};

/* Receives the bytes to give the reader, in order. Returns 0, or -1 to stop. */
typedef int reply_depth_emit_fn(void *data, const char *bytes, size_t len);

/* Filters the next n bytes of the stream through emit. Returns 0, or -1 when emit
 * did. */
int reply_depth_feed(struct reply_depth *d, const char *in, size_t n, reply_depth_emit_fn *emit,
                     void *data);

#endif
