/* supervisor: `luaworker work` as a process supervisor. LuaJIT cannot interrupt
 * compiled code, so a job is stopped by ending its process: the supervisor runs
 * N worker processes (this binary again, with LUAWORKER_SUPERVISOR_FD naming its
 * end of a socket pair), replaces those that end, forwards TERM/INT/QUIT (stop),
 * USR2/CONT (pause, resume) and HUP (reload: each worker ends after its current
 * job and a fresh one starts), and SIGKILLs a worker whose job runs past its
 * timeout, handing that job to the replacement, which applies Laravel's timeout
 * rules to it. It runs no handler and talks to no Redis. Uses libev and
 * handler_watch.
 *
 * The messages on the socket pair are frames: a 4-byte length (host order) of
 * what follows, a type byte, then the body. A part is a 4-byte length and its bytes.
 *   worker -> supervisor  'R' ready: handlers loaded (a worker that ends before
 *                         this failed to start, and is started again after a delay)
 *                         'B' jobs reserved by one pop: a batch number (4 bytes),
 *                         the queue, then each job's payload and reserved copy, as
 *                         parts
 *                         'G' a batch number (4 bytes): the worker gave back the
 *                         jobs of that batch it had not started
 *                         'X' exiting: body is the stop reason ("max_jobs"...)
 *   supervisor -> worker  'H' what the previous process left (sent first, before
 *                         the worker's loop starts): records of a kind byte, a
 *                         timeout (4 bytes), then queue, payload and reserved copy
 *                         as parts. Kinds: 'T' the job it was killed for running
 *                         past its timeout; 'D' a job that ended, whose delete may
 *                         not have reached Redis; 'G' a job reserved but not started
 *                         (to give back to the queue)
 *                         'N' nothing
 * Which job of the last batch runs, and since when, is in a supervisor_slot, so
 * that starting and ending a job costs no system call. A process that exits with
 * status 0 or 12 has settled its jobs itself. */
#ifndef LUAWORKER_SUPERVISOR_H
#define LUAWORKER_SUPERVISOR_H

#include <stddef.h>
#include <stdatomic.h>
#include <stdint.h>

/* "<socket fd>:<slot fd>", the worker's end of the socket pair and a memfd holding
 * its supervisor_slot. */
#define SUPERVISOR_FD_ENV "LUAWORKER_SUPERVISOR_FD"

/* A worker's job state, in memory it shares with its supervisor: written by the
 * worker when a job starts and ends (a sequence lock: seq is odd while it writes),
 * read by the supervisor every SUPERVISOR_POLL seconds. */
struct supervisor_slot {
    _Atomic uint32_t seq;
    _Atomic uint32_t batch;        /* number of the 'B' frame the job is from */
    _Atomic uint32_t index;        /* the job's 0-based index in it */
    _Atomic uint32_t running;      /* 1 from the job's start to its end */
    _Atomic uint32_t timeout;      /* seconds, 0 for none */
    _Atomic uint64_t started_ns;   /* CLOCK_MONOTONIC at the start */
};

#define SUPERVISOR_POLL 0.1

/* Worker side: maps the slot in memfd fd. Returns NULL when it cannot. */
struct supervisor_slot *supervisor_slot_map(int fd);

/* Worker side: job index of batch started (running 1, timeout in seconds) or ended
 * (running 0). */
void supervisor_slot_set(struct supervisor_slot *slot, uint32_t batch, uint32_t index,
                         int running, uint32_t timeout);

/* Runs the supervisor for argv (the NULL-terminated command line to give each worker) with
 * `processes` workers until it stops; with watch_dir, reloads the workers when a
 * handler file there changes and every one compiles (handler_watch). Returns the
 * exit status. */
int supervisor_run(char **argv, int processes, const char *watch_dir);

/* Worker side: writes one frame (type, then body parts concatenated) to fd,
 * blocking until it is written. Returns 0 or -1. */
int supervisor_send(int fd, char type, const char *const *parts, const size_t *lens, int nparts);

/* Worker side: reads one frame from fd (blocking). On success returns 0 and sets
 * *type and *body (malloc'd, caller frees; *len its length). Returns -1 on EOF or
 * error. */
int supervisor_receive(int fd, char *type, char **body, size_t *len);

#endif
