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
 *                         'B' jobs reserved by one pop: the queue, then each job's
 *                         payload and reserved copy, as parts
 *                         'S' job started: timeout seconds (4 bytes, 0 = none) and
 *                         the job's 0-based index in the last 'B' (4 bytes); the
 *                         job started before it, if any, has ended
 *                         'E' the started job ended (empty body)
 *                         'X' exiting: body is the stop reason ("max_jobs"...)
 *   supervisor -> worker  'H' what the previous process left (sent first, before
 *                         the worker's loop starts): records of a kind byte, a
 *                         timeout (4 bytes), then queue, payload and reserved copy
 *                         as parts. Kinds: 'T' the job it was killed for running
 *                         past its timeout; 'D' a job that ended, whose delete may
 *                         not have reached Redis; 'G' a job reserved but not started
 *                         (to give back to the queue)
 *                         'N' nothing
 * A process that exits with status 0 or 12 has settled its jobs itself. */
#ifndef LUAWORKER_SUPERVISOR_H
#define LUAWORKER_SUPERVISOR_H

#include <stddef.h>
#include <stdint.h>

#define SUPERVISOR_FD_ENV "LUAWORKER_SUPERVISOR_FD"

/* Runs the supervisor for argv (the NULL-terminated command line to give each worker) with
 * `processes` workers until it stops; with watch_dir, reloads the workers when a
 * handler file there changes and every one compiles (handler_watch). Returns the
 * exit status. */
int supervisor_run(char **argv, int processes, const char *watch_dir);

/* Worker side: writes one frame (type, then body parts concatenated) to fd,
 * blocking until it is written. Returns 0 or -1. */
int supervisor_send(int fd, char type, const char *const *parts, const size_t *lens, int nparts);

/* Worker side: writes len bytes of ready frames to fd, blocking until written.
 * Returns 0 or -1. */
int supervisor_write(int fd, const char *buf, size_t len);

/* Worker side: reads one frame from fd (blocking). On success returns 0 and sets
 * *type and *body (malloc'd, caller frees; *len its length). Returns -1 on EOF or
 * error. */
int supervisor_receive(int fd, char *type, char **body, size_t *len);

#endif
