/* redis_client: the connection to Redis that the rest of luaworker uses, whatever
 * Redis is: one server (a redis_conn, over TCP, a unix socket or TLS) or a Redis
 * Cluster (a redis_cluster, when the settings name cluster nodes), where each
 * command goes to the master of its key's slot. The contracts are redis_conn's;
 * on one server each call is the redis_conn call, nothing added.
 *
 * Where a command goes on a cluster: a script call by its first key; a command by
 * its first key (key_slot_command_key), or by the key given with
 * redis_client_command_at; a command or script with no key by the client's pinned
 * key (redis_client_pin), else to any node. Uses redis_conn, redis_cluster and
 * key_slot. */
#ifndef LUAWORKER_REDIS_CLIENT_H
#define LUAWORKER_REDIS_CLIENT_H

#include <stddef.h>

#include "config/config.h"
#include "redis/redis_conn.h"
#include "redis/scripts.h"

struct ev_loop;
struct redis_client;

/* A client for s, nothing connected yet; NULL with err set when out of memory or
 * the cluster's seed list cannot be read. scripts (NULL for none) must outlive it. */
struct redis_client *redis_client_new(struct ev_loop *loop, const struct redis_settings *s,
                                      const struct scripts *scripts, char *err, size_t errlen);

void redis_client_limit_strings(struct redis_client *c, long long bytes, const char *what);

/* As redis_conn_command. */
int redis_client_command(struct redis_client *c, int flags, int argc, const char **argv,
                         const size_t *argvlen, redis_conn_reply_fn *fn, void *data, char *err,
                         size_t errlen);

/* As redis_conn_command, sent where key[0..keylen) lives (for commands that name
 * no key but must reach a given node: CLIENT UNBLOCK of a BLPOP, WAIT after a
 * write). */
int redis_client_command_at(struct redis_client *c, const char *key, size_t keylen, int flags,
                            int argc, const char **argv, const size_t *argvlen,
                            redis_conn_reply_fn *fn, void *data, char *err, size_t errlen);

/* As redis_conn_script. */
int redis_client_script(struct redis_client *c, const struct script *sc, int nkeys, int argc,
                        const char **argv, const size_t *argvlen, redis_conn_reply_fn *fn,
                        void *data, char *err, size_t errlen);

/* Commands and scripts of c that name no key go where key lives from now on (on a
 * cluster; nothing on one server). A change of node counts as a new connection
 * for redis_client_connects. */
void redis_client_pin(struct redis_client *c, const char *key, size_t keylen);

/* The settings of the server c's keyless commands reach (see redis_client_pin),
 * for a connection of another kind to it (a subscription). */
const struct redis_settings *redis_client_settings(struct redis_client *c);

/* Whether c is a cluster's. */
int redis_client_is_cluster(const struct redis_client *c);

unsigned long redis_client_connects(const struct redis_client *c);
int redis_client_up(const struct redis_client *c);
void redis_client_flush(struct redis_client *c);
const char *redis_client_describe(const struct redis_client *c);
void redis_client_free(struct redis_client *c);

#endif
