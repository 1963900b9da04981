/* reply_limits: keeps the Redis replies a connection reads within what its reader
 * can read and the worker can hold, so that one command's reply fails that command
 * alone.
 *   - hiredis 0.14's reader takes an array nested in at most 7 others; on a deeper
 *     one it stops with a protocol error, which ends the connection and with it the
 *     replies of every command in flight on it (one handler's EVAL returning nested
 *     tables failed the commands of the jobs beside it).
 *   - the reader holds a reply whole before anyone can refuse it: a 300 MB string
 *     took 600 MB of a worker under --memory-limit=64 before the call failed.
 * This filter sits between the socket and the reader: it passes the byte stream
 * (RESP2) through unchanged, except that an array nested in 8 others, and a bulk
 * string that would bring the bytes of its reply's strings over max_string, are
 * replaced, unread, by an error element whose text starts with REPLY_LIMITS_MARK
 * (REPLY_LIMITS_TOO_DEEP, or REPLY_LIMITS_TOO_BIG and the reply's string bytes with
 * it). The command that asked for that reply is then answered with a failure
 * instead (see redis_conn). Bulk strings are counted, not scanned. (What the
 * reader allocates for each element, a few dozen bytes, is not counted: an array of
 * millions of small elements is still read whole.) Uses nothing. */
#ifndef LUAWORKER_REPLY_LIMITS_H
#define LUAWORKER_REPLY_LIMITS_H

#include <stddef.h>

/* Arrays the reader takes around an element: one at the top and 7 nested. */
enum { REPLY_LIMITS_ARRAYS = 8 };

/* The error elements put in place of what is replaced (without RESP's "-" and
 * CRLF): REPLY_LIMITS_TOO_DEEP, or REPLY_LIMITS_TOO_BIG followed by a space and
 * the bytes of the reply's strings up to and with the one replaced. */
#define REPLY_LIMITS_MARK "LUAWORKER reply "
#define REPLY_LIMITS_TOO_DEEP REPLY_LIMITS_MARK "too deep"
#define REPLY_LIMITS_TOO_BIG REPLY_LIMITS_MARK "too big"

/* The state of one connection's stream: zeroed at each new connection, then
 * max_string set (0: no limit). */
struct reply_limits {
    long long max_string;                  /* a longer bulk string is replaced */
    int state;                             /* where in an element the stream is */
    char type;                             /* the element's first byte */
    char digits[24];                       /* of a '*' or '$' header, read so far */
    int ndigits;
    long long bulk_left;                   /* bytes of a bulk string still to come, CRLF included */
    int open;                              /* arrays open around the next element */
    long long left[REPLY_LIMITS_ARRAYS];   /* elements still to come in each */
    int skipping;                          /* inside something replaced */
    int skip_header;                       /* reading the replaced array's own header */
    long long skip_left;                   /* elements still to come in it, nested ones included */
    int holding;                           /* a bulk string's header, passed on once read */
    int broken;                            /* not RESP2: passed on as it is, for the reader to refuse */
    int reply_replaced;                    /* the reply being read has a part replaced */
    long long reply_bytes;                 /* the bytes of its strings passed on so far */
    unsigned replaced;                     /* replies with a part replaced, not yet claimed */
};

/* Receives the bytes to give the reader, in order. Returns 0, or -1 to stop. */
typedef int reply_limits_emit_fn(void *data, const char *bytes, size_t len);

/* Filters the next n bytes of the stream through emit. Returns 0, or -1 when emit
 * did. */
int reply_limits_feed(struct reply_limits *d, const char *in, size_t n, reply_limits_emit_fn *emit,
                      void *data);

#endif
