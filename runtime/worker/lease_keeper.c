#include "worker/lease_keeper.h"

#include <ev.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/handles.h"
#include "loop/system.h"
#include "redis/redis_client.h"

/* A job held: its reserved copy and where it is. */
struct held {
    int used;
    unsigned gen;          /* counts the uses of this entry: a reply for an earlier one is dropped */
    char *key, *member;
    size_t keylen, memberlen;
    double expires;        /* its score in Redis as last confirmed (a Unix second) */
    double renew_at;       /* when to renew next */
    int renewing;          /* a renewal is unanswered */
    int lapsed;            /* 1: its score passed before a renewal was confirmed; 2: said so */
};

/* A renewal in flight. */
struct renewal {
    int handle;
    unsigned gen;
    double score;
};

/* The keeper's state, one a process. mu guards everything the two threads share
 * (all but thread, loop and the watchers); it is recursive, so that a reply that
 * comes back at once, inside the send, finds it held. */
static struct {
    pthread_mutex_t mu;
    int running;
    pthread_t thread;
    struct ev_loop *loop;
    ev_async wake;
    ev_timer timer;
    struct redis_client *client;
    int stop, changed;
    /* the heartbeat: keys, value, ttl */
    char **keys, *value;
    int nkeys, beating;
    char ttl_ms[32];
    double interval, ttl, lease;
    /* its rounds */
    int pending, round_ok;
    double sent, sent_wall;
    double confirmed, confirmed_wall, since;
    /* the jobs held */
    struct handles jobs;  /* of struct held */
} lk = {.mu = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP};

/* The entry of handle i. mu held. */
static struct held *at(int i)
{
    return (struct held *)lk.jobs.items + i;
}

/* Whether the lease has lapsed: no round confirmed, or the last one sent a lease ago
 * or more by either clock (a wall clock set back counts for nothing). mu held. */
static int lapsed(void)
{
    return lk.confirmed <= 0 || system_clock() - lk.confirmed >= lk.lease ||
           system_wall_clock() - lk.confirmed_wall >= lk.lease;
}

/* A round sent at `sent` was confirmed now. mu held. */
static void confirm(double sent, double sent_wall)
{
    if (lapsed())
        lk.since = sent;
    if (sent > lk.confirmed) {
        lk.confirmed = sent;
        lk.confirmed_wall = sent_wall;
    }
}

static void on_beat_reply(void *data, const redisReply *reply, const char *lost,
                          enum redis_conn_loss loss)
{
    (void)data;
    (void)lost;
    (void)loss;
    pthread_mutex_lock(&lk.mu);
    if (!reply || reply->type == REDIS_REPLY_ERROR)
        lk.round_ok = 0;
    if (--lk.pending == 0 && lk.round_ok)
        confirm(lk.sent, lk.sent_wall);
    pthread_mutex_unlock(&lk.mu);
}

/* One round of the heartbeat, unless the last one is unanswered. mu held. */
static void beat(void)
{
    if (!lk.beating || lk.pending > 0)
        return;
    lk.sent = system_clock();
    lk.sent_wall = system_wall_clock();
    lk.round_ok = 1;
    lk.pending = 1;  /* a reply inside the send must not end the round */
    for (int i = 0; i < lk.nkeys; i++) {
        const char *argv[5] = {"SET", lk.keys[i], lk.value, "PX", lk.ttl_ms};
        size_t argvlen[5];
        for (int k = 0; k < 5; k++)
            argvlen[k] = strlen(argv[k]);
        char err[256];
        if (redis_client_command(lk.client, 0, 5, argv, argvlen, on_beat_reply, NULL, err,
                                 sizeof err) == 0)
            lk.pending++;
        else
            lk.round_ok = 0;
    }
    if (--lk.pending == 0 && lk.round_ok)
        confirm(lk.sent, lk.sent_wall);
}

static struct held *entry(int handle, unsigned gen)
{
    if (handle < 0 || handle >= lk.jobs.cap || !at(handle)->used || at(handle)->gen != gen)
        return NULL;
    return at(handle);
}

static void on_renewed(void *data, const redisReply *reply, const char *lost,
                       enum redis_conn_loss loss)
{
    (void)lost;
    (void)loss;
    struct renewal *r = data;
    pthread_mutex_lock(&lk.mu);
    struct held *j = entry(r->handle, r->gen);
    if (j) {
        j->renewing = 0;
        if (reply && reply->type != REDIS_REPLY_ERROR) {
            /* the score Redis has now, lower than the pop's when retry_after is long */
            j->expires = r->score;
            j->renew_at = system_clock() + lk.ttl / 2;
        }
        /* else: again at the next tick */
    }
    pthread_mutex_unlock(&lk.mu);
    free(r);
}

/* Sends the renewal of job j (handle) to score. mu held. */
static void renew(int handle, struct held *j, double score)
{
    struct renewal *r = malloc(sizeof *r);
    if (!r)
        return;
    *r = (struct renewal){handle, j->gen, score};
    char num[32];
    snprintf(num, sizeof num, "%.0f", score);
    const char *argv[5] = {"ZADD", j->key, "XX", num, j->member};
    size_t argvlen[5] = {4, j->keylen, 2, strlen(num), j->memberlen};
    char err[256];
    j->renewing = 1;  /* until the reply, which may come inside the send */
    if (redis_client_command(lk.client, 0, 5, argv, argvlen, on_renewed, r, err, sizeof err) != 0) {
        j->renewing = 0;
        free(r);
    }
}

/* Every interval: a round of the heartbeat, the renewals that are due, and the
 * leases that lapsed noted. */
static void on_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)w;
    (void)revents;
    pthread_mutex_lock(&lk.mu);
    beat();
    double now = system_clock(), wall = system_wall_clock();
    double score = ceil(wall + 2 * lk.ttl);
    for (int i = 0; i < lk.jobs.cap; i++) {
        struct held *j = at(i);
        if (!j->used)
            continue;
        if (!j->lapsed && floor(wall) >= j->expires)
            j->lapsed = 1;
        if (!j->renewing && now >= j->renew_at && lk.ttl > 0)
            renew(i, j, score);
    }
    pthread_mutex_unlock(&lk.mu);
}

static void on_wake(struct ev_loop *loop, ev_async *w, int revents)
{
    (void)w;
    (void)revents;
    pthread_mutex_lock(&lk.mu);
    int stop = lk.stop, changed = lk.changed;
    double interval = lk.interval;
    lk.changed = 0;
    pthread_mutex_unlock(&lk.mu);
    if (stop) {
        ev_break(loop, EVBREAK_ALL);
        return;
    }
    if (changed && interval > 0) {
        ev_timer_stop(loop, &lk.timer);
        ev_timer_set(&lk.timer, 0, interval);
        ev_timer_start(loop, &lk.timer);
    }
}

static void *run(void *arg)
{
    (void)arg;
    ev_run(lk.loop, 0);
    redis_client_free(lk.client);  /* replies unanswered end now, under mu */
    lk.client = NULL;
    ev_loop_destroy(lk.loop);
    lk.loop = NULL;
    return NULL;
}

int lease_keeper_start(const struct redis_settings *s, char *err, size_t errlen)
{
    if (lk.running)
        return 0;
    lk.loop = ev_loop_new(EVFLAG_AUTO);
    if (!lk.loop) {
        snprintf(err, errlen, "cannot make the heartbeat's event loop");
        return -1;
    }
    lk.client = redis_client_new(lk.loop, s, NULL, err, errlen);
    if (!lk.client) {
        ev_loop_destroy(lk.loop);
        lk.loop = NULL;
        return -1;
    }
    ev_async_init(&lk.wake, on_wake);
    ev_async_start(lk.loop, &lk.wake);
    ev_init(&lk.timer, on_tick);
    lk.stop = 0;
    /* signals are the vm thread's: none reaches this one */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&lk.thread, NULL, run, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the heartbeat's thread: %s", strerror(rc));
        redis_client_free(lk.client);
        lk.client = NULL;
        ev_loop_destroy(lk.loop);
        lk.loop = NULL;
        return -1;
    }
    lk.running = 1;
    ev_async_send(lk.loop, &lk.wake);  /* a heartbeat set before */
    return 0;
}

static void free_keys(void)
{
    for (int i = 0; lk.keys && i < lk.nkeys; i++)
        free(lk.keys[i]);
    free(lk.keys);
    free(lk.value);
    lk.keys = NULL;
    lk.value = NULL;
    lk.nkeys = 0;
}

int lease_keeper_beat(double interval, long long ttl_ms, double lease, const char *value,
                      const char *const *keys, int nkeys)
{
    char **copy = calloc((size_t)nkeys, sizeof *copy);
    char *value_copy = strdup(value);
    int ok = copy && value_copy;
    for (int i = 0; ok && i < nkeys; i++)
        ok = (copy[i] = strdup(keys[i])) != NULL;
    if (!ok) {
        for (int i = 0; copy && i < nkeys; i++)
            free(copy[i]);
        free(copy);
        free(value_copy);
        return -1;
    }
    pthread_mutex_lock(&lk.mu);
    free_keys();
    lk.keys = copy;
    lk.nkeys = nkeys;
    lk.value = value_copy;
    snprintf(lk.ttl_ms, sizeof lk.ttl_ms, "%lld", ttl_ms);
    lk.ttl = (double)ttl_ms / 1000;
    lk.interval = interval;
    lk.lease = lease;
    lk.beating = 1;
    lk.changed = 1;
    pthread_mutex_unlock(&lk.mu);
    if (lk.running)
        ev_async_send(lk.loop, &lk.wake);
    return 0;
}

void lease_keeper_beat_stop(void)
{
    pthread_mutex_lock(&lk.mu);
    lk.beating = 0;
    pthread_mutex_unlock(&lk.mu);
}

void lease_keeper_confirm(double sent, double sent_wall)
{
    pthread_mutex_lock(&lk.mu);
    confirm(sent, sent_wall);
    pthread_mutex_unlock(&lk.mu);
}

int lease_keeper_lease(double *since)
{
    pthread_mutex_lock(&lk.mu);
    int held = !lapsed();
    *since = lk.since;
    pthread_mutex_unlock(&lk.mu);
    return held;
}

int lease_keeper_hold(const char *key, size_t keylen, const char *member, size_t memberlen,
                      double expires)
{
    char *k = malloc(keylen + 1), *m = malloc(memberlen + 1);
    if (!k || !m) {
        free(k);
        free(m);
        return -1;
    }
    memcpy(k, key, keylen);
    k[keylen] = '\0';
    memcpy(m, member, memberlen);
    m[memberlen] = '\0';
    pthread_mutex_lock(&lk.mu);
    int handle = handles_take(&lk.jobs, sizeof(struct held));
    if (handle < 0) {
        pthread_mutex_unlock(&lk.mu);
        free(k);
        free(m);
        return -1;
    }
    struct held *j = at(handle);
    /* the first renewal half a heartbeat from now, or halfway to its expiry */
    double left = expires - system_wall_clock();
    double first = lk.ttl / 2;
    if (left / 2 < first)
        first = left > 0 ? left / 2 : 0;
    *j = (struct held){.used = 1, .gen = j->gen + 1, .key = k, .member = m, .keylen = keylen,
                       .memberlen = memberlen, .expires = expires,
                       .renew_at = system_clock() + first};
    pthread_mutex_unlock(&lk.mu);
    return handle;
}

int lease_keeper_release(int handle)
{
    pthread_mutex_lock(&lk.mu);
    if (handle < 0 || handle >= lk.jobs.cap || !at(handle)->used) {
        pthread_mutex_unlock(&lk.mu);
        return 0;
    }
    struct held *j = at(handle);
    int unsaid = j->lapsed == 1;
    char *k = j->key, *m = j->member;
    j->used = 0;
    j->key = j->member = NULL;
    handles_give(&lk.jobs, handle);
    pthread_mutex_unlock(&lk.mu);
    free(k);
    free(m);
    return unsaid;
}

int lease_keeper_lapsed(int *handles, int max)
{
    int n = 0;
    pthread_mutex_lock(&lk.mu);
    for (int i = 0; i < lk.jobs.cap && n < max; i++) {
        if (at(i)->used && at(i)->lapsed == 1) {
            at(i)->lapsed = 2;
            handles[n++] = i;
        }
    }
    pthread_mutex_unlock(&lk.mu);
    return n;
}

void lease_keeper_stop(void)
{
    if (lk.running) {
        pthread_mutex_lock(&lk.mu);
        lk.stop = 1;
        pthread_mutex_unlock(&lk.mu);
        ev_async_send(lk.loop, &lk.wake);
        pthread_join(lk.thread, NULL);
        lk.running = 0;
    }
    pthread_mutex_lock(&lk.mu);
    free_keys();
    lk.beating = 0;
    for (int i = 0; i < lk.jobs.cap; i++) {
        free(at(i)->key);
        free(at(i)->member);
    }
    handles_free(&lk.jobs);
    pthread_mutex_unlock(&lk.mu);
}
