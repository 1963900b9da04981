#include "supervisor/supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>

#include "supervisor/handler_watch.h"
#include "supervisor/reload_check.h"
#include "supervisor/child_exec.h"
#include "supervisor/metrics_server.h"
#include "supervisor/metrics_text.h"
#include "supervisor/fleet_json.h"
#include "supervisor/live_page.h"
#include "loop/signals.h"
#include "loop/system.h"
#include "supervisor/slot.h"

/* A worker that ends before it reported ready failed to start; the next start
 * then waits, 1 s doubling up to RESPAWN_MAX seconds. So does the start after a
 * second crash in a row (a worker that dies within RESPAWN_MAX s of its start, but
 * not by SIGKILL); the first is replaced at once. */
#define RESPAWN_MAX 30.0

struct supervisor;

struct worker {
    struct supervisor *sup;
    int index;               /* 1-based, for messages */
    pid_t pid;               /* 0 while not running */
    ev_child child;
    ev_timer respawn;        /* delays a start after failures */
    double started;          /* ev_now() of the start */
    double backoff;          /* seconds before the next start after a failed one */
    int crashes;             /* crashes in a row, each within RESPAWN_MAX s of its start */
    struct slot *slot;       /* shared with the process */
    int slot_fd;
    int timed_out;           /* killed for its job's timeout */
    struct slot_job killed;  /* that job */
    int done;                /* ended and is not to be replaced */
    int forked;              /* how many processes it started in this slot */
};

struct supervisor {
    struct ev_loop *loop;
    char **argv;
    int exe_fd;              /* this binary, opened at start: each worker runs it */
    int nworkers;
    struct worker *workers;
    ev_signal signals[SIGNALS_COUNT];
    ev_timer poll;           /* reads the slots, for jobs past their timeout */
    ev_idle starting;        /* starts the workers, a few per loop iteration */
    int started;             /* how many it started */
    int paused;              /* USR2 came and CONT has not: new workers start paused */
    struct handler_watch *watch;
    struct reload_check check;  /* the handlers' check before a reload */
    struct metrics_server *metrics;  /* --metrics's endpoint, or NULL */
    struct slot **slots;        /* the workers' slots, for the metrics */
    int *pids;                  /* their pids, for the live page */
    char changed[512];          /* the files whose change the check is for */
    int recheck;                /* they changed again while it ran */
    int stopping;
    int exit_code;
};

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One line on stderr, in one write: the workers share the stream. */
static void say(const char *fmt, ...)
{
    char line[1024];
    time_t now = system_unix_time();
    size_t n = strftime(line, sizeof line, "[%Y-%m-%d %H:%M:%S] ", localtime(&now));
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
    va_end(ap);
    if (m > 0)
        n += (size_t)m < sizeof line - n - 1 ? (size_t)m : sizeof line - n - 2;
    line[n++] = '\n';
    fwrite(line, 1, n, stderr);
    fflush(stderr);
}

static int all_done(const struct supervisor *s)
{
    for (int i = 0; i < s->nworkers; i++)
        if (s->workers[i].pid || !s->workers[i].done)
            return 0;
    return 1;
}

static void spawn(struct worker *w);

static void on_respawn(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    spawn(t->data);
}

/* Every SUPERVISOR_POLL seconds: ends the process of each job past its timeout (the
 * time it waited for Redis not counted). */
static void on_poll(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    struct supervisor *s = t->data;
    for (int i = 0; i < s->nworkers; i++) {
        struct worker *w = &s->workers[i];
        struct slot_job j;
        if (!w->pid || w->timed_out || slot_read_job(w->slot, &j) ||
            !slot_job_overdue(&j, slot_now_ns()))
            continue;
        say("worker %d (pid %d): job timed out after %us; ending the process", w->index,
            (int)w->pid, j.timeout);
        w->timed_out = 1;
        w->killed = j;
        atomic_fetch_add_explicit(&w->slot->counts.timeouts, 1, memory_order_relaxed);
        kill(w->pid, SIGKILL);
    }
}

/* What a worker's stop reason means for the others. */
static int reason_stops_all(const char *reason)
{
    return strcmp(reason, "restart_signal") == 0 || strcmp(reason, "interrupted") == 0;
}

static void stop_all(struct supervisor *s, int sig);

/* How a process ended, for messages: "killed by signal 11 (Segmentation fault)". */
static void describe_end(int status, char *out, size_t outlen)
{
    if (WIFSIGNALED(status))
        snprintf(out, outlen, "killed by signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    else
        snprintf(out, outlen, "exited with status %d", WEXITSTATUS(status));
}

/* Tells the next worker of w's slot whom it replaces: the worker that just ended
 * without giving back its jobs, and the job that had the CPU (killed for its
 * timeout; or a crash: how it ended, which concerns every job it had in flight), or
 * nobody. */
static void name_predecessor(struct worker *w, int clean, int status)
{
    struct slot *sl = w->slot;
    struct slot_job running;
    sl->predecessor[0] = '\0';
    sl->predecessor_job = 0;
    sl->predecessor_timeout = 0;
    sl->predecessor_death[0] = '\0';
    if (clean || !sl->id[0])
        return;
    memcpy(sl->predecessor, sl->id, sizeof sl->predecessor);
    sl->predecessor[sizeof sl->predecessor - 1] = '\0';
    if (w->timed_out) {
        sl->predecessor_job = w->killed.job;
        sl->predecessor_timeout = w->killed.timeout;
    } else {
        if (slot_read_job(sl, &running) == 0)
            sl->predecessor_job = running.job;
        describe_end(status, sl->predecessor_death, sizeof sl->predecessor_death);
    }
}

static void on_child(struct ev_loop *loop, ev_child *c, int revents)
{
    (void)revents;
    struct worker *w = c->data;
    struct supervisor *s = w->sup;
    int status = c->rstatus;
    ev_child_stop(loop, c);
    pid_t pid = w->pid;
    w->pid = 0;

    char reason[sizeof w->slot->reason];
    memcpy(reason, w->slot->reason, sizeof reason);
    reason[sizeof reason - 1] = '\0';
    /* a worker that stops says why first: an exit without a reason (os.exit in a
     * handler) is a crash, whatever its status; status 1 is a run meant to end
     * (--stop-when-empty) that gave up on Redis */
    int unreachable = strcmp(reason, "unreachable") == 0;
    int clean = WIFEXITED(status) && reason[0] &&
                (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 12 ||
                 (WEXITSTATUS(status) == 1 && unreachable));
    int timed_out = w->timed_out;
    int ready = atomic_load(&w->slot->ready) != 0;
    name_predecessor(w, clean, status);
    w->timed_out = 0;
    if (!clean && s->stopping && w->slot->predecessor[0])
        say("worker %d (pid %d) ended without giving back its jobs and no worker replaces it: "
            "another luaworker gives back those it had not started once its heartbeat is gone",
            w->index, (int)pid);
    if (timed_out && !s->stopping) {
        /* the next process gets the job, to fail it or leave it reserved */
        spawn(w);
        return;
    }

    if (!clean) {
        char end[64];
        describe_end(status, end, sizeof end);
        say("worker %d (pid %d) %s%s%s", w->index, (int)pid, WIFSIGNALED(status) ? "was " : "", end,
            WIFEXITED(status) && WEXITSTATUS(status) == 0 ? " without saying why it stopped "
            "(os.exit in a handler?)" : "");
    }
    if (s->stopping) {
        w->done = 1;
    } else if (clean && strcmp(reason, "empty") == 0) {
        w->done = 1;
    } else if (clean && unreachable) {
        w->done = 1;
        s->exit_code = 1;
        stop_all(s, SIGTERM);
    } else if (clean && reason_stops_all(reason)) {
        w->done = 1;
        stop_all(s, SIGTERM);
    } else if (!clean && WIFEXITED(status) && WEXITSTATUS(status) == 2) {
        /* bad configuration: starting again cannot help */
        w->done = 1;
        s->exit_code = 2;
        stop_all(s, SIGTERM);
    } else {
        double lived = ev_now(loop) - w->started;
        int hungry = clean && strcmp(reason, "memory") == 0 && lived < 1.0;
        if (hungry)
            say("worker %d reached --memory %.1fs after its start: the limit is below what a "
                "fresh worker needs", w->index, lived);
        /* crashes in a row: each sooner than RESPAWN_MAX seconds after its start. A
         * SIGKILL comes from outside (an operator, the OOM killer): its successor,
         * which gives back the jobs the worker held, starts at once */
        int killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
        int crashed = !clean && ready && !killed;
        if (!crashed || lived >= RESPAWN_MAX) {
            w->crashes = 0;
            if (crashed)
                w->backoff = 0;
        }
        if (crashed)
            w->crashes++;
        if ((!clean && !ready) || hungry || w->crashes > 1) {
            w->backoff = w->backoff > 0 ? w->backoff * 2 : 1;
            if (w->backoff > RESPAWN_MAX)
                w->backoff = RESPAWN_MAX;
            say("worker %d ended %.1fs after its start%s; starting it again in %.0fs", w->index,
                lived, crashed ? ", again" : hungry ? "" : ", before it was ready", w->backoff);
            ev_timer_set(&w->respawn, w->backoff, 0.);
            ev_timer_start(loop, &w->respawn);
        } else {
            w->backoff = 0;
            spawn(w);
        }
    }
    if (all_done(s))
        ev_break(loop, EVBREAK_ALL);
}

/* In a worker's child, before its exec: its slot's memfd, inherited (a dup
 * without FD_CLOEXEC), named in SLOT_ENV. */
static void give_slot(void *data)
{
    struct worker *w = data;
    char fd[32];
    snprintf(fd, sizeof fd, "%d", dup(w->slot_fd));
    setenv(SLOT_ENV, fd, 1);
}

static void spawn(struct worker *w)
{
    struct supervisor *s = w->sup;
    slot_clear_worker(w->slot);
    /* the first of a slot starts with the fleet: its start-up checks may refuse */
    w->slot->replacing = w->forked > 0;
    /* a worker whose supervisor dies (kill -9, a crash) stops as on TERM: it
     * finishes its jobs in flight and gives back the others, instead of running on
     * unsupervised (no timeout kills, and a restarted supervisor beside it) */
    pid_t pid = child_exec(s->exe_fd, s->argv, SIGTERM, 0, give_slot, w, "a worker");
    if (pid < 0) {
        say("worker %d: cannot fork: %s", w->index, strerror(errno));
        ev_timer_set(&w->respawn, 1., 0.);
        ev_timer_start(s->loop, &w->respawn);
        return;
    }
    w->pid = pid;
    if (w->forked++ > 0)
        atomic_fetch_add_explicit(&w->slot->counts.restarts, 1, memory_order_relaxed);
    w->started = ev_now(s->loop);
    /* held until the worker has its handlers (signals blocked), like any signal */
    if (s->paused)
        kill(pid, SIGUSR2);
    ev_child_init(&w->child, on_child, pid, 0);
    w->child.data = w;
    ev_child_start(s->loop, &w->child);
}

static void stop_all(struct supervisor *s, int sig)
{
    s->stopping = 1;
    reload_check_stop(&s->check);
    for (int i = 0; i < s->nworkers; i++) {
        struct worker *w = &s->workers[i];
        ev_timer_stop(s->loop, &w->respawn);
        if (w->pid)
            kill(w->pid, sig);
        else
            w->done = 1;
    }
    if (all_done(s))
        ev_break(s->loop, EVBREAK_ALL);
}

/* Each worker ends after the jobs it has in flight (HUP) and a fresh one starts. */
static void reload(struct supervisor *s)
{
    for (int i = 0; i < s->nworkers; i++)
        if (s->workers[i].pid)
            kill(s->workers[i].pid, SIGHUP);
}

static void check_handlers(struct supervisor *s);

static void on_checked(void *data, int passed, const char *why)
{
    struct supervisor *s = data;
    if (s->stopping)
        return;
    if (s->recheck) {
        s->recheck = 0;
        check_handlers(s);
        return;
    }
    if (!passed) {
        say("handlers changed (%s) but the check of them failed (%s; what it found is above): the "
            "workers keep the code they run", s->changed, why);
        return;
    }
    say("handlers changed (%s): reloading", s->changed);
    reload(s);
}

/* Starts the check of the handlers that comes before a reload (reload_check); a
 * change while one runs is checked again after it. */
static void check_handlers(struct supervisor *s)
{
    if (reload_check_running(&s->check)) {
        s->recheck = 1;
        return;
    }
    if (reload_check_start(&s->check, s->loop, s->exe_fd, s->argv, on_checked, s))
        say("handlers changed (%s) but they cannot be checked (%s): the workers keep the code they "
            "run", s->changed, strerror(errno));
}

static void on_handlers_changed(void *data, const char *changed, const char *error)
{
    struct supervisor *s = data;
    if (error) {
        say("handlers changed (%s) but one does not compile: %s; the workers keep the code they "
            "run", changed, error);
        return;
    }
    snprintf(s->changed, sizeof s->changed, "%s", changed);
    check_handlers(s);
}

static void on_signal(struct ev_loop *loop, ev_signal *sig, int revents)
{
    (void)loop;
    (void)revents;
    struct supervisor *s = sig->data;
    switch (sig->signum) {
    case SIGUSR2:
    case SIGCONT:
        s->paused = sig->signum == SIGUSR2;
        for (int i = 0; i < s->nworkers; i++)
            if (s->workers[i].pid)
                kill(s->workers[i].pid, sig->signum);
        break;
    case SIGHUP:
        say("reloading: each worker ends after the jobs it has in flight and a fresh one starts");
        reload(s);
        break;
    default:
        if (!s->stopping)
            stop_all(s, SIGTERM);
    }
}

/* Starts the workers STARTS_PER_ITERATION at a time, so that a signal is handled
 * between them. */
#define STARTS_PER_ITERATION 8

static void on_starting(struct ev_loop *loop, ev_idle *idle, int revents)
{
    (void)revents;
    struct supervisor *s = idle->data;
    for (int k = 0; k < STARTS_PER_ITERATION && s->started < s->nworkers && !s->stopping; k++)
        spawn(&s->workers[s->started++]);
    if (s->started == s->nworkers || s->stopping)
        ev_idle_stop(loop, idle);
}

static void free_workers(struct supervisor *s)
{
    for (int i = 0; i < s->nworkers; i++) {
        slot_unmap(s->workers[i].slot);
        if (s->workers[i].slot_fd >= 0)
            close(s->workers[i].slot_fd);
    }
    free(s->workers);
}

/* metrics_server's render: /metrics, the fleet's metrics (metrics_text); /, the
 * live page (live_page), and /fleet.json, what it shows (fleet_json). */
static int render(void *data, const char *path, struct buffer *out, const char **type)
{
    struct supervisor *s = data;
    int running = 0;
    for (int i = 0; i < s->nworkers; i++) {
        s->pids[i] = s->workers[i].pid;
        running += s->workers[i].pid != 0;
    }
    if (strcmp(path, "/metrics") == 0) {
        *type = "text/plain; version=0.0.4; charset=utf-8";
        return metrics_text(out, s->slots, s->nworkers, running) ? 500 : 200;
    }
    if (strcmp(path, "/fleet.json") == 0) {
        *type = "application/json";
        return fleet_json(out, s->slots, s->pids, s->nworkers, (uint64_t)system_unix_time()) ? 500 : 200;
    }
    if (strcmp(path, "/") == 0) {
        *type = "text/html; charset=utf-8";
        const char *page = (const char *)live_page_html;
        return buffer_add(out, page, strlen(page)) ? 500 : 200;
    }
    return 404;
}

int supervisor_run(char **argv, int processes, const char *watch_dir, const char *metrics)
{
    struct supervisor s;
    memset(&s, 0, sizeof s);
    s.loop = ev_default_loop(EVFLAG_AUTO);
    s.argv = argv;
    s.nworkers = processes;
    s.workers = calloc((size_t)processes, sizeof *s.workers);
    s.exe_fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    if (!s.loop || !s.workers || s.exe_fd < 0) {
        fprintf(stderr, "luaworker: cannot start the supervisor%s%s\n",
                s.exe_fd < 0 ? ": /proc/self/exe: " : "", s.exe_fd < 0 ? strerror(errno) : "");
        free(s.workers);
        if (s.exe_fd >= 0)
            close(s.exe_fd);
        return 70;
    }
    for (int i = 0; i < processes; i++) {
        struct worker *w = &s.workers[i];
        w->sup = &s;
        w->index = i + 1;
        w->slot = slot_create(&w->slot_fd);
        if (!w->slot) {
            /* without it, timeouts could not be enforced nor jobs handed over */
            fprintf(stderr, "luaworker: cannot start the supervisor: shared memory for worker %d: "
                    "%s\n", w->index, strerror(errno));
            s.nworkers = i;
            free_workers(&s);
            close(s.exe_fd);
            return 70;
        }
    }
    if (metrics) {
        /* a port in use or a missing library lasts: bad input, before any worker */
        char err[512];
        s.slots = calloc((size_t)processes, sizeof *s.slots);
        s.pids = calloc((size_t)processes, sizeof *s.pids);
        for (int i = 0; s.slots && i < processes; i++)
            s.slots[i] = s.workers[i].slot;
        s.metrics = s.slots && s.pids ? metrics_server_start(s.loop, metrics, render, &s, err, sizeof err)
                                      : NULL;
        s.workers[0].slot->reports_sizes = 1;  /* the queues' sizes: one worker reads them */
        if (!s.metrics) {
            fprintf(stderr, "luaworker: cannot start: %s\n", s.slots && s.pids ? err : "out of memory");
            free(s.slots);
            free(s.pids);
            free_workers(&s);
            close(s.exe_fd);
            return 2;
        }
    }
    for (int i = 0; i < SIGNALS_COUNT; i++) {
        ev_signal_init(&s.signals[i], on_signal, signals_handled[i]);
        s.signals[i].data = &s;
        ev_signal_start(s.loop, &s.signals[i]);
        ev_unref(s.loop);
    }
    /* main blocked them until now: one sent meanwhile comes now, to the handlers */
    sigset_t handled;
    signals_fill(&handled);
    sigprocmask(SIG_UNBLOCK, &handled, NULL);
    for (int i = 0; i < processes; i++) {
        struct worker *w = &s.workers[i];
        ev_timer_init(&w->respawn, on_respawn, 0., 0.);
        w->respawn.data = w;
    }
    ev_idle_init(&s.starting, on_starting);
    s.starting.data = &s;
    ev_idle_start(s.loop, &s.starting);
    ev_timer_init(&s.poll, on_poll, SUPERVISOR_POLL, SUPERVISOR_POLL);
    s.poll.data = &s;
    ev_timer_start(s.loop, &s.poll);
    ev_unref(s.loop);  /* the poll alone does not keep the loop running */
    if (watch_dir)
        s.watch = handler_watch_start(s.loop, watch_dir, 0.25, on_handlers_changed, &s);
    ev_run(s.loop, 0);
    metrics_server_stop(s.metrics);
    free(s.slots);
    free(s.pids);
    handler_watch_stop(s.watch);
    ev_ref(s.loop);
    ev_timer_stop(s.loop, &s.poll);
    free_workers(&s);
    close(s.exe_fd);
    return s.exit_code;
}
