#include "supervisor/metrics_text.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One (queue, job) series summed over the slots. */
struct sum {
    const char *queue, *job;
    uint64_t outcomes[3], attempts, duration_us, buckets[COUNTS_BUCKETS];
};

static int printf_to(struct buffer *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int printf_to(struct buffer *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || buffer_reserve(out, (size_t)n + 1))
        return -1;
    va_start(ap, fmt);
    vsnprintf(out->data + out->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    buffer_commit(out, (size_t)n);
    return 0;
}

/* The length of the UTF-8 sequence at s (at most n bytes), 0 when it is not one. */
static size_t utf8_length(const unsigned char *s, size_t n)
{
    size_t len = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3
               : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
    if (len == 0 || len > n || (len == 2 && s[0] < 0xc2))
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return len;
}

/* Appends value as a label value, escaped. */
static int label_value(struct buffer *out, const char *value)
{
    const unsigned char *s = (const unsigned char *)value;
    size_t n = strlen(value);
    for (size_t i = 0; i < n;) {
        const char *esc = s[i] == '\\' ? "\\\\" : s[i] == '"' ? "\\\"" : s[i] == '\n' ? "\\n" : NULL;
        size_t len = esc ? 1 : utf8_length(s + i, n - i);
        int r = esc ? buffer_add(out, esc, strlen(esc))
              : len ? buffer_add(out, s + i, len) : buffer_add(out, "?", 1);
        if (r)
            return -1;
        i += len ? len : 1;
    }
    return 0;
}

static int labels(struct buffer *out, const struct sum *s, const char *le)
{
    if (buffer_add(out, "{queue=\"", 8) || label_value(out, s->queue) ||
        buffer_add(out, "\",job=\"", 7) || label_value(out, s->job))
        return -1;
    if (le && printf_to(out, "\",le=\"%s", le))
        return -1;
    return buffer_add(out, "\"}", 2);
}

static int by_names(const void *a, const void *b)
{
    const struct sum *x = a, *y = b;
    int c = strcmp(x->queue, y->queue);
    return c ? c : strcmp(x->job, y->job);
}

/* The used series of every slot, summed by (queue, job), sorted: *count of them. */
static struct sum *sums_of(struct slot *const *slots, int n, size_t *count)
{
    size_t cap = 0, k = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < COUNTS_SERIES; j++)
            if (atomic_load_explicit(&slots[i]->counts.series[j].used, memory_order_acquire))
                cap++;
    struct sum *all = calloc(cap ? cap : 1, sizeof *all);
    if (!all)
        return NULL;
    for (int i = 0; i < n && k < cap; i++)
        for (int j = 0; j < COUNTS_SERIES && k < cap; j++) {
            struct counts_series *c = &slots[i]->counts.series[j];
            if (!atomic_load_explicit(&c->used, memory_order_acquire))
                continue;
            struct sum *s = &all[k++];
            s->queue = c->queue;
            s->job = c->job;
            for (int o = 0; o < 3; o++)
                s->outcomes[o] = atomic_load_explicit(&c->outcomes[o], memory_order_relaxed);
            s->attempts = atomic_load_explicit(&c->attempts, memory_order_relaxed);
            s->duration_us = atomic_load_explicit(&c->duration_us, memory_order_relaxed);
            for (int b = 0; b < COUNTS_BUCKETS; b++)
                s->buckets[b] = atomic_load_explicit(&c->buckets[b], memory_order_relaxed);
        }
    if (k > 1)
        qsort(all, k, sizeof *all, by_names);
    size_t merged = 0;
    for (size_t i = 0; i < k; i++) {
        if (merged > 0 && by_names(&all[merged - 1], &all[i]) == 0) {
            struct sum *m = &all[merged - 1];
            for (int o = 0; o < 3; o++)
                m->outcomes[o] += all[i].outcomes[o];
            m->attempts += all[i].attempts;
            m->duration_us += all[i].duration_us;
            for (int b = 0; b < COUNTS_BUCKETS; b++)
                m->buckets[b] += all[i].buckets[b];
        } else {
            all[merged++] = all[i];
        }
    }
    *count = merged;
    return all;
}

static const struct {
    const char *name, *help;
} OUTCOMES[3] = {
    {"luaworker_jobs_processed_total", "Jobs whose code returned (Laravel's JobProcessed)."},
    {"luaworker_jobs_failed_total", "Jobs failed for good (Laravel's JobFailed)."},
    {"luaworker_jobs_released_total", "Releases of jobs back onto their queue, by their code or after an exception."},
};

static int fleet_total(struct buffer *out, const char *name, const char *type, const char *help,
                       uint64_t value)
{
    return printf_to(out, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name,
                     (unsigned long long)value);
}

/* The queues' sizes of the slot that reported them last, within SIZES_FRESH
 * seconds (none when the worker that reads them is held up longer). */
#define SIZES_FRESH 60
static int queue_sizes(struct buffer *out, struct slot *const *slots, int n)
{
    struct counts_queue_size best[COUNTS_QUEUES], these[COUNTS_QUEUES];
    uint32_t nbest = 0;
    uint64_t best_at = 0, at = 0;
    for (int i = 0; i < n; i++) {
        uint32_t k = counts_read_sizes(&slots[i]->counts, these, &at);
        if (k && at > best_at) {
            memcpy(best, these, k * sizeof *these);
            nbest = k;
            best_at = at;
        }
    }
    if (nbest && slot_now_ns() - best_at > (uint64_t)SIZES_FRESH * 1000000000u)
        nbest = 0;
    const char *name = "luaworker_queue_size";
    if (printf_to(out, "# HELP %s The jobs of each queue the workers work, as Laravel's size() "
                  "counts them, by state: pending, delayed, reserved (they add up to it).\n"
                  "# TYPE %s gauge\n", name, name))
        return -1;
    static const char *const states[3] = {"pending", "delayed", "reserved"};
    for (uint32_t i = 0; i < nbest; i++) {
        uint64_t parts[3] = {best[i].pending, best[i].delayed, best[i].reserved};
        for (int p = 0; p < 3; p++)
            if (printf_to(out, "%s{queue=\"", name) || label_value(out, best[i].queue) ||
                printf_to(out, "\",state=\"%s\"} %llu\n", states[p], (unsigned long long)parts[p]))
                return -1;
    }
    return 0;
}

int metrics_text(struct buffer *out, struct slot *const *slots, int n, int running)
{
    size_t count = 0;
    struct sum *sums = sums_of(slots, n, &count);
    if (!sums)
        return -1;
    int r = 0;
    for (int o = 0; o < 3 && !r; o++) {
        r = printf_to(out, "# HELP %s %s\n# TYPE %s counter\n", OUTCOMES[o].name, OUTCOMES[o].help,
                      OUTCOMES[o].name);
        for (size_t i = 0; i < count && !r; i++)
            r = buffer_add(out, OUTCOMES[o].name, strlen(OUTCOMES[o].name)) || labels(out, &sums[i], NULL) ||
                printf_to(out, " %llu\n", (unsigned long long)sums[i].outcomes[o]);
    }
    const char *h = "luaworker_job_duration_seconds";
    if (!r)
        r = printf_to(out, "# HELP %s The time each attempt of a job's code took.\n# TYPE %s histogram\n",
                      h, h);
    for (size_t i = 0; i < count && !r; i++) {
        uint64_t cumulative = 0;
        for (int b = 0; b < COUNTS_BUCKETS && !r; b++) {
            char le[32];
            cumulative += sums[i].buckets[b];
            snprintf(le, sizeof le, "%g", counts_bounds[b]);
            r = printf_to(out, "%s_bucket", h) || labels(out, &sums[i], le) ||
                printf_to(out, " %llu\n", (unsigned long long)cumulative);
        }
        if (!r)
            r = printf_to(out, "%s_bucket", h) || labels(out, &sums[i], "+Inf") ||
                printf_to(out, " %llu\n%s_sum", (unsigned long long)sums[i].attempts, h) ||
                labels(out, &sums[i], NULL) ||
                printf_to(out, " %.6f\n%s_count", (double)sums[i].duration_us / 1e6, h) ||
                labels(out, &sums[i], NULL) ||
                printf_to(out, " %llu\n", (unsigned long long)sums[i].attempts);
    }
    free(sums);
    uint64_t in_flight = 0, restarts = 0, timeouts = 0, losses = 0;
    for (int i = 0; i < n; i++) {
        in_flight += atomic_load_explicit(&slots[i]->in_flight, memory_order_relaxed);
        restarts += atomic_load_explicit(&slots[i]->counts.restarts, memory_order_relaxed);
        timeouts += atomic_load_explicit(&slots[i]->counts.timeouts, memory_order_relaxed);
        losses += atomic_load_explicit(&slots[i]->counts.connection_losses, memory_order_relaxed);
    }
    if (!r)
        r = fleet_total(out, "luaworker_jobs_in_flight", "gauge",
                        "Jobs running now, over the fleet's worker processes.", in_flight) ||
            fleet_total(out, "luaworker_workers", "gauge", "Worker processes running now.",
                        (uint64_t)running) ||
            fleet_total(out, "luaworker_worker_restarts_total", "counter",
                        "Worker processes started in place of one that ended (--max-jobs, a timeout, a crash, a reload).",
                        restarts) ||
            fleet_total(out, "luaworker_job_timeouts_total", "counter",
                        "Worker processes ended for a job that ran past its timeout.", timeouts) ||
            fleet_total(out, "luaworker_connection_losses_total", "counter",
                        "Outages of the workers' connections to Redis.", losses) ||
            queue_sizes(out, slots, n);
    return r ? -1 : 0;
}
