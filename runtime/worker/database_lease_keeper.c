#include "worker/database_lease_keeper.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/handles.h"
#include "loop/system.h"

/* Seconds a stop waits for the thread to end its statement under way. */
#define STOP_WAIT 2

/* The longest renewal statement: its parts and three numbers of 20 digits. */
#define SQL_MAX 1024

/* A job held: its row and its reservation. */
struct held {
    int used;
    unsigned gen;          /* counts the uses of this entry: an outcome for an earlier one is dropped */
    long long id, attempts;
    int charging;          /* a held job whose start (attempts + 1) was sent, not confirmed */
    double expires;        /* when its reservation expires as last confirmed (a Unix second) */
    double renew_at;       /* when to renew next */
    int renewing;          /* the thread is renewing it */
    int gone;              /* its row no longer holds this reservation: renewed no more */
    int lapsed;            /* 1: its expiry passed before a renewal was confirmed; 2: said so */
};

/* A renewal the thread makes: the entry and its row, copied out of mu. */
struct due {
    int handle;
    unsigned gen;
    long long id, attempts;
    int charging;
};

/* The keeper's state, one a process. mu guards everything the two threads share
 * (all but thread and session, which are the thread's once it runs). */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int running, stop, waiting, finished;
    double wake_at;       /* while waiting: when the thread wakes (system_clock) */
    pthread_t thread;
    struct sql_session *session;
    char *parts[DATABASE_LEASE_SQL_PARTS];
    double lease, retry_after;
    struct handles jobs;  /* of struct held */
    char error[256];
} dk = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* The entry of handle i. mu held. */
static struct held *at(int i)
{
    return (struct held *)dk.jobs.items + i;
}

static struct held *entry(int handle, unsigned gen)
{
    if (handle < 0 || handle >= dk.jobs.cap || !at(handle)->used || at(handle)->gen != gen)
        return NULL;
    return at(handle);
}

/* Notes j's lapse when its expiry passed by the wall clock. mu held. */
static void look_at(struct held *j)
{
    if (j->used && !j->lapsed && !j->gone && floor(system_wall_clock()) >= j->expires)
        j->lapsed = 1;
}

/* The renewals due now, marked renewing, into *list (grown as needed); returns how
 * many, *next lowered to the earliest renewal due later. mu held. */
static int take_due(struct due **list, int *cap, double *next)
{
    double now = system_clock();
    int n = 0;
    for (int i = 0; i < dk.jobs.cap; i++) {
        struct held *j = at(i);
        look_at(j);
        if (!j->used || j->gone || j->renewing)
            continue;
        if (now < j->renew_at) {
            if (j->renew_at < *next)
                *next = j->renew_at;
            continue;
        }
        if (n == *cap) {
            int grown = *cap ? *cap * 2 : 16;
            struct due *l = realloc(*list, (size_t)grown * sizeof *l);
            if (!l)
                break;  /* the rest at the next tick */
            *list = l;
            *cap = grown;
        }
        j->renewing = 1;
        (*list)[n++] = (struct due){i, j->gen, j->id, j->attempts, j->charging};
    }
    return n;
}

/* Renews d's row to reserved_at `value`; returns sql_session_run's result. Called
 * without mu. */
static int renew(const struct due *d, long long value)
{
    char sql[SQL_MAX], err[256], attempts[48];
    if (d->charging)
        snprintf(attempts, sizeof attempts, "%lld, %lld", d->attempts, d->attempts + 1);
    else
        snprintf(attempts, sizeof attempts, "%lld", d->attempts);
    snprintf(sql, sizeof sql, "%s%lld%s%lld%s%s%s", dk.parts[0], value, dk.parts[1], d->id,
             dk.parts[2], attempts, dk.parts[3]);
    long long changed = 0;
    int rc = sql_session_run(dk.session, sql, &changed, err, sizeof err);
    pthread_mutex_lock(&dk.mu);
    if (rc != 0)
        snprintf(dk.error, sizeof dk.error, "%s", err);
    else
        dk.error[0] = '\0';  /* what failed before is past */
    struct held *j = entry(d->handle, d->gen);
    if (j) {
        j->renewing = 0;
        if (rc == 0 && changed > 0) {
            j->expires = (double)value + dk.retry_after;
            j->renew_at = system_clock() + dk.lease / 4;
        } else if (rc == 0 && j->attempts == d->attempts && j->charging == d->charging) {
            j->gone = 1;
        } else if (rc == 0) {
            /* its start was sent or confirmed meanwhile: again with the new count */
            j->renew_at = system_clock();
        }
        /* else: again at the next tick */
    }
    pthread_mutex_unlock(&dk.mu);
    return rc;
}

/* Waits until `until` (system_clock), a stop or a job held; mu held. */
static void wait_until(double until)
{
    double left = until - system_clock();
    if (left <= 0)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double sec = floor(left);
    ts.tv_sec += (time_t)sec;
    ts.tv_nsec += (long)((left - sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    dk.waiting = 1;
    dk.wake_at = until;
    pthread_cond_timedwait(&dk.cv, &dk.mu, &ts);
    dk.waiting = 0;
}

/* The renewals as they come due, one statement each; a renewal that failed is
 * tried again an eighth of a lease later. */
static void *run(void *arg)
{
    (void)arg;
    struct due *list = NULL;
    int cap = 0;
    pthread_mutex_lock(&dk.mu);
    while (!dk.stop) {
        double next = system_clock() + dk.lease / 8;
        int n = take_due(&list, &cap, &next);
        long long value = (long long)ceil(system_wall_clock() + dk.lease) - (long long)dk.retry_after;
        pthread_mutex_unlock(&dk.mu);
        int i = 0;
        while (i < n && renew(&list[i], value) != -2)
            i++;
        pthread_mutex_lock(&dk.mu);
        /* a connection lost: the rest wait for the next tick */
        for (int k = i + 1; k < n; k++) {
            struct held *j = entry(list[k].handle, list[k].gen);
            if (j)
                j->renewing = 0;
        }
        wait_until(next);
    }
    dk.finished = 1;
    pthread_cond_broadcast(&dk.cv);  /* database_lease_keeper_stop waits for it */
    pthread_mutex_unlock(&dk.mu);
    free(list);
    return NULL;
}

static void free_parts(void)
{
    for (int i = 0; i < DATABASE_LEASE_SQL_PARTS; i++) {
        free(dk.parts[i]);
        dk.parts[i] = NULL;
    }
}

int database_lease_keeper_start(struct sql_session *session,
                                const char *const parts[DATABASE_LEASE_SQL_PARTS], double lease,
                                double retry_after, char *err, size_t errlen)
{
    if (dk.running) {
        sql_session_free(session);
        return 0;
    }
    size_t len = 4 * 20 + 3;
    for (int i = 0; i < DATABASE_LEASE_SQL_PARTS; i++)
        len += strlen(parts[i]);
    if (len > SQL_MAX) {
        snprintf(err, errlen, "the renewal's statement is longer than %d bytes", SQL_MAX);
        sql_session_free(session);
        return -1;
    }
    int ok = 1;
    for (int i = 0; i < DATABASE_LEASE_SQL_PARTS; i++)
        ok = ok && (dk.parts[i] = strdup(parts[i])) != NULL;
    pthread_condattr_t attr;
    if (ok && pthread_condattr_init(&attr) == 0) {
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        ok = pthread_cond_init(&dk.cv, &attr) == 0;
        pthread_condattr_destroy(&attr);
    } else {
        ok = 0;
    }
    if (!ok) {
        snprintf(err, errlen, "out of memory");
        free_parts();
        sql_session_free(session);
        return -1;
    }
    dk.session = session;
    dk.lease = lease;
    dk.retry_after = retry_after;
    dk.stop = dk.finished = 0;
    /* signals are the vm thread's: none reaches this one */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&dk.thread, NULL, run, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the leases' thread: %s", strerror(rc));
        pthread_cond_destroy(&dk.cv);
        free_parts();
        sql_session_free(session);
        dk.session = NULL;
        return -1;
    }
    dk.running = 1;
    return 0;
}

int database_lease_keeper_hold(long long id, long long attempts, double expires_wall)
{
    pthread_mutex_lock(&dk.mu);
    int handle = handles_take(&dk.jobs, sizeof(struct held));
    if (handle < 0) {
        pthread_mutex_unlock(&dk.mu);
        return -1;
    }
    struct held *j = at(handle);
    /* the first renewal a quarter lease from now, or halfway to its expiry */
    double left = expires_wall - system_wall_clock();
    double first = dk.lease / 4;
    if (left / 2 < first)
        first = left > 0 ? left / 2 : 0;
    *j = (struct held){.used = 1, .gen = j->gen + 1, .id = id, .attempts = attempts,
                       .expires = expires_wall, .renew_at = system_clock() + first};
    if (dk.waiting && j->renew_at < dk.wake_at)
        pthread_cond_signal(&dk.cv);  /* its first renewal comes before the wait's end */
    pthread_mutex_unlock(&dk.mu);
    return handle;
}

int database_lease_keeper_charge(int handle, int confirmed)
{
    pthread_mutex_lock(&dk.mu);
    if (handle < 0 || handle >= dk.jobs.cap || !at(handle)->used) {
        pthread_mutex_unlock(&dk.mu);
        return -1;
    }
    struct held *j = at(handle);
    if (!confirmed) {
        j->charging = 1;
    } else if (j->charging) {
        j->charging = 0;
        j->attempts++;
    }
    pthread_mutex_unlock(&dk.mu);
    return 0;
}

double database_lease_keeper_expires(int handle)
{
    pthread_mutex_lock(&dk.mu);
    double expires = 0;
    if (handle >= 0 && handle < dk.jobs.cap && at(handle)->used) {
        struct held *j = at(handle);
        look_at(j);
        if (!j->lapsed && !j->gone)
            expires = j->expires;
    }
    pthread_mutex_unlock(&dk.mu);
    return expires;
}

int database_lease_keeper_release(int handle)
{
    pthread_mutex_lock(&dk.mu);
    if (handle < 0 || handle >= dk.jobs.cap || !at(handle)->used) {
        pthread_mutex_unlock(&dk.mu);
        return 0;
    }
    struct held *j = at(handle);
    look_at(j);
    int unsaid = j->lapsed == 1;
    j->used = 0;
    handles_give(&dk.jobs, handle);
    pthread_mutex_unlock(&dk.mu);
    return unsaid;
}

int database_lease_keeper_lapsed(int *handles, int max)
{
    int n = 0;
    pthread_mutex_lock(&dk.mu);
    for (int i = 0; i < dk.jobs.cap && n < max; i++) {
        struct held *j = at(i);
        if (!j->used)
            continue;
        look_at(j);
        if (j->lapsed == 1) {
            j->lapsed = 2;
            handles[n++] = i;
        }
    }
    pthread_mutex_unlock(&dk.mu);
    return n;
}

int database_lease_keeper_error(char *buf, size_t len)
{
    pthread_mutex_lock(&dk.mu);
    int any = dk.error[0] != '\0';
    snprintf(buf, len, "%s", dk.error);
    pthread_mutex_unlock(&dk.mu);
    return any;
}

void database_lease_keeper_stop(void)
{
    if (dk.running) {
        pthread_mutex_lock(&dk.mu);
        dk.stop = 1;
        pthread_cond_broadcast(&dk.cv);
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += STOP_WAIT;
        while (!dk.finished && pthread_cond_timedwait(&dk.cv, &dk.mu, &until) != ETIMEDOUT) {
        }
        int finished = dk.finished;
        pthread_mutex_unlock(&dk.mu);
        dk.running = 0;
        if (!finished) {
            /* a statement that waits on the database (its connect or its lock): the
             * process ends without it, and leaves it what it uses */
            pthread_detach(dk.thread);
            return;
        }
        pthread_join(dk.thread, NULL);
        pthread_cond_destroy(&dk.cv);
        sql_session_free(dk.session);
        dk.session = NULL;
        free_parts();
    }
    pthread_mutex_lock(&dk.mu);
    handles_free(&dk.jobs);
    dk.error[0] = '\0';
    pthread_mutex_unlock(&dk.mu);
}
