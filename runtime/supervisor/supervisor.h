/* supervisor: `luaworker work` as a process supervisor. LuaJIT cannot interrupt
 * compiled code, so a job is stopped by ending its process: the supervisor runs
 * N worker processes (this binary again, each with a slot shared with it), replaces
 * those that end, forwards TERM/INT/QUIT (stop), USR2/CONT (pause, resume: a worker
 * started while paused starts paused) and HUP (reload: each worker ends after its
 * current job and a fresh one starts), and SIGKILLs a worker whose job runs past its
 * timeout. The worker that replaces one that ended without giving back its jobs is
 * told its id and the job it ran (killed for its timeout, or a crash), and gives
 * back at once the jobs it had not started and applies Laravel's rules to that job.
 * The supervisor runs no handler and talks to no Redis; it serves the fleet's
 * metrics (--metrics) from the counts in the slots. Uses libev, slot,
 * handler_watch, reload_check and metrics_server. */
#ifndef LUAWORKER_SUPERVISOR_H
#define LUAWORKER_SUPERVISOR_H

/* Seconds between two reads of the workers' slots, for jobs past their timeout. */
#define SUPERVISOR_POLL 0.1

/* Runs the supervisor for argv (the NULL-terminated command line to give each
 * worker) with `processes` workers until it stops; with watch_dir, reloads the
 * workers when a handler file there changes and every one compiles (handler_watch);
 * with metrics (HOST:PORT), serves the fleet's metrics there (metrics_server).
 * Returns the exit status (2 when the metrics cannot be served there). */
int supervisor_run(char **argv, int processes, const char *watch_dir, const char *metrics);

#endif
