#include "supervisor/fleet_json.h"

#include <stdlib.h>
#include <string.h>

#include "lib/utf8.h"
#include "supervisor/fleet_view.h"

/* The most failures listed. */
#define FLEET_FAILURES 20

/* Appends s as a JSON string. */
static int string(struct buffer *out, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t n = strlen(s);
    if (buffer_add(out, "\"", 1))
        return -1;
    for (size_t i = 0; i < n;) {
        size_t len = utf8_sequence_length(p + i, n - i);
        int r;
        if (p[i] == '"' || p[i] == '\\')
            r = buffer_printf(out, "\\%c", p[i]);
        else if (p[i] < 0x20)
            r = buffer_printf(out, "\\u%04x", p[i]);
        else if (p[i] == '<')  /* never "</script>" in a page that inlines it */
            r = buffer_add(out, "\\u003c", 6);
        else
            r = len ? buffer_add(out, p + i, len) : buffer_add(out, "?", 1);
        if (r)
            return -1;
        i += len ? len : 1;
    }
    return buffer_add(out, "\"", 1);
}

static int workers(struct buffer *out, struct slot *const *slots, const int *pids, int n)
{
    if (buffer_add(out, "\"workers\":[", 11))
        return -1;
    for (int i = 0; i < n; i++)
        if (buffer_printf(out, "%s{\"slot\":%d,\"pid\":%d,\"in_flight\":%u,\"restarts\":%llu}", i ? "," : "",
                          i + 1, pids[i], atomic_load_explicit(&slots[i]->in_flight, memory_order_relaxed),
                          (unsigned long long)atomic_load_explicit(&slots[i]->counts.restarts,
                                                                   memory_order_relaxed)))
            return -1;
    return buffer_add(out, "]", 1);
}

static int queues(struct buffer *out, struct slot *const *slots, int n)
{
    struct counts_queue_size sizes[COUNTS_QUEUES];
    uint32_t count = fleet_sizes(slots, n, sizes);
    if (buffer_add(out, ",\"queues\":[", 11))
        return -1;
    for (uint32_t i = 0; i < count; i++) {
        if (buffer_add(out, i ? ",{\"queue\":" : "{\"queue\":", i ? 10 : 9) || string(out, sizes[i].queue) ||
            buffer_printf(out, ",\"pending\":%llu,\"delayed\":%llu,\"reserved\":%llu,\"oldest_wait\":",
                          (unsigned long long)sizes[i].pending, (unsigned long long)sizes[i].delayed,
                          (unsigned long long)sizes[i].reserved))
            return -1;
        int r = sizes[i].oldest_wait >= 0 ? buffer_printf(out, "%lld}", (long long)sizes[i].oldest_wait)
                                          : buffer_add(out, "null}", 5);
        if (r)
            return -1;
    }
    return buffer_add(out, "]", 1);
}

static int jobs(struct buffer *out, struct slot *const *slots, int n)
{
    size_t count = 0;
    struct fleet_sum *sums = fleet_sums(slots, n, &count);
    if (!sums)
        return -1;
    int r = buffer_add(out, ",\"jobs\":[", 9);
    for (size_t i = 0; i < count && !r; i++)
        r = buffer_add(out, i ? ",{\"queue\":" : "{\"queue\":", i ? 10 : 9) || string(out, sums[i].queue) ||
            buffer_add(out, ",\"job\":", 7) || string(out, sums[i].job) ||
            buffer_printf(out, ",\"processed\":%llu,\"failed\":%llu,\"released\":%llu}",
                          (unsigned long long)sums[i].outcomes[COUNTS_PROCESSED],
                          (unsigned long long)sums[i].outcomes[COUNTS_FAILED],
                          (unsigned long long)sums[i].outcomes[COUNTS_RELEASED]);
    free(sums);
    return r || buffer_add(out, "]", 1) ? -1 : 0;
}

static int failures(struct buffer *out, struct slot *const *slots, int n, uint64_t now)
{
    struct counts_failure list[FLEET_FAILURES];
    uint32_t count = fleet_failures(slots, n, list, FLEET_FAILURES);
    if (buffer_printf(out, ",\"failed_last_hour\":%llu,\"failures\":[",
                      (unsigned long long)fleet_failed_last_hour(slots, n, now)))
        return -1;
    int listed = 0;
    for (uint32_t i = 0; i < count; i++) {
        if (list[i].at + 3600 < now)
            continue;
        if (buffer_printf(out, "%s{\"at\":%llu,\"queue\":", listed++ ? "," : "",
                          (unsigned long long)list[i].at) ||
            string(out, list[i].queue) || buffer_add(out, ",\"job\":", 7) || string(out, list[i].job) ||
            buffer_add(out, ",\"exception\":", 13) || string(out, list[i].exception) ||
            buffer_add(out, "}", 1))
            return -1;
    }
    return buffer_add(out, "]", 1);
}

int fleet_json(struct buffer *out, struct slot *const *slots, const int *pids, int n, uint64_t now)
{
    if (buffer_printf(out, "{\"now\":%llu,", (unsigned long long)now) || workers(out, slots, pids, n) ||
        queues(out, slots, n) || jobs(out, slots, n) || failures(out, slots, n, now) ||
        buffer_add(out, "}", 1))
        return -1;
    return 0;
}
