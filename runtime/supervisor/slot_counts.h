/* slot_counts: what a worker slot has counted since its fleet started, for the
 * metrics the supervisor serves (metrics_text): jobs processed, failed and
 * released and the time of each attempt, by queue and job class (a series each);
 * and the fleet's own events in that slot. It lives in the slot (shared memory)
 * beside what slot_clear_worker zeroes, so the counts of a worker survive its
 * replacement (--max-jobs, a timeout, a crash): its successor counts on.
 *
 * Who writes what: the worker in the slot, each series (a single writer: one
 * process, one thread); the supervisor, restarts and timeouts. Readers take any
 * moment's values (each counter is atomic; a series is published, names first,
 * by its used flag). Uses nothing else. */
#ifndef LUAWORKER_SLOT_COUNTS_H
#define LUAWORKER_SLOT_COUNTS_H

#include <stdatomic.h>
#include <stdint.h>

/* Series a slot keeps; past them, jobs count in the last one, whose class is
 * COUNTS_OTHER. */
#define COUNTS_SERIES 128
#define COUNTS_QUEUE 64
#define COUNTS_JOB 192
#define COUNTS_OTHER "(other classes)"

/* The upper bounds of the attempt-duration histogram's buckets, in seconds (the
 * last bucket, +Inf, is the count). */
#define COUNTS_BUCKETS 14
extern const double counts_bounds[COUNTS_BUCKETS];

/* The outcomes a job counts, as Laravel's events say them. */
enum counts_outcome {
    COUNTS_PROCESSED,  /* JobProcessed: its code returned */
    COUNTS_FAILED,     /* JobFailed: failed for good */
    COUNTS_RELEASED,   /* each release, by its code or after an exception */
};

struct counts_series {
    _Atomic uint32_t used;           /* set once queue and job are written */
    char queue[COUNTS_QUEUE];
    char job[COUNTS_JOB];
    _Atomic uint64_t outcomes[3];    /* by enum counts_outcome */
    _Atomic uint64_t attempts;       /* attempts timed (each run of the job's code) */
    _Atomic uint64_t duration_us;    /* their time together, in microseconds */
    _Atomic uint64_t buckets[COUNTS_BUCKETS];  /* attempts up to each bound (not cumulative) */
};

/* Queues whose sizes a slot keeps (the worker's first ones). */
#define COUNTS_QUEUES 16

/* A queue's size as Laravel's size() counts it, in its three parts, and how long
 * its oldest waiting job has waited (seconds; -1 when its payload does not say). */
struct counts_queue_size {
    char queue[COUNTS_QUEUE];
    uint64_t pending, delayed, reserved;
    int64_t oldest_wait;
};

/* The last failures a slot keeps (for the live page), and their exception's first
 * line. */
#define COUNTS_FAILURES 8
#define COUNTS_EXCEPTION 160
struct counts_failure {
    uint64_t at;                     /* Unix seconds */
    char queue[COUNTS_QUEUE];
    char job[COUNTS_JOB];
    char exception[COUNTS_EXCEPTION];
};

struct slot_counts {
    _Atomic uint64_t connection_losses;  /* outages of the worker's connections (worker) */
    _Atomic uint64_t restarts;           /* workers started in this slot after the first
                                          * (supervisor) */
    _Atomic uint64_t timeouts;           /* processes ended for a job's timeout (supervisor) */
    struct counts_series series[COUNTS_SERIES];
    /* the sizes of the worker's queues (worker, when its slot reports them: every
     * second), under a sequence lock (odd while they change) */
    _Atomic uint32_t sizes_seq;
    _Atomic uint64_t sizes_at_ns;        /* CLOCK_MONOTONIC of the last report, 0 for none */
    uint32_t nsizes;
    struct counts_queue_size sizes[COUNTS_QUEUES];
    /* the last failures (worker), a ring under a sequence lock, and failures by
     * minute (Unix minute % 60, with the minute each counts) */
    _Atomic uint32_t failures_seq;
    uint32_t failures_next;          /* the ring's next place; how many were written */
    struct counts_failure failures[COUNTS_FAILURES];
    _Atomic uint64_t failed_in_minute[60];
    _Atomic uint64_t failed_minute[60];
};

/* Worker side: the series of queue and job (names cut to fit), made when new.
 * Never NULL: a full table gives the last series. */
struct counts_series *counts_series_of(struct slot_counts *c, const char *queue, const char *job);

/* Worker side: one outcome more. */
void counts_outcome(struct counts_series *s, enum counts_outcome outcome);

/* Worker side: an attempt that took seconds. */
void counts_attempt(struct counts_series *s, double seconds);

/* Worker side: the sizes of its queues now (at most COUNTS_QUEUES of them), at
 * now_ns (CLOCK_MONOTONIC). */
void counts_report_sizes(struct slot_counts *c, const struct counts_queue_size *sizes, uint32_t n,
                         uint64_t now_ns);

/* Worker side: a job failed for good at (Unix seconds), with its exception's
 * first line. */
void counts_failure(struct slot_counts *c, const char *queue, const char *job, const char *exception,
                    uint64_t at);

/* Supervisor side: a consistent copy of the last failures (up to COUNTS_FAILURES,
 * newest first) into out. Returns how many. */
uint32_t counts_read_failures(const struct slot_counts *c, struct counts_failure *out);

/* Supervisor side: the failures of the 60 minutes up to now (Unix seconds). */
uint64_t counts_failed_last_hour(const struct slot_counts *c, uint64_t now);

/* Supervisor side: a consistent copy of the sizes (up to COUNTS_QUEUES) into out,
 * and when they were reported. Returns how many, 0 when none (or the worker was
 * writing them all along). */
uint32_t counts_read_sizes(const struct slot_counts *c, struct counts_queue_size *out,
                           uint64_t *at_ns);

#endif
