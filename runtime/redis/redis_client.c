#include "redis/redis_client.h"

#include <stdio.h>
#include <stdlib.h>

#include "redis/key_slot.h"
#include "redis/redis_cluster.h"

struct redis_client {
    struct redis_settings settings;
    struct redis_conn *conn;        /* one server, or */
    struct redis_cluster *cluster;  /* a cluster's masters */
    int pinned;                     /* the slot of the pinned key, -1 when none */
    unsigned long repins;           /* the pinned key moved to another slot, so often */
};

struct redis_client *redis_client_new(struct ev_loop *loop, const struct redis_settings *s,
                                      const struct scripts *scripts, char *err, size_t errlen)
{
    struct redis_client *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->pinned = -1;
    c->settings = *s;
    if (s->cluster_nodes[0])
        c->cluster = redis_cluster_new(loop, s, scripts, err, errlen);
    else if (!(c->conn = redis_conn_new(loop, s, scripts)))
        snprintf(err, errlen, "out of memory");
    if (!c->conn && !c->cluster) {
        free(c);
        return NULL;
    }
    return c;
}

void redis_client_limit_strings(struct redis_client *c, long long bytes, const char *what)
{
    if (c->cluster)
        redis_cluster_limit_strings(c->cluster, bytes, what);
    else
        redis_conn_limit_strings(c->conn, bytes, what);
}

int redis_client_command(struct redis_client *c, int flags, int argc, const char **argv,
                         const size_t *argvlen, redis_conn_reply_fn *fn, void *data, char *err,
                         size_t errlen)
{
    if (!c->cluster)
        return redis_conn_command(c->conn, flags, argc, argv, argvlen, fn, data, err, errlen);
    int k = key_slot_command_key(argc, argv, argvlen);
    int slot = k >= 0 ? key_slot(argv[k], argvlen[k]) : c->pinned;
    return redis_cluster_command(c->cluster, slot, flags, argc, argv, argvlen, fn, data, err,
                                 errlen);
}

int redis_client_command_at(struct redis_client *c, const char *key, size_t keylen, int flags,
                            int argc, const char **argv, const size_t *argvlen,
                            redis_conn_reply_fn *fn, void *data, char *err, size_t errlen)
{
    if (!c->cluster)
        return redis_conn_command(c->conn, flags, argc, argv, argvlen, fn, data, err, errlen);
    return redis_cluster_command(c->cluster, key_slot(key, keylen), flags, argc, argv, argvlen,
                                 fn, data, err, errlen);
}

int redis_client_script(struct redis_client *c, const struct script *sc, int nkeys, int argc,
                        const char **argv, const size_t *argvlen, redis_conn_reply_fn *fn,
                        void *data, char *err, size_t errlen)
{
    if (!c->cluster)
        return redis_conn_script(c->conn, sc, nkeys, argc, argv, argvlen, fn, data, err, errlen);
    int slot = nkeys > 0 ? key_slot(argv[0], argvlen[0]) : c->pinned;
    return redis_cluster_script(c->cluster, slot, sc, nkeys, argc, argv, argvlen, fn, data, err,
                                errlen);
}

void redis_client_pin(struct redis_client *c, const char *key, size_t keylen)
{
    int slot = key_slot(key, keylen);
    if (c->cluster && slot != c->pinned) {
        c->pinned = slot;
        c->repins++;
    }
}

const struct redis_settings *redis_client_settings(struct redis_client *c)
{
    return c->cluster ? redis_cluster_node_settings(c->cluster, c->pinned) : &c->settings;
}

int redis_client_is_cluster(const struct redis_client *c)
{
    return c->cluster != NULL;
}

unsigned long redis_client_connects(const struct redis_client *c)
{
    return c->cluster ? redis_cluster_connects(c->cluster) + c->repins
                      : redis_conn_connects(c->conn);
}

int redis_client_up(const struct redis_client *c)
{
    return c->cluster ? redis_cluster_up(c->cluster) : redis_conn_up(c->conn);
}

void redis_client_flush(struct redis_client *c)
{
    if (c->cluster)
        redis_cluster_flush(c->cluster);
    else
        redis_conn_flush(c->conn);
}

const char *redis_client_describe(const struct redis_client *c)
{
    return c->cluster ? redis_cluster_describe(c->cluster) : redis_conn_describe(c->conn);
}

void redis_client_free(struct redis_client *c)
{
    if (!c)
        return;
    redis_cluster_free(c->cluster);
    redis_conn_free(c->conn);
    free(c);
}
