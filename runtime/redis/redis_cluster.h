/* redis_cluster: the masters of a Redis Cluster behind one connection. Each command
 * goes to the master that serves its hash slot (key_slot), by a map of the slots
 * read with CLUSTER SLOTS from the seed nodes (redis_settings.cluster_nodes) and
 * the nodes they name; a node's connection is a redis_conn of its own (AUTH, TLS,
 * scripts loaded as on one Redis; database 0, a cluster's only one).
 *
 * The map is read again, at most every REFRESH_INTERVAL, after a MOVED reply, a
 * CLUSTERDOWN or TRYAGAIN, or a command lost with its node: what a failover looks
 * like. A MOVED reply is followed at once to the node it names, an ASK reply with
 * ASKING to that node (at most MAX_REDIRECTS times a command); a command for a slot
 * not yet in the map goes to a node that answered, which redirects it.
 *
 * Replies and losses reach the caller as from redis_conn (redis_conn_reply_fn),
 * except that a REDIS_CONN_KEEP command is never lost with its node: it is held and
 * sent again, to the slot's master as the map then says, after the next map read
 * or a backoff of 0.1 s doubling up to 1 s. Uses redis_conn, key_slot, libev. */
#ifndef LUAWORKER_REDIS_CLUSTER_H
#define LUAWORKER_REDIS_CLUSTER_H

#include <stddef.h>

#include "config/config.h"
#include "redis/redis_conn.h"
#include "redis/scripts.h"

struct ev_loop;
struct redis_cluster;

/* A cluster reached through s->cluster_nodes ("host:port,host:port"), nothing
 * connected yet; NULL when out of memory or no seed could be read (err says). */
struct redis_cluster *redis_cluster_new(struct ev_loop *loop, const struct redis_settings *s,
                                        const struct scripts *scripts, char *err,
                                        size_t errlen);

/* As redis_conn_limit_strings, for every node's connection. */
void redis_cluster_limit_strings(struct redis_cluster *c, long long bytes, const char *what);

/* As redis_conn_command and redis_conn_script, sent to the master of slot (-1:
 * any node that answers). */
int redis_cluster_command(struct redis_cluster *c, int slot, int flags, int argc,
                          const char **argv, const size_t *argvlen, redis_conn_reply_fn *fn,
                          void *data, char *err, size_t errlen);
int redis_cluster_script(struct redis_cluster *c, int slot, const struct script *sc, int nkeys,
                         int argc, const char **argv, const size_t *argvlen,
                         redis_conn_reply_fn *fn, void *data, char *err, size_t errlen);

/* Connections the nodes opened so far, plus the map's changes of a slot's master:
 * a change means a command for some slot may now reach a connection without the
 * client state an earlier one had. */
unsigned long redis_cluster_connects(const struct redis_cluster *c);

/* No command held, and the connection of every master serving slots in the map
 * (of every node used, before the map is read) is up. */
int redis_cluster_up(const struct redis_cluster *c);

/* Writes what is queued on every node's connection now. */
void redis_cluster_flush(struct redis_cluster *c);

/* "cluster host:port,host:port" (the seeds; never the password). */
const char *redis_cluster_describe(const struct redis_cluster *c);

/* The settings of the node slot's commands go to now (-1: any), for a connection
 * of another kind to the same node (a subscription). */
const struct redis_settings *redis_cluster_node_settings(struct redis_cluster *c, int slot);

/* Closes every node's connection; held commands get fn(data, NULL, "connection
 * closed", REDIS_CONN_LOST), as redis_conn_free gives its kept ones. */
void redis_cluster_free(struct redis_cluster *c);

#endif
