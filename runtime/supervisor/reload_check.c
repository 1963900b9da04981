#include "supervisor/reload_check.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "supervisor/child_exec.h"

static void finish(struct reload_check *c)
{
    ev_child_stop(c->loop, &c->child);
    ev_timer_stop(c->loop, &c->deadline);
    c->pid = 0;
}

static void on_check_exit(struct ev_loop *loop, ev_child *w, int revents)
{
    (void)loop;
    (void)revents;
    struct reload_check *c = w->data;
    int status = w->rstatus;
    int timed_out = !ev_is_active(&c->deadline);
    finish(c);
    char why[64] = "";
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        c->fn(c->data, 1, NULL);
        return;
    }
    if (timed_out)
        snprintf(why, sizeof why, "it did not end within %.0f s", RELOAD_CHECK_TIMEOUT);
    else if (WIFEXITED(status))
        snprintf(why, sizeof why, "exit status %d", WEXITSTATUS(status));
    else
        snprintf(why, sizeof why, "ended by signal %d", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    c->fn(c->data, 0, why);
}

static void on_deadline(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    struct reload_check *c = t->data;
    ev_timer_stop(c->loop, t);
    if (c->pid)
        kill(c->pid, SIGKILL);
}

/* In the check's child, before its exec: it is the check, not a worker. */
static void mark_check(void *data)
{
    (void)data;
    setenv(HANDLER_CHECK_ENV, "1", 1);
}

int reload_check_start(struct reload_check *c, struct ev_loop *loop, int exe_fd, char **argv,
                       reload_check_fn *fn, void *data)
{
    if (c->pid)
        return 0;
    c->loop = loop;
    c->fn = fn;
    c->data = data;
    pid_t pid = child_exec(exe_fd, argv, SIGKILL, 70, mark_check, NULL, "the check of the handlers");
    if (pid < 0)
        return -1;
    c->pid = pid;
    ev_child_init(&c->child, on_check_exit, pid, 0);
    c->child.data = c;
    ev_child_start(loop, &c->child);
    ev_timer_init(&c->deadline, on_deadline, RELOAD_CHECK_TIMEOUT, 0.);
    c->deadline.data = c;
    ev_timer_start(loop, &c->deadline);
    return 0;
}

int reload_check_running(const struct reload_check *c)
{
    return c->pid != 0;
}

void reload_check_stop(struct reload_check *c)
{
    if (!c->pid)
        return;
    kill(c->pid, SIGKILL);
    finish(c);
}
