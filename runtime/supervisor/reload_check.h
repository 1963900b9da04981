/* reload_check: before a reload, a process checks the handlers as a worker starting
 * would (this binary again, with the workers' command line and HANDLER_CHECK_ENV
 * set: it loads init.lua and every handler in the handlers' environment, checks
 * each one's shape and exits, 0 when each can handle jobs, saying what cannot on
 * stderr). The supervisor reloads only after it passed: a handler that cannot
 * handle jobs never reaches a worker by a reload. Uses libev. */
#ifndef LUAWORKER_RELOAD_CHECK_H
#define LUAWORKER_RELOAD_CHECK_H

#include <ev.h>
#include <sys/types.h>

/* Set (to "1") in the check process's environment. */
#define HANDLER_CHECK_ENV "LUAWORKER_HANDLER_CHECK"

/* The most seconds a check may take (a handler that waits as it loads): past it,
 * the check process is killed and the check fails. */
#define RELOAD_CHECK_TIMEOUT 30.

/* Called once per check: passed, or why not ("exit status 2", "killed after 30
 * s"...; the process said what on stderr). */
typedef void reload_check_fn(void *data, int passed, const char *why);

struct reload_check {
    struct ev_loop *loop;
    pid_t pid;               /* the check process, 0 when none runs */
    ev_child child;
    ev_timer deadline;
    reload_check_fn *fn;
    void *data;
};

/* Starts a check of exe_fd's binary run with argv; fn is called when it ends.
 * Returns 0, or -1 when no process could be started (errno says why). A check
 * already running is let run: the caller asks again after it ended. */
int reload_check_start(struct reload_check *c, struct ev_loop *loop, int exe_fd, char **argv,
                       reload_check_fn *fn, void *data);

/* Whether a check runs. */
int reload_check_running(const struct reload_check *c);

/* Kills a check that runs, without calling its fn. */
void reload_check_stop(struct reload_check *c);

#endif
