#include "supervisor/metrics_text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/utf8.h"
#include "supervisor/fleet_view.h"

/* Appends value as a label value, escaped. */
static int label_value(struct buffer *out, const char *value)
{
    const unsigned char *s = (const unsigned char *)value;
    size_t n = strlen(value);
    for (size_t i = 0; i < n;) {
        const char *esc = s[i] == '\\' ? "\\\\" : s[i] == '"' ? "\\\"" : s[i] == '\n' ? "\\n" : NULL;
        size_t len = esc ? 1 : utf8_sequence_length(s + i, n - i);
        int r = esc ? buffer_add(out, esc, strlen(esc))
              : len ? buffer_add(out, s + i, len) : buffer_add(out, "?", 1);
        if (r)
            return -1;
        i += len ? len : 1;
    }
    return 0;
}

static int labels(struct buffer *out, const struct fleet_sum *s, const char *le)
{
    if (buffer_add(out, "{queue=\"", 8) || label_value(out, s->queue) ||
        buffer_add(out, "\",job=\"", 7) || label_value(out, s->job))
        return -1;
    if (le && buffer_printf(out, "\",le=\"%s", le))
        return -1;
    return buffer_add(out, "\"}", 2);
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
    return buffer_printf(out, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name,
                     (unsigned long long)value);
}

/* The queues' sizes (fleet_sizes): none when the worker that reads them is held
 * up longer than FLEET_SIZES_FRESH. */
static int queue_sizes(struct buffer *out, struct slot *const *slots, int n)
{
    struct counts_queue_size sizes[COUNTS_QUEUES];
    uint32_t count = fleet_sizes(slots, n, sizes);
    const char *name = "luaworker_queue_size";
    if (buffer_printf(out, "# HELP %s The jobs of each queue the workers work, as Laravel's size() "
                      "counts them, by state: pending, delayed, reserved (they add up to it).\n"
                      "# TYPE %s gauge\n", name, name))
        return -1;
    static const char *const states[3] = {"pending", "delayed", "reserved"};
    for (uint32_t i = 0; i < count; i++) {
        uint64_t parts[3] = {sizes[i].pending, sizes[i].delayed, sizes[i].reserved};
        for (int p = 0; p < 3; p++)
            if (buffer_printf(out, "%s{queue=\"", name) || label_value(out, sizes[i].queue) ||
                buffer_printf(out, "\",state=\"%s\"} %llu\n", states[p], (unsigned long long)parts[p]))
                return -1;
    }
    return 0;
}

int metrics_text(struct buffer *out, struct slot *const *slots, int n, int running)
{
    size_t count = 0;
    struct fleet_sum *sums = fleet_sums(slots, n, &count);
    if (!sums)
        return -1;
    int r = 0;
    for (int o = 0; o < 3 && !r; o++) {
        r = buffer_printf(out, "# HELP %s %s\n# TYPE %s counter\n", OUTCOMES[o].name, OUTCOMES[o].help,
                      OUTCOMES[o].name);
        for (size_t i = 0; i < count && !r; i++)
            r = buffer_add(out, OUTCOMES[o].name, strlen(OUTCOMES[o].name)) || labels(out, &sums[i], NULL) ||
                buffer_printf(out, " %llu\n", (unsigned long long)sums[i].outcomes[o]);
    }
    const char *h = "luaworker_job_duration_seconds";
    if (!r)
        r = buffer_printf(out, "# HELP %s The time each attempt of a job's code took.\n# TYPE %s histogram\n",
                      h, h);
    for (size_t i = 0; i < count && !r; i++) {
        uint64_t cumulative = 0;
        for (int b = 0; b < COUNTS_BUCKETS && !r; b++) {
            char le[32];
            cumulative += sums[i].buckets[b];
            snprintf(le, sizeof le, "%g", counts_bounds[b]);
            r = buffer_printf(out, "%s_bucket", h) || labels(out, &sums[i], le) ||
                buffer_printf(out, " %llu\n", (unsigned long long)cumulative);
        }
        if (!r)
            r = buffer_printf(out, "%s_bucket", h) || labels(out, &sums[i], "+Inf") ||
                buffer_printf(out, " %llu\n%s_sum", (unsigned long long)sums[i].attempts, h) ||
                labels(out, &sums[i], NULL) ||
                buffer_printf(out, " %.6f\n%s_count", (double)sums[i].duration_us / 1e6, h) ||
                labels(out, &sums[i], NULL) ||
                buffer_printf(out, " %llu\n", (unsigned long long)sums[i].attempts);
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
