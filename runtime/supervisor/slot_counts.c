#include "supervisor/slot_counts.h"

#include <stdio.h>
#include <string.h>

const double counts_bounds[COUNTS_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                              1, 2.5, 5, 10, 30, 60, 300};

/* Writes name into a field of size bytes, cut to fit, NUL-terminated. */
static void set_name(char *field, size_t size, const char *name)
{
    snprintf(field, size, "%s", name);
}

struct counts_series *counts_series_of(struct slot_counts *c, const char *queue, const char *job)
{
    char q[COUNTS_QUEUE], j[COUNTS_JOB];
    set_name(q, sizeof q, queue);
    set_name(j, sizeof j, job);
    for (int i = 0; i < COUNTS_SERIES - 1; i++) {
        struct counts_series *s = &c->series[i];
        if (!atomic_load_explicit(&s->used, memory_order_acquire)) {
            memcpy(s->queue, q, sizeof q);
            memcpy(s->job, j, sizeof j);
            atomic_store_explicit(&s->used, 1, memory_order_release);
            return s;
        }
        if (strcmp(s->queue, q) == 0 && strcmp(s->job, j) == 0)
            return s;
    }
    struct counts_series *other = &c->series[COUNTS_SERIES - 1];
    if (!atomic_load_explicit(&other->used, memory_order_acquire)) {
        set_name(other->queue, sizeof other->queue, "");
        set_name(other->job, sizeof other->job, COUNTS_OTHER);
        atomic_store_explicit(&other->used, 1, memory_order_release);
    }
    return other;
}

void counts_report_sizes(struct slot_counts *c, const struct counts_queue_size *sizes, uint32_t n,
                         uint64_t now_ns)
{
    if (n > COUNTS_QUEUES)
        n = COUNTS_QUEUES;
    uint32_t seq = atomic_load_explicit(&c->sizes_seq, memory_order_relaxed);
    atomic_store_explicit(&c->sizes_seq, seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    c->nsizes = n;
    memcpy(c->sizes, sizes, n * sizeof *sizes);
    atomic_store_explicit(&c->sizes_at_ns, now_ns, memory_order_relaxed);
    atomic_store_explicit(&c->sizes_seq, seq + 2, memory_order_release);
}

uint32_t counts_read_sizes(const struct slot_counts *c, struct counts_queue_size *out,
                           uint64_t *at_ns)
{
    for (int tries = 0; tries < 100; tries++) {
        uint32_t before = atomic_load_explicit(&c->sizes_seq, memory_order_acquire);
        if (before & 1)
            continue;
        uint32_t n = c->nsizes;
        if (n > COUNTS_QUEUES)
            n = COUNTS_QUEUES;
        memcpy(out, c->sizes, n * sizeof *out);
        *at_ns = atomic_load_explicit(&c->sizes_at_ns, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&c->sizes_seq, memory_order_relaxed) == before)
            return n;
    }
    return 0;
}

void counts_failure(struct slot_counts *c, const char *queue, const char *job, const char *exception,
                    uint64_t at)
{
    uint32_t seq = atomic_load_explicit(&c->failures_seq, memory_order_relaxed);
    atomic_store_explicit(&c->failures_seq, seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    struct counts_failure *f = &c->failures[c->failures_next % COUNTS_FAILURES];
    f->at = at;
    set_name(f->queue, sizeof f->queue, queue);
    set_name(f->job, sizeof f->job, job);
    set_name(f->exception, sizeof f->exception, exception);
    c->failures_next++;
    atomic_store_explicit(&c->failures_seq, seq + 2, memory_order_release);
    uint64_t minute = at / 60;
    int i = (int)(minute % 60);
    if (atomic_load_explicit(&c->failed_minute[i], memory_order_relaxed) != minute) {
        atomic_store_explicit(&c->failed_in_minute[i], 0, memory_order_relaxed);
        atomic_store_explicit(&c->failed_minute[i], minute, memory_order_relaxed);
    }
    atomic_fetch_add_explicit(&c->failed_in_minute[i], 1, memory_order_relaxed);
}

uint32_t counts_read_failures(const struct slot_counts *c, struct counts_failure *out)
{
    for (int tries = 0; tries < 100; tries++) {
        uint32_t before = atomic_load_explicit(&c->failures_seq, memory_order_acquire);
        if (before & 1)
            continue;
        uint32_t next = c->failures_next, n = next < COUNTS_FAILURES ? next : COUNTS_FAILURES;
        for (uint32_t k = 0; k < n; k++)
            out[k] = c->failures[(next - 1 - k) % COUNTS_FAILURES];
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&c->failures_seq, memory_order_relaxed) == before)
            return n;
    }
    return 0;
}

uint64_t counts_failed_last_hour(const struct slot_counts *c, uint64_t now)
{
    uint64_t minute = now / 60, total = 0;
    for (int i = 0; i < 60; i++) {
        uint64_t m = atomic_load_explicit(&c->failed_minute[i], memory_order_relaxed);
        if (m + 60 > minute && m <= minute)
            total += atomic_load_explicit(&c->failed_in_minute[i], memory_order_relaxed);
    }
    return total;
}

void counts_outcome(struct counts_series *s, enum counts_outcome outcome)
{
    atomic_fetch_add_explicit(&s->outcomes[outcome], 1, memory_order_relaxed);
}

void counts_attempt(struct counts_series *s, double seconds)
{
    if (!(seconds >= 0))
        seconds = 0;
    int b = 0;
    while (b < COUNTS_BUCKETS - 1 && seconds > counts_bounds[b])
        b++;
    if (seconds > counts_bounds[COUNTS_BUCKETS - 1])
        b = COUNTS_BUCKETS;  /* only in +Inf: the count */
    if (b < COUNTS_BUCKETS)
        atomic_fetch_add_explicit(&s->buckets[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->attempts, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->duration_us, (uint64_t)(seconds * 1e6 + 0.5), memory_order_relaxed);
}
