/* reply_limits (runtime/redis/reply_limits.c): random RESP2 replies, some nesting
 * arrays deeper than hiredis 0.14 reads or holding strings over a limit, fed to the
 * filter whole, a byte at a time and in random pieces; what it passes on must be
 * the replies with exactly those arrays and strings replaced, and hiredis' own
 * reader must read it back. Prints TAP; exits 1 when a check failed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "redis/reply_limits.h"

static int checks, failures;

static void check(int ok, const char *what)
{
    checks++;
    if (!ok)
        failures++;
    printf("%sok %d - reply_limits: %s\n", ok ? "" : "not ", checks, what);
}

/* A growing byte buffer. */
struct buf {
    char *b;
    size_t len, cap;
};

static void put(struct buf *o, const char *s, size_t n)
{
    if (o->len + n > o->cap) {
        o->cap = (o->len + n) * 2 + 64;
        o->b = realloc(o->b, o->cap);
        if (!o->b)
            abort();
    }
    memcpy(o->b + o->len, s, n);
    o->len += n;
}

static void puts2(struct buf *in, struct buf *want, const char *s, size_t n)
{
    put(in, s, n);
    if (want)
        put(want, s, n);
}

static unsigned long long rng = 88172645463325252ull;

static unsigned next(unsigned n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng % n);
}

static const char replacement[] = "-" REPLY_LIMITS_TOO_DEEP "\r\n";

/* The limit on strings of the round (0: none), and the bytes of the strings of
 * the reply being written that the filter passes on. */
static long long max_string, reply_total;

/* Writes a random element nested in `open` arrays to in, and to want what the
 * filter must pass on (NULL inside an array being replaced). Arrays are more
 * likely to nest deep when `deep`. */
static void element(struct buf *in, struct buf *want, int open, int deep, int *replaced)
{
    char line[64];
    unsigned kind = next(10);
    if (deep && open < 12 && kind < 5)
        kind = 9;
    switch (kind) {
    case 0:
        puts2(in, want, "+OK\r\n", 5);
        break;
    case 1: {
        const char *e = "-ERR some error, with * and $ in it\r\n";
        puts2(in, want, e, strlen(e));
        break;
    }
    case 2: {
        int n = snprintf(line, sizeof line, ":%d\r\n", (int)next(100000) - 50000);
        puts2(in, want, line, (size_t)n);
        break;
    }
    case 3:
        puts2(in, want, "$-1\r\n", 5);
        break;
    case 4:
    case 5:
    case 6: {  /* a bulk string whose bytes look like RESP */
        size_t len = next(3) == 0 ? 20000 + next(5000) : next(40);
        int n = snprintf(line, sizeof line, "$%zu\r\n", len);
        put(in, line, (size_t)n);
        if (want && max_string && (long long)len > max_string - reply_total) {
            n = snprintf(line, sizeof line, "-" REPLY_LIMITS_TOO_BIG " %lld\r\n",
                         reply_total + (long long)len);
            put(want, line, (size_t)n);
            (*replaced)++;
            want = NULL;
        } else if (want) {
            put(want, line, (size_t)n);
            reply_total += (long long)len;
        }
        for (size_t i = 0; i < len; i++) {
            char c = "*$+-:\r\n0123x"[next(12)];
            puts2(in, want, &c, 1);
        }
        puts2(in, want, "\r\n", 2);
        break;
    }
    case 7: {
        if (want && open == REPLY_LIMITS_ARRAYS) {
            put(want, replacement, sizeof replacement - 1);
            (*replaced)++;
            want = NULL;
        }
        const char *empty = next(2) ? "*0\r\n" : "*-1\r\n";
        puts2(in, want, empty, strlen(empty));
        break;
    }
    default: {
        unsigned count = 1 + next(4);
        if (want && open == REPLY_LIMITS_ARRAYS) {
            put(want, replacement, sizeof replacement - 1);
            (*replaced)++;
            want = NULL;
        }
        int n = snprintf(line, sizeof line, "*%u\r\n", count);
        puts2(in, want, line, (size_t)n);
        for (unsigned i = 0; i < count; i++)
            element(in, want, open + 1, deep && next(3) != 0, replaced);
    }
    }
}

static int append(void *data, const char *bytes, size_t len)
{
    put(data, bytes, len);
    return 0;
}

/* Feeds in to a fresh filter in pieces of at most piece bytes (0: random sizes). */
static struct buf run(const struct buf *in, size_t piece, unsigned *replaced)
{
    struct reply_limits d = {0};
    d.max_string = max_string;
    struct buf out = {0};
    for (size_t at = 0; at < in->len;) {
        size_t n = piece ? piece : 1 + next(9000);
        if (n > in->len - at)
            n = in->len - at;
        reply_limits_feed(&d, in->b + at, n, append, &out);
        at += n;
    }
    *replaced = d.replaced;
    return out;
}

/* How many replies hiredis' reader reads from out, or -1 when it refuses it. */
static int hiredis_reads(const struct buf *out)
{
    redisReader *r = redisReaderCreate();
    int count = 0;
    if (redisReaderFeed(r, out->b, out->len) != REDIS_OK)
        count = -1;
    for (void *reply; count >= 0;) {
        if (redisReaderGetReply(r, &reply) != REDIS_OK) {
            count = -1;
            break;
        }
        if (!reply)
            break;
        freeReplyObject(reply);
        count++;
    }
    redisReaderFree(r);
    return count;
}

int main(void)
{
    int all_exact = 1, all_read = 1, all_counted = 1, some_replaced = 0;
    for (int round = 0; round < 300; round++) {
        max_string = round % 3 == 1 ? 22000 : round % 3 == 2 ? 60000 : 0;
        struct buf in = {0}, want = {0};
        int replaced = 0, replies = 1 + (int)next(6), replaced_replies = 0;
        for (int i = 0; i < replies; i++) {
            int before = replaced;
            reply_total = 0;
            element(&in, &want, 0, next(2), &replaced);
            replaced_replies += replaced > before;
        }
        some_replaced |= replaced > 0;
        size_t pieces[] = {in.len, 1, 0, 7};
        for (size_t p = 0; p < sizeof pieces / sizeof *pieces; p++) {
            unsigned counted;
            struct buf out = run(&in, pieces[p], &counted);
            all_exact &= out.len == want.len && memcmp(out.b, want.b, out.len) == 0;
            all_counted &= (int)counted == replaced_replies;
            all_read &= hiredis_reads(&out) == replies;
            free(out.b);
        }
        free(in.b);
        free(want.b);
    }
    check(some_replaced, "the random replies include arrays too deep and strings too long");
    check(all_exact, "passes replies on byte for byte, too deep arrays and too long strings replaced, "
          "whatever the pieces");
    check(all_counted, "counts the replies with a part replaced");
    check(all_read, "what it passes on, hiredis reads whole");

    max_string = 0;
    /* an array 8 deep is passed on; one more level is not */
    const char eight[] = "*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n";
    struct buf in = {0};
    put(&in, eight, sizeof eight - 1);
    unsigned counted;
    struct buf out = run(&in, 0, &counted);
    check(out.len == in.len && counted == 0 && hiredis_reads(&out) == 1,
          "an array nested in 7 others is passed on as it is");
    free(out.b);
    in.len = 0;
    put(&in, "*2\r\n", 4);
    put(&in, eight, sizeof eight - 1);
    put(&in, ":2\r\n+NEXT\r\n", 11);
    out = run(&in, 1, &counted);
    const char want[] = "*2\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n-" REPLY_LIMITS_TOO_DEEP
                        "\r\n:2\r\n+NEXT\r\n";
    check(out.len == sizeof want - 1 && memcmp(out.b, want, out.len) == 0 && counted == 1 &&
              hiredis_reads(&out) == 2,
          "one nested in 8 is replaced; the elements and the reply after it are kept");
    free(out.b);

    /* a string at the limit is passed on; one byte more is not */
    max_string = 5;
    in.len = 0;
    const char strings[] = "*3\r\n$5\r\nabcde\r\n$6\r\nabcdef\r\n$-1\r\n$6\r\nabcdef\r\n";
    put(&in, strings, sizeof strings - 1);
    out = run(&in, 1, &counted);
    const char want2[] = "*3\r\n$5\r\nabcde\r\n-" REPLY_LIMITS_TOO_BIG " 11\r\n$-1\r\n-"
                         REPLY_LIMITS_TOO_BIG " 6\r\n";
    check(out.len == sizeof want2 - 1 && memcmp(out.b, want2, out.len) == 0 && counted == 2 &&
              hiredis_reads(&out) == 2,
          "a string past max_string is replaced, one up to it is kept, in an array and at the top");
    free(out.b);
    in.len = 0;
    const char two[] = "*2\r\n$3\r\nabc\r\n$3\r\ndef\r\n+OK\r\n";
    put(&in, two, sizeof two - 1);
    out = run(&in, 0, &counted);
    const char want3[] = "*2\r\n$3\r\nabc\r\n-" REPLY_LIMITS_TOO_BIG " 6\r\n+OK\r\n";
    check(out.len == sizeof want3 - 1 && memcmp(out.b, want3, out.len) == 0 && counted == 1,
          "strings count together in their reply, and afresh in the next");
    free(out.b);
    free(in.b);

    printf("1..%d\n", checks);
    return failures ? 1 : 0;
}
