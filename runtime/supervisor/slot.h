/* slot: everything a supervisor and one of its worker processes tell each other, in
 * one struct in shared memory (a memfd the worker finds through LUAWORKER_SLOT). The
 * jobs a worker holds are recorded in Redis (scripts/pop.lua, give_back.lua), so the
 * slot carries only what the supervisor needs: whether the worker got ready, which
 * job it runs and since when (for timeouts, read every SUPERVISOR_POLL seconds, so
 * a job costs no system call), why it stopped, and, for the worker that replaces
 * it, its id and the job it ran when it was killed or crashed. Uses nothing else.
 *
 * Who writes what, and when:
 *   supervisor, before it starts a worker: predecessor, predecessor_job,
 *     predecessor_timeout, predecessor_death, replacing; it zeroes the worker's part.
 *     Once, at start: reports_sizes.
 *   worker: id, once, before it takes a job; ready once its handlers are loaded; the
 *     job fields (a sequence lock) each time a job in flight gets or leaves the CPU;
 *     in_flight; reason just before it exits.
 *   both: counts (slot_counts says who writes which), never zeroed. */
#ifndef LUAWORKER_SLOT_H
#define LUAWORKER_SLOT_H

#include <stdatomic.h>
#include <stdint.h>

#include "supervisor/slot_counts.h"

/* The worker's environment variable: the file descriptor of its slot's memfd. */
#define SLOT_ENV "LUAWORKER_SLOT"
#define SLOT_ID_MAX 128

struct slot {
    /* written by the supervisor before the worker starts */
    char predecessor[SLOT_ID_MAX];   /* the worker this one replaces, when that one ended
                                      * without giving back its jobs; "" otherwise */
    uint64_t predecessor_job;        /* the number of the job that had the CPU when it ended:
                                      * killed for running past its timeout, or a
                                      * crash; 0 when none */
    uint32_t predecessor_timeout;    /* that job's timeout in seconds, when it was
                                      * killed for it; 0 for a crash */
    char predecessor_death[64];      /* how it ended ("killed by signal 11 ..."),
                                      * for a crash */
    uint32_t replacing;              /* 1 when the fleet was running before this worker
                                      * started (it replaces one), 0 at the fleet's start */
    uint32_t reports_sizes;          /* 1 when its workers report their queues' sizes
                                      * (--metrics: one slot of the fleet does) */
    /* the metrics' counts (slot_counts): kept across the slot's workers */
    struct slot_counts counts;
    /* written by the worker */
    char id[SLOT_ID_MAX];            /* its id, as its jobs are recorded in Redis */
    _Atomic uint32_t ready;          /* its handlers are loaded */
    char reason[32];                 /* why it stopped ("max_jobs"...) */
    _Atomic uint32_t seq;            /* the sequence lock: odd while the fields below change */
    _Atomic uint64_t job;            /* the number of the job that has the CPU, 0 when none */
    _Atomic uint32_t timeout;        /* its timeout in seconds, 0 for none */
    _Atomic uint64_t started_ns;     /* CLOCK_MONOTONIC at its start, moved on by the
                                      * time Redis outages held it up */
    _Atomic uint32_t in_flight;      /* its jobs in flight, for the metrics */
};

/* A consistent copy of a slot's job fields. */
struct slot_job {
    uint64_t job;
    uint32_t timeout;
    uint64_t started_ns;
};

/* Supervisor side: a zeroed slot in a new memfd, whose descriptor is stored in *fd.
 * Returns NULL (errno set) when it cannot be made. */
struct slot *slot_create(int *fd);

/* Worker side: maps the slot in memfd fd and closes fd. Returns NULL when it cannot. */
struct slot *slot_map(int fd);

void slot_unmap(struct slot *s);

/* Supervisor side: zeroes the worker's part, before a worker starts. */
void slot_clear_worker(struct slot *s);

/* Worker side: job (timeout in seconds, 0 for none; started at started_ns, moved on
 * by the time outages held it up) gets the CPU; no job has it. */
void slot_job_start(struct slot *s, uint64_t job, uint32_t timeout, uint64_t started_ns);
void slot_job_end(struct slot *s);

/* Supervisor side: copies the job fields. Returns 0, or -1 when the worker was
 * writing them all along (or died while writing them). */
int slot_read_job(const struct slot *s, struct slot_job *out);

/* Supervisor side: whether job j has run past its timeout at now (slot_now_ns). A
 * job that started after now (the worker runs on another CPU) has not. */
int slot_job_overdue(const struct slot_job *j, uint64_t now);

/* CLOCK_MONOTONIC in nanoseconds, the clock of started_ns. */
uint64_t slot_now_ns(void);

#endif
