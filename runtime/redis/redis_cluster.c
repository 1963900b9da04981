#include "redis/redis_cluster.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include <ev.h>

#include "redis/key_slot.h"

/* A process meets at most MAX_NODES addresses of nodes; a map naming more is not
 * read (the last one stays). */
enum { MAX_NODES = 256, MAX_REDIRECTS = 5 };

/* The least time between two reads of the map. */
#define REFRESH_INTERVAL 0.25
/* A held command is sent again after this, doubling up to HOLD_MAX_DELAY. */
#define HOLD_FIRST_DELAY 0.1
#define HOLD_MAX_DELAY 1.0

struct node {
    struct redis_settings settings;  /* host and port of the node; database 0 */
    struct redis_conn *conn;         /* made on first use */
    int serving;                     /* a master of slots in the last map read */
};

/* A command on its way: its own copy of the arguments (for a script, the keys and
 * arguments after the key count), to be sent again after a redirection. */
struct routed {
    struct redis_cluster *cluster;
    redis_conn_reply_fn *fn;
    void *data;
    const struct script *script;     /* NULL for a command */
    int nkeys;
    int keep;
    int slot;                        /* -1: any node */
    int node;                        /* where it was sent last */
    int ask_node;                    /* -1, or the node an ASK named, for the next send */
    int redirects;
    int argc;
    char **argv;
    size_t *argvlen;
    STAILQ_ENTRY(routed) link;       /* in cluster->held */
};

STAILQ_HEAD(routed_list, routed);

struct redis_cluster {
    struct ev_loop *loop;
    struct redis_settings settings;  /* of the seeds: user, password, TLS */
    const struct scripts *scripts;
    char describe[sizeof ((struct redis_settings *)0)->cluster_nodes + 16];
    struct node *nodes[MAX_NODES];   /* the seeds first; each allocated when met */
    int nnodes;
    int16_t owner[REDIS_SLOTS];      /* the node serving each slot, -1 unknown */
    int answered;                    /* the node that answered the last map read */
    unsigned long changes;           /* a slot's master changed, so many times */
    int refreshing;                  /* a CLUSTER SLOTS in flight */
    int refresh_tries;               /* nodes asked in this read */
    int refresh_next;                /* the next node to ask */
    double refreshed_at;             /* ev_now when the last read started */
    ev_timer refresh_timer;          /* a read wanted before REFRESH_INTERVAL passed */
    struct routed_list held;         /* REDIS_CONN_KEEP commands whose node was lost */
    ev_timer resend_timer;
    double resend_delay;
    long long max_string;
    char max_string_what[64];
    int freeing;
};

static void start_refresh(struct redis_cluster *c);
static void on_routed(void *data, const redisReply *reply, const char *lost,
                      enum redis_conn_loss loss);

/* The node at host:port, added when new. Returns its index, or -1 when there are
 * MAX_NODES already. */
static int node_at(struct redis_cluster *c, const char *host, size_t hostlen, int port)
{
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i]->settings.port == port && strlen(c->nodes[i]->settings.host) == hostlen &&
            memcmp(c->nodes[i]->settings.host, host, hostlen) == 0)
            return i;
    if (c->nnodes == MAX_NODES || hostlen >= sizeof c->nodes[0]->settings.host)
        return -1;
    struct node *n = calloc(1, sizeof *n);
    if (!n)
        return -1;
    c->nodes[c->nnodes] = n;
    n->settings = c->settings;
    memcpy(n->settings.host, host, hostlen);
    n->settings.host[hostlen] = '\0';
    n->settings.port = port;
    n->settings.db = 0;
    n->settings.path[0] = '\0';
    n->settings.cluster_nodes[0] = '\0';
    return c->nnodes++;
}

static struct redis_conn *node_conn(struct redis_cluster *c, int i)
{
    struct node *n = c->nodes[i];
    if (!n->conn && (n->conn = redis_conn_new(c->loop, &n->settings, c->scripts)))
        redis_conn_limit_strings(n->conn, c->max_string, c->max_string_what);
    return n->conn;
}

/* The node for slot: its master in the map, else the node that answered last. */
static int node_for(const struct redis_cluster *c, int slot)
{
    if (slot >= 0 && c->owner[slot] >= 0)
        return c->owner[slot];
    return c->answered;
}

/* Asks for a read of the map: now, or once REFRESH_INTERVAL has passed since the
 * last one started; nothing when one is under way or already wanted. */
static void want_refresh(struct redis_cluster *c)
{
    if (c->refreshing || ev_is_active(&c->refresh_timer) || c->freeing)
        return;
    double since = ev_now(c->loop) - c->refreshed_at;
    if (since >= REFRESH_INTERVAL) {
        start_refresh(c);
        return;
    }
    ev_timer_set(&c->refresh_timer, REFRESH_INTERVAL - since, 0.);
    ev_timer_start(c->loop, &c->refresh_timer);
}

static void on_refresh_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    start_refresh(w->data);
}

/* ---- commands ---- */

static struct routed *routed_new(struct redis_cluster *c, int slot, const struct script *sc,
                                 int nkeys, int keep, int argc, const char **argv,
                                 const size_t *argvlen, redis_conn_reply_fn *fn, void *data)
{
    size_t bytes = 0;
    for (int i = 0; i < argc; i++)
        bytes += argvlen[i] + 1;
    struct routed *r = calloc(1, sizeof *r + (size_t)argc * (sizeof(char *) + sizeof(size_t)) + bytes);
    if (!r)
        return NULL;
    r->cluster = c;
    r->fn = fn;
    r->data = data;
    r->script = sc;
    r->nkeys = nkeys;
    r->keep = keep;
    r->slot = slot;
    r->ask_node = -1;
    r->argc = argc;
    r->argv = (char **)(r + 1);
    r->argvlen = (size_t *)(r->argv + argc);
    char *at = (char *)(r->argvlen + argc);
    for (int i = 0; i < argc; i++) {
        memcpy(at, argv[i], argvlen[i]);
        at[argvlen[i]] = '\0';
        r->argv[i] = at;
        r->argvlen[i] = argvlen[i];
        at += argvlen[i] + 1;
    }
    return r;
}

static void ignore_reply(void *data, const redisReply *reply, const char *lost,
                         enum redis_conn_loss loss)
{
    (void)data;
    (void)reply;
    (void)lost;
    (void)loss;
}

/* Sends r to its node. Returns 0, or -1 with err set (r not sent). */
static int send_routed(struct redis_cluster *c, struct routed *r, char *err, size_t errlen)
{
    int i = r->ask_node >= 0 ? r->ask_node : node_for(c, r->slot);
    struct redis_conn *conn = node_conn(c, i);
    if (!conn) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    r->node = i;
    if (r->ask_node >= 0) {
        static const char *const asking[] = {"ASKING"};
        static const size_t asking_len[] = {6};
        r->ask_node = -1;
        if (redis_conn_command(conn, 0, 1, (const char **)asking, asking_len, ignore_reply, NULL,
                               err, errlen))
            return -1;
    }
    if (r->script)
        return redis_conn_script(conn, r->script, r->nkeys, r->argc, (const char **)r->argv,
                                 r->argvlen, on_routed, r, err, errlen);
    return redis_conn_command(conn, 0, r->argc, (const char **)r->argv, r->argvlen, on_routed, r,
                              err, errlen);
}

/* Holds a REDIS_CONN_KEEP command until its node is known again. */
static void hold(struct redis_cluster *c, struct routed *r)
{
    STAILQ_INSERT_TAIL(&c->held, r, link);
    if (!ev_is_active(&c->resend_timer)) {
        ev_timer_set(&c->resend_timer, c->resend_delay, 0.);
        ev_timer_start(c->loop, &c->resend_timer);
    }
}

/* Sends the held commands again, in the order they came. */
static void resend_held(struct redis_cluster *c)
{
    struct routed_list again = STAILQ_HEAD_INITIALIZER(again);
    STAILQ_CONCAT(&again, &c->held);
    struct routed *r;
    while ((r = STAILQ_FIRST(&again))) {
        STAILQ_REMOVE_HEAD(&again, link);
        char err[256];
        if (send_routed(c, r, err, sizeof err))
            hold(c, r);
    }
}

static void on_resend_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)revents;
    struct redis_cluster *c = w->data;
    c->resend_delay = c->resend_delay * 2 > HOLD_MAX_DELAY ? HOLD_MAX_DELAY : c->resend_delay * 2;
    want_refresh(c);
    resend_held(c);
}

/* Reads "MOVED <slot> <host>:<port>" or "ASK ...": the slot and the node it names
 * (host empty: the node that replied). Returns the node's index, or -1. */
static int redirect_node(struct redis_cluster *c, const redisReply *reply, const char *kind,
                         int from, int *slot)
{
    size_t klen = strlen(kind);
    if (reply->len < klen + 1 || memcmp(reply->str, kind, klen) != 0 || reply->str[klen] != ' ')
        return -1;
    char text[320];
    snprintf(text, sizeof text, "%.*s", (int)reply->len, reply->str);
    char *endpoint = strchr(text + klen + 1, ' ');
    char *colon = endpoint ? strrchr(endpoint, ':') : NULL;
    if (!colon)
        return -1;
    *slot = atoi(text + klen + 1);
    int port = atoi(colon + 1);
    if (*slot < 0 || *slot >= REDIS_SLOTS || port <= 0)
        return -1;
    const char *host = endpoint + 1;
    size_t hostlen = (size_t)(colon - host);
    if (hostlen == 0) {
        host = c->nodes[from]->settings.host;
        hostlen = strlen(host);
    }
    return node_at(c, host, hostlen, port);
}

static void deliver(struct routed *r, const redisReply *reply, const char *lost,
                    enum redis_conn_loss loss)
{
    r->fn(r->data, reply, lost, loss);
    free(r);
}

static void on_routed(void *data, const redisReply *reply, const char *lost,
                      enum redis_conn_loss loss)
{
    struct routed *r = data;
    struct redis_cluster *c = r->cluster;
    if (c->freeing) {
        deliver(r, reply, lost, loss);
        return;
    }
    if (reply && reply->type == REDIS_REPLY_ERROR && r->redirects < MAX_REDIRECTS) {
        int slot, to;
        if ((to = redirect_node(c, reply, "MOVED", r->node, &slot)) >= 0) {
            if (c->owner[slot] != to)
                c->changes++;
            c->owner[slot] = (int16_t)to;
            want_refresh(c);
        } else if ((to = redirect_node(c, reply, "ASK", r->node, &slot)) >= 0) {
            r->ask_node = to;
        }
        if (to >= 0) {
            char err[256];
            r->redirects++;
            if (send_routed(c, r, err, sizeof err) == 0)
                return;
            if (r->keep) {
                hold(c, r);
                return;
            }
            deliver(r, NULL, err, REDIS_CONN_UNSENT);
            return;
        }
    }
    if (reply && reply->type == REDIS_REPLY_ERROR &&
        (strncmp(reply->str, "CLUSTERDOWN", 11) == 0 || strncmp(reply->str, "TRYAGAIN", 8) == 0))
        want_refresh(c);
    if (!reply) {
        want_refresh(c);
        if (r->keep) {
            hold(c, r);
            return;
        }
    } else if (r->keep) {
        c->resend_delay = HOLD_FIRST_DELAY;
    }
    deliver(r, reply, lost, loss);
}

static int route(struct redis_cluster *c, int slot, const struct script *sc, int nkeys, int keep,
                 int argc, const char **argv, const size_t *argvlen, redis_conn_reply_fn *fn,
                 void *data, char *err, size_t errlen)
{
    if (slot >= 0 && c->owner[slot] < 0)
        want_refresh(c);  /* the first command of a process reads the map */
    struct routed *r = routed_new(c, slot, sc, nkeys, keep, argc, argv, argvlen, fn, data);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (send_routed(c, r, err, errlen)) {
        if (keep) {
            want_refresh(c);
            hold(c, r);
            return 0;
        }
        free(r);
        return -1;
    }
    return 0;
}

int redis_cluster_command(struct redis_cluster *c, int slot, int flags, int argc,
                          const char **argv, const size_t *argvlen, redis_conn_reply_fn *fn,
                          void *data, char *err, size_t errlen)
{
    return route(c, slot, NULL, 0, (flags & REDIS_CONN_KEEP) != 0, argc, argv, argvlen, fn, data,
                 err, errlen);
}

int redis_cluster_script(struct redis_cluster *c, int slot, const struct script *sc, int nkeys,
                         int argc, const char **argv, const size_t *argvlen,
                         redis_conn_reply_fn *fn, void *data, char *err, size_t errlen)
{
    return route(c, slot, sc, nkeys, 0, argc, argv, argvlen, fn, data, err, errlen);
}

/* ---- the map ---- */

struct map_read {
    struct redis_cluster *cluster;
    int node;
};

/* Reads a CLUSTER SLOTS reply from node `from` into c's map. Returns 0, or -1 when
 * it is not one (the map stays). */
static int read_map(struct redis_cluster *c, const redisReply *reply, int from)
{
    if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements == 0)
        return -1;
    int16_t owner[REDIS_SLOTS];
    memset(owner, 0xff, sizeof owner);
    for (size_t e = 0; e < reply->elements; e++) {
        const redisReply *range = reply->element[e];
        if (range->type != REDIS_REPLY_ARRAY || range->elements < 3 ||
            range->element[0]->type != REDIS_REPLY_INTEGER ||
            range->element[1]->type != REDIS_REPLY_INTEGER ||
            range->element[2]->type != REDIS_REPLY_ARRAY || range->element[2]->elements < 2)
            return -1;
        const redisReply *master = range->element[2];
        if (master->element[0]->type != REDIS_REPLY_STRING ||
            master->element[1]->type != REDIS_REPLY_INTEGER)
            return -1;
        long long first = range->element[0]->integer, last = range->element[1]->integer;
        const char *host = master->element[0]->str;
        size_t hostlen = master->element[0]->len;
        if (hostlen == 0 || (hostlen == 1 && host[0] == '?')) {  /* "the node you asked" */
            host = c->nodes[from]->settings.host;
            hostlen = strlen(host);
        }
        int n = node_at(c, host, hostlen, (int)master->element[1]->integer);
        if (n < 0 || first < 0 || last >= REDIS_SLOTS || first > last)
            return -1;
        for (long long s = first; s <= last; s++)
            owner[s] = (int16_t)n;
    }
    for (int i = 0; i < c->nnodes; i++)
        c->nodes[i]->serving = 0;
    for (int s = 0; s < REDIS_SLOTS; s++) {
        if (c->owner[s] != owner[s])
            c->changes++;
        c->owner[s] = owner[s];
        if (owner[s] >= 0)
            c->nodes[owner[s]]->serving = 1;
    }
    return 0;
}

static void ask_next(struct redis_cluster *c);

static void on_map(void *data, const redisReply *reply, const char *lost,
                   enum redis_conn_loss loss)
{
    (void)lost;
    (void)loss;
    struct map_read *m = data;
    struct redis_cluster *c = m->cluster;
    int from = m->node;
    free(m);
    if (c->freeing)
        return;
    if (read_map(c, reply, from) != 0) {
        ask_next(c);
        return;
    }
    c->answered = from;
    c->refreshing = 0;
    resend_held(c);
}

/* Asks the next node for the map; after every node was asked in vain, gives up
 * until the next want_refresh. */
static void ask_next(struct redis_cluster *c)
{
    static const char *const argv[] = {"CLUSTER", "SLOTS"};
    static const size_t argvlen[] = {7, 5};
    while (c->refresh_tries < c->nnodes) {
        int i = c->refresh_next++ % c->nnodes;
        c->refresh_tries++;
        struct redis_conn *conn = node_conn(c, i);
        struct map_read *m = malloc(sizeof *m);
        if (!conn || !m) {
            free(m);
            continue;
        }
        m->cluster = c;
        m->node = i;
        char err[256];
        if (redis_conn_command(conn, 0, 2, (const char **)argv, argvlen, on_map, m, err,
                               sizeof err) == 0)
            return;
        free(m);
    }
    c->refreshing = 0;
}

static void start_refresh(struct redis_cluster *c)
{
    if (c->refreshing || c->freeing)
        return;
    c->refreshing = 1;
    c->refresh_tries = 0;
    c->refresh_next = c->answered;
    c->refreshed_at = ev_now(c->loop);
    ask_next(c);
}

/* ---- the connection ---- */

struct redis_cluster *redis_cluster_new(struct ev_loop *loop, const struct redis_settings *s,
                                        const struct scripts *scripts, char *err,
                                        size_t errlen)
{
    struct redis_cluster *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->loop = loop;
    c->settings = *s;
    c->scripts = scripts;
    c->resend_delay = HOLD_FIRST_DELAY;
    c->refreshed_at = -1e9;
    memset(c->owner, 0xff, sizeof c->owner);
    STAILQ_INIT(&c->held);
    ev_timer_init(&c->refresh_timer, on_refresh_timer, 0., 0.);
    c->refresh_timer.data = c;
    ev_timer_init(&c->resend_timer, on_resend_timer, 0., 0.);
    c->resend_timer.data = c;
    snprintf(c->describe, sizeof c->describe, "cluster %s", s->cluster_nodes);
    const char *p = s->cluster_nodes;
    while (*p) {
        size_t len = strcspn(p, ",");
        const char *colon = memchr(p, ':', len);
        const char *last = colon;
        while (last && (colon = memchr(last + 1, ':', len - (size_t)(last + 1 - p))))
            last = colon;
        int port = last ? atoi(last + 1) : 0;
        if (!last || last == p || port <= 0 || port > 65535 || node_at(c, p, (size_t)(last - p), port) < 0) {
            snprintf(err, errlen, "REDIS_CLUSTER_NODES: '%.*s' is not host:port", (int)len, p);
            redis_cluster_free(c);
            return NULL;
        }
        p += len;
        if (*p == ',')
            p++;
    }
    if (c->nnodes == 0) {
        snprintf(err, errlen, "REDIS_CLUSTER_NODES names no node");
        redis_cluster_free(c);
        return NULL;
    }
    return c;
}

void redis_cluster_limit_strings(struct redis_cluster *c, long long bytes, const char *what)
{
    c->max_string = bytes;
    snprintf(c->max_string_what, sizeof c->max_string_what, "%s", what);
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i]->conn)
            redis_conn_limit_strings(c->nodes[i]->conn, bytes, what);
}

unsigned long redis_cluster_connects(const struct redis_cluster *c)
{
    unsigned long n = c->changes;
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i]->conn)
            n += redis_conn_connects(c->nodes[i]->conn);
    return n;
}

int redis_cluster_up(const struct redis_cluster *c)
{
    if (!STAILQ_EMPTY(&c->held))
        return 0;
    int mapped = 0;
    for (int i = 0; i < c->nnodes; i++)
        mapped |= c->nodes[i]->serving;
    for (int i = 0; i < c->nnodes; i++) {
        const struct node *n = c->nodes[i];
        if (n->conn && (n->serving || !mapped) && !redis_conn_up(n->conn))
            return 0;
    }
    return 1;
}

void redis_cluster_flush(struct redis_cluster *c)
{
    for (int i = 0; i < c->nnodes; i++)
        if (c->nodes[i]->conn)
            redis_conn_flush(c->nodes[i]->conn);
}

const char *redis_cluster_describe(const struct redis_cluster *c)
{
    return c->describe;
}

const struct redis_settings *redis_cluster_node_settings(struct redis_cluster *c, int slot)
{
    return &c->nodes[node_for(c, slot)]->settings;
}

void redis_cluster_free(struct redis_cluster *c)
{
    if (!c)
        return;
    c->freeing = 1;
    ev_timer_stop(c->loop, &c->refresh_timer);
    ev_timer_stop(c->loop, &c->resend_timer);
    for (int i = 0; i < c->nnodes; i++)
        redis_conn_free(c->nodes[i]->conn);
    for (int i = 0; i < c->nnodes; i++)
        free(c->nodes[i]);
    struct routed *r;
    while ((r = STAILQ_FIRST(&c->held))) {
        STAILQ_REMOVE_HEAD(&c->held, link);
        deliver(r, NULL, "connection closed", REDIS_CONN_LOST);
    }
    free(c);
}
