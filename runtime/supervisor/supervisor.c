#include "supervisor/supervisor.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>

#include "supervisor/handler_watch.h"

/* A worker that ends before it reported ready failed to start; the next start
 * then waits, 1 s doubling up to RESPAWN_MAX seconds. */
#define RESPAWN_MAX 30.0
/* Batches kept per worker: the one running, the one reserved ahead of it, and the
 * one before, whose last deletes may still be unsent. */
#define BATCHES_KEPT 3
/* Frames larger than this are refused (a payload is at most a few MB). */
#define FRAME_MAX (64u << 20)

struct supervisor;

struct worker {
    struct supervisor *sup;
    int index;               /* 1-based, for messages */
    pid_t pid;               /* 0 while not running */
    int fd;                  /* supervisor's end of the socket pair, -1 when none */
    ev_io io;
    ev_child child;
    ev_timer respawn;        /* delays a start after failures */
    double started;          /* ev_now() of the start */
    int ready;               /* sent its 'R' frame */
    double backoff;          /* seconds before the next start after a failed one */
    char *in;                /* bytes read, not yet a whole frame */
    size_t in_len, in_cap;
    struct supervisor_slot *slot;  /* shared with the process, NULL when none */
    int slot_fd;
    struct batch {           /* the bodies of its last 'B' frames, oldest first */
        uint32_t number;
        char *body;
        size_t len;
    } batches[BATCHES_KEPT];
    int nbatches;
    uint32_t timeout;        /* the timeout of the job it was killed for */
    char *handover;          /* the 'H' body for the next process, or NULL */
    size_t handover_len;
    int timed_out;           /* killed for its job's timeout */
    char reason[32];         /* from its 'X' frame */
    int done;                /* ended and is not to be replaced */
};

struct supervisor {
    struct ev_loop *loop;
    char **argv;
    int exe_fd;              /* this binary, opened at start: each worker runs it */
    int nworkers;
    struct worker *workers;
    ev_signal signals[6];
    ev_timer poll;           /* reads the slots, for jobs past their timeout */
    struct handler_watch *watch;
    int stopping;
    int exit_code;
};

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One line on stderr, in one write: the workers share the stream. */
static void say(const char *fmt, ...)
{
    char line[1024];
    time_t now = time(NULL);
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

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int read_all(int fd, char *p, size_t n)
{
    while (n > 0) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

struct supervisor_slot *supervisor_slot_map(int fd)
{
    void *p = mmap(NULL, sizeof(struct supervisor_slot), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return p == MAP_FAILED ? NULL : p;
}

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void supervisor_slot_set(struct supervisor_slot *slot, uint32_t batch, uint32_t index,
                         int running, uint32_t timeout)
{
    uint32_t seq = atomic_load_explicit(&slot->seq, memory_order_relaxed);
    atomic_store_explicit(&slot->seq, seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    atomic_store_explicit(&slot->batch, batch, memory_order_relaxed);
    atomic_store_explicit(&slot->index, index, memory_order_relaxed);
    atomic_store_explicit(&slot->running, (uint32_t)running, memory_order_relaxed);
    atomic_store_explicit(&slot->timeout, timeout, memory_order_relaxed);
    atomic_store_explicit(&slot->started_ns, monotonic_ns(), memory_order_relaxed);
    atomic_store_explicit(&slot->seq, seq + 2, memory_order_release);
}

struct slot_view {
    uint32_t batch, index, running, timeout;
    uint64_t started_ns;
};

/* A consistent copy of the slot; -1 when the worker was writing it all along (or
 * died while writing it: the copy then holds what was there). */
static int read_slot(struct supervisor_slot *slot, struct slot_view *v)
{
    for (int tries = 0; tries < 100; tries++) {
        uint32_t seq = atomic_load_explicit(&slot->seq, memory_order_acquire);
        v->batch = atomic_load_explicit(&slot->batch, memory_order_relaxed);
        v->index = atomic_load_explicit(&slot->index, memory_order_relaxed);
        v->running = atomic_load_explicit(&slot->running, memory_order_relaxed);
        v->timeout = atomic_load_explicit(&slot->timeout, memory_order_relaxed);
        v->started_ns = atomic_load_explicit(&slot->started_ns, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (!(seq & 1) && atomic_load_explicit(&slot->seq, memory_order_relaxed) == seq)
            return 0;
    }
    return -1;
}

int supervisor_send(int fd, char type, const char *const *parts, const size_t *lens, int nparts)
{
    uint32_t len = 1;
    for (int i = 0; i < nparts; i++)
        len += (uint32_t)lens[i];
    if (write_all(fd, (const char *)&len, sizeof len) || write_all(fd, &type, 1))
        return -1;
    for (int i = 0; i < nparts; i++)
        if (write_all(fd, parts[i], lens[i]))
            return -1;
    return 0;
}

int supervisor_receive(int fd, char *type, char **body, size_t *len)
{
    uint32_t n;
    if (read_all(fd, (char *)&n, sizeof n) || n < 1 || n > FRAME_MAX)
        return -1;
    char *buf = malloc(n);
    if (!buf || read_all(fd, buf, n)) {
        free(buf);
        return -1;
    }
    *type = buf[0];
    memmove(buf, buf + 1, n - 1);
    *body = buf;
    *len = n - 1;
    return 0;
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

/* Reads a part (4-byte length, bytes) at *off of body[0..len); returns 0 and moves
 * *off past it, or -1 when it is cut short. */
static int next_part(const char *body, size_t len, size_t *off, const char **p, uint32_t *n)
{
    if (len - *off < 4)
        return -1;
    memcpy(n, body + *off, 4);
    if (*n > len - *off - 4)
        return -1;
    *p = body + *off + 4;
    *off += 4 + *n;
    return 0;
}

/* Appends a handover record (see supervisor.h) to w->handover. */
static void add_handover(struct worker *w, char kind, uint32_t timeout, const char *q, uint32_t qlen,
                         const char *payload, uint32_t plen, const char *reserved, uint32_t rlen)
{
    size_t need = w->handover_len + 1 + 4 + 12 + qlen + plen + rlen;
    char *h = realloc(w->handover, need);
    if (!h)
        return;
    char *p = h + w->handover_len;
    *p++ = kind;
    memcpy(p, &timeout, 4);
    p += 4;
    const char *parts[3] = {q, payload, reserved};
    const uint32_t lens[3] = {qlen, plen, rlen};
    for (int i = 0; i < 3; i++) {
        memcpy(p, &lens[i], 4);
        memcpy(p + 4, parts[i], lens[i]);
        p += 4 + lens[i];
    }
    w->handover = h;
    w->handover_len = need;
}

/* Adds the records of batch b to w->handover: its jobs before the one the slot
 * names (ended: their deletes may be unsent), that job when it ran past its timeout,
 * and those after it (not started). A job that was running when the process ended
 * otherwise stays reserved, as PHP's would. Returns how many jobs it hands over. */
static int hand_over_batch(struct worker *w, const struct batch *b, const struct slot_view *v,
                           int timed_out)
{
    const char *q, *payload, *reserved;
    uint32_t qlen, plen, rlen;
    size_t off = 4;
    int count = 0;
    if (b->len < 4 || next_part(b->body, b->len, &off, &q, &qlen))
        return 0;
    /* a batch before the slot's ended; one after it has not started */
    long last_started = b->number < v->batch    ? LONG_MAX
                        : b->number == v->batch ? (long)v->index
                                                : -1;
    int running = b->number == v->batch && v->running;
    for (long i = 0; next_part(b->body, b->len, &off, &payload, &plen) == 0 &&
                     next_part(b->body, b->len, &off, &reserved, &rlen) == 0;
         i++) {
        char kind = i > last_started                ? 'G'
                    : i < last_started || !running ? 'D'
                    : timed_out                     ? 'T'
                                                    : 0;
        if (!kind)
            continue;
        add_handover(w, kind, kind == 'T' ? w->timeout : 0, q, qlen, payload, plen, reserved, rlen);
        count++;
    }
    return count;
}

/* Builds w->handover from the batches of a worker that ended without settling
 * them. Returns how many jobs it hands over. */
static int build_handover(struct worker *w, int timed_out)
{
    struct slot_view v = {0};
    if (w->slot)
        read_slot(w->slot, &v);
    int count = 0;
    for (int i = 0; i < w->nbatches; i++)
        count += hand_over_batch(w, &w->batches[i], &v, timed_out);
    return count;
}

static void drop_batch(struct worker *w, int i)
{
    free(w->batches[i].body);
    memmove(&w->batches[i], &w->batches[i + 1], (size_t)(w->nbatches - i - 1) * sizeof *w->batches);
    w->nbatches--;
}

static void clear_batches(struct worker *w)
{
    while (w->nbatches > 0)
        drop_batch(w, 0);
}

/* Every SUPERVISOR_POLL seconds: ends the process of each job past its timeout. */
static void on_poll(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    struct supervisor *s = t->data;
    uint64_t now = monotonic_ns();
    for (int i = 0; i < s->nworkers; i++) {
        struct worker *w = &s->workers[i];
        struct slot_view v;
        if (!w->pid || !w->slot || w->timed_out || read_slot(w->slot, &v) || !v.running ||
            v.timeout == 0 || now - v.started_ns < (uint64_t)v.timeout * 1000000000u)
            continue;
        say("worker %d (pid %d): job timed out after %us; ending the process", w->index,
            (int)w->pid, v.timeout);
        w->timed_out = 1;
        w->timeout = v.timeout;
        kill(w->pid, SIGKILL);
    }
}

static void on_frame(struct worker *w, char type, const char *body, size_t len)
{
    switch (type) {
    case 'B': {
        char *copy = malloc(len ? len : 1);
        if (!copy || len < 4) {
            free(copy);
            return;
        }
        memcpy(copy, body, len);
        if (w->nbatches == BATCHES_KEPT)
            drop_batch(w, 0);
        struct batch *b = &w->batches[w->nbatches++];
        memcpy(&b->number, body, 4);
        b->body = copy;
        b->len = len;
        break;
    }
    case 'G': {  /* the worker gave that batch's jobs back itself */
        uint32_t number;
        if (len < 4)
            return;
        memcpy(&number, body, 4);
        for (int i = 0; i < w->nbatches; i++)
            if (w->batches[i].number == number)
                drop_batch(w, i--);
        break;
    }
    case 'R':
        w->ready = 1;
        break;
    case 'X':
        snprintf(w->reason, sizeof w->reason, "%.*s", (int)(len < 31 ? len : 31), body);
        break;
    default:
        break;
    }
}

/* Reads what the worker sent and handles each whole frame. Returns the number of
 * bytes read, 0 when there was nothing to read; closes the socket at its end. */
static ssize_t receive(struct ev_loop *loop, struct worker *w)
{
    char chunk[65536];
    ssize_t r = read(w->fd, chunk, sizeof chunk);
    if (r <= 0) {
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            return 0;
        ev_io_stop(loop, &w->io);
        close(w->fd);
        w->fd = -1;
        return 0;
    }
    if (w->in_len + (size_t)r > w->in_cap) {
        size_t cap = w->in_cap ? w->in_cap : 65536;
        while (cap < w->in_len + (size_t)r)
            cap *= 2;
        char *in = realloc(w->in, cap);
        if (!in)
            return 0;
        w->in = in;
        w->in_cap = cap;
    }
    memcpy(w->in + w->in_len, chunk, (size_t)r);
    w->in_len += (size_t)r;
    size_t off = 0;
    for (;;) {
        uint32_t n;
        if (w->in_len - off < 4)
            break;
        memcpy(&n, w->in + off, 4);
        if (n < 1 || n > FRAME_MAX) {
            say("worker %d (pid %d): malformed report; ignoring it", w->index, (int)w->pid);
            off = w->in_len;
            break;
        }
        if (w->in_len - off - 4 < n)
            break;
        on_frame(w, w->in[off + 4], w->in + off + 5, n - 1);
        off += 4 + n;
    }
    memmove(w->in, w->in + off, w->in_len - off);
    w->in_len -= off;
    return r;
}

static void on_readable(struct ev_loop *loop, ev_io *io, int revents)
{
    (void)revents;
    receive(loop, io->data);
}

/* What a worker's stop reason means for its slot. */
static int reason_stops_all(const char *reason)
{
    return strcmp(reason, "restart_signal") == 0 || strcmp(reason, "interrupted") == 0;
}

static void stop_all(struct supervisor *s, int sig);

static void on_child(struct ev_loop *loop, ev_child *c, int revents)
{
    (void)revents;
    struct worker *w = c->data;
    struct supervisor *s = w->sup;
    int status = c->rstatus;
    ev_child_stop(loop, c);
    if (w->fd >= 0) {
        while (w->fd >= 0 && receive(loop, w) > 0)
            ;  /* frames still buffered, up to its 'X' */
    }
    if (w->fd >= 0) {
        ev_io_stop(loop, &w->io);
        close(w->fd);
        w->fd = -1;
    }
    pid_t pid = w->pid;
    w->pid = 0;
    w->in_len = 0;

    int clean = WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 12);
    int timed_out = w->timed_out;
    free(w->handover);
    w->handover = NULL;
    w->handover_len = 0;
    int handed = clean ? 0 : build_handover(w, timed_out);
    clear_batches(w);
    w->timed_out = 0;
    if (handed && s->stopping)
        say("worker %d (pid %d) ended with %d jobs reserved and no process to take them over: "
            "they come back after retry_after", w->index, (int)pid, handed);
    if (timed_out && !s->stopping) {
        /* the next process gets the job, to fail it or leave it reserved */
        spawn(w);
        return;
    }

    if (!clean) {
        if (WIFSIGNALED(status))
            say("worker %d (pid %d) was killed by signal %d (%s)", w->index, (int)pid,
                WTERMSIG(status), strsignal(WTERMSIG(status)));
        else
            say("worker %d (pid %d) exited with status %d", w->index, (int)pid, WEXITSTATUS(status));
    }
    if (s->stopping) {
        w->done = 1;
    } else if (clean && strcmp(w->reason, "empty") == 0) {
        w->done = 1;
    } else if (clean && reason_stops_all(w->reason)) {
        w->done = 1;
        stop_all(s, SIGTERM);
    } else if (!clean && WIFEXITED(status) && WEXITSTATUS(status) == 2) {
        /* bad configuration: starting again cannot help */
        w->done = 1;
        s->exit_code = 2;
        stop_all(s, SIGTERM);
    } else {
        double lived = ev_now(loop) - w->started;
        int hungry = clean && strcmp(w->reason, "memory") == 0 && lived < 1.0;
        if (hungry)
            say("worker %d reached --memory %.1fs after its start: the limit is below what a "
                "fresh worker needs", w->index, lived);
        if ((!clean && !w->ready) || hungry) {
            w->backoff = w->backoff > 0 ? w->backoff * 2 : 1;
            if (w->backoff > RESPAWN_MAX)
                w->backoff = RESPAWN_MAX;
            say("worker %d ended %.1fs after its start%s; starting it again in %.0fs", w->index,
                lived, hungry ? "" : ", before it was ready", w->backoff);
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

static void spawn(struct worker *w)
{
    struct supervisor *s = w->sup;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        say("worker %d: cannot create a socket pair: %s", w->index, strerror(errno));
        ev_timer_set(&w->respawn, 1., 0.);
        ev_timer_start(s->loop, &w->respawn);
        return;
    }
    if (w->slot)
        memset(w->slot, 0, sizeof *w->slot);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        say("worker %d: cannot fork: %s", w->index, strerror(errno));
        close(sv[0]);
        close(sv[1]);
        ev_timer_set(&w->respawn, 1., 0.);
        ev_timer_start(s->loop, &w->respawn);
        return;
    }
    if (pid == 0) {
        char fd[32];
        int child_fd = dup(sv[1]);  /* without FD_CLOEXEC */
        int slot_fd = w->slot ? dup(w->slot_fd) : -1;
        snprintf(fd, sizeof fd, "%d:%d", child_fd, slot_fd);
        setenv(SUPERVISOR_FD_ENV, fd, 1);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* fexecve, not execv("/proc/self/exe"): the same binary even when the file
         * was replaced since, and the one valgrind --trace-children follows */
        fexecve(s->exe_fd, s->argv, environ);
        fprintf(stderr, "luaworker: cannot start a worker: %s\n", strerror(errno));
        _exit(70);
    }
    close(sv[1]);
    w->pid = pid;
    w->fd = sv[0];
    w->started = ev_now(s->loop);
    w->ready = 0;
    w->reason[0] = '\0';
    w->in_len = 0;
    fcntl(w->fd, F_SETFL, fcntl(w->fd, F_GETFL) | O_NONBLOCK);

    /* its first frame: what the previous process left, if anything */
    const char *part = w->handover ? w->handover : "";
    size_t len = w->handover ? w->handover_len : 0;
    int flags = fcntl(w->fd, F_GETFL);
    fcntl(w->fd, F_SETFL, flags & ~O_NONBLOCK);
    supervisor_send(w->fd, w->handover ? 'H' : 'N', &part, &len, 1);
    fcntl(w->fd, F_SETFL, flags);
    free(w->handover);
    w->handover = NULL;
    w->handover_len = 0;

    ev_io_init(&w->io, on_readable, w->fd, EV_READ);
    w->io.data = w;
    ev_io_start(s->loop, &w->io);
    ev_child_init(&w->child, on_child, pid, 0);
    w->child.data = w;
    ev_child_start(s->loop, &w->child);
}

static void stop_all(struct supervisor *s, int sig)
{
    s->stopping = 1;
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

/* Each worker ends after its current job (HUP) and a fresh one starts. */
static void reload(struct supervisor *s)
{
    for (int i = 0; i < s->nworkers; i++)
        if (s->workers[i].pid)
            kill(s->workers[i].pid, SIGHUP);
}

static void on_handlers_changed(void *data, const char *changed, const char *error)
{
    struct supervisor *s = data;
    if (error) {
        say("handlers changed (%s) but one does not compile: %s; the workers keep the code they "
            "run", changed, error);
        return;
    }
    say("handlers changed (%s): reloading", changed);
    reload(s);
}

static void on_signal(struct ev_loop *loop, ev_signal *sig, int revents)
{
    (void)loop;
    (void)revents;
    struct supervisor *s = sig->data;
    switch (sig->signum) {
    case SIGUSR2:
    case SIGCONT:
        for (int i = 0; i < s->nworkers; i++)
            if (s->workers[i].pid)
                kill(s->workers[i].pid, sig->signum);
        break;
    case SIGHUP:
        say("reloading: each worker ends after its current job and a fresh one starts");
        reload(s);
        break;
    default:
        if (!s->stopping)
            stop_all(s, SIGTERM);
    }
}

int supervisor_run(char **argv, int processes, const char *watch_dir)
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
    const int signums[6] = {SIGTERM, SIGINT, SIGQUIT, SIGUSR2, SIGCONT, SIGHUP};
    for (int i = 0; i < 6; i++) {
        ev_signal_init(&s.signals[i], on_signal, signums[i]);
        s.signals[i].data = &s;
        ev_signal_start(s.loop, &s.signals[i]);
        ev_unref(s.loop);
    }
    for (int i = 0; i < processes; i++) {
        struct worker *w = &s.workers[i];
        w->sup = &s;
        w->index = i + 1;
        w->fd = -1;
        w->slot_fd = memfd_create("luaworker-slot", MFD_CLOEXEC);
        if (w->slot_fd >= 0 && ftruncate(w->slot_fd, sizeof *w->slot) == 0) {
            void *p = mmap(NULL, sizeof *w->slot, PROT_READ | PROT_WRITE, MAP_SHARED, w->slot_fd, 0);
            w->slot = p == MAP_FAILED ? NULL : p;
        }
        if (!w->slot)
            say("worker %d: cannot share its job state (%s): its jobs have no timeout",
                w->index, strerror(errno));
        ev_timer_init(&w->respawn, on_respawn, 0., 0.);
        w->respawn.data = w;
        spawn(w);
    }
    ev_timer_init(&s.poll, on_poll, SUPERVISOR_POLL, SUPERVISOR_POLL);
    s.poll.data = &s;
    ev_timer_start(s.loop, &s.poll);
    ev_unref(s.loop);  /* the poll alone does not keep the loop running */
    if (watch_dir)
        s.watch = handler_watch_start(s.loop, watch_dir, 0.25, on_handlers_changed, &s);
    ev_run(s.loop, 0);
    handler_watch_stop(s.watch);
    for (int i = 0; i < processes; i++) {
        free(s.workers[i].in);
        clear_batches(&s.workers[i]);
        free(s.workers[i].handover);
        if (s.workers[i].slot)
            munmap(s.workers[i].slot, sizeof *s.workers[i].slot);
        if (s.workers[i].slot_fd >= 0)
            close(s.workers[i].slot_fd);
    }
    ev_ref(s.loop);
    ev_timer_stop(s.loop, &s.poll);
    free(s.workers);
    close(s.exe_fd);
    return s.exit_code;
}
