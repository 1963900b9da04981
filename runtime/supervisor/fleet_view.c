#include "supervisor/fleet_view.h"

#include <stdlib.h>
#include <string.h>

static int by_names(const void *a, const void *b)
{
    const struct fleet_sum *x = a, *y = b;
    int c = strcmp(x->queue, y->queue);
    return c ? c : strcmp(x->job, y->job);
}

struct fleet_sum *fleet_sums(struct slot *const *slots, int n, size_t *count)
{
    size_t cap = 0, k = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < COUNTS_SERIES; j++)
            if (atomic_load_explicit(&slots[i]->counts.series[j].used, memory_order_acquire))
                cap++;
    struct fleet_sum *all = calloc(cap ? cap : 1, sizeof *all);
    if (!all)
        return NULL;
    for (int i = 0; i < n && k < cap; i++)
        for (int j = 0; j < COUNTS_SERIES && k < cap; j++) {
            struct counts_series *c = &slots[i]->counts.series[j];
            if (!atomic_load_explicit(&c->used, memory_order_acquire))
                continue;
            struct fleet_sum *s = &all[k++];
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
            struct fleet_sum *m = &all[merged - 1];
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

uint32_t fleet_sizes(struct slot *const *slots, int n, struct counts_queue_size *out)
{
    struct counts_queue_size these[COUNTS_QUEUES];
    uint32_t found = 0;
    uint64_t best_at = 0, at = 0;
    for (int i = 0; i < n; i++) {
        uint32_t k = counts_read_sizes(&slots[i]->counts, these, &at);
        if (k && at > best_at) {
            memcpy(out, these, k * sizeof *these);
            found = k;
            best_at = at;
        }
    }
    if (found && slot_now_ns() - best_at > (uint64_t)FLEET_SIZES_FRESH * 1000000000u)
        found = 0;
    return found;
}

static int newest_first(const void *a, const void *b)
{
    const struct counts_failure *x = a, *y = b;
    return x->at < y->at ? 1 : x->at > y->at ? -1 : 0;
}

uint32_t fleet_failures(struct slot *const *slots, int n, struct counts_failure *out, uint32_t max)
{
    size_t cap = (size_t)n * COUNTS_FAILURES;
    struct counts_failure *all = calloc(cap ? cap : 1, sizeof *all);
    if (!all)
        return 0;
    size_t k = 0;
    for (int i = 0; i < n; i++)
        k += counts_read_failures(&slots[i]->counts, all + k);
    if (k > 1)
        qsort(all, k, sizeof *all, newest_first);
    uint32_t taken = k < max ? (uint32_t)k : max;
    memcpy(out, all, taken * sizeof *out);
    free(all);
    return taken;
}

uint64_t fleet_failed_last_hour(struct slot *const *slots, int n, uint64_t now)
{
    uint64_t total = 0;
    for (int i = 0; i < n; i++)
        total += counts_failed_last_hour(&slots[i]->counts, now);
    return total;
}
