/* config: the settings luaworker shares with the Laravel app, read from the
 * environment with Laravel's variable names and defaults, after an optional `.env`
 * file (real environment variables win). Uses dotenv, laravel_version, and
 * encrypter to check APP_KEY and APP_CIPHER. */
#ifndef LUAWORKER_CONFIG_H
#define LUAWORKER_CONFIG_H

#include <stddef.h>

#include "config/laravel_version.h"

/* TLS to Redis (REDIS_SCHEME=tls, a tls:// REDIS_HOST, a rediss:// or tls:// REDIS_URL),
 * with luaworker's own variables for what Laravel's config has no names for. */
struct redis_tls {
    int enabled;
    int verify;                   /* check the server's certificate and name (default 1) */
    char ca_file[512];            /* LUAWORKER_REDIS_CA_FILE; "": OpenSSL's default paths */
    char cert_file[512];          /* LUAWORKER_REDIS_CERT_FILE: a client certificate */
    char key_file[512];           /* LUAWORKER_REDIS_KEY_FILE: its key */
    char server_name[256];        /* LUAWORKER_REDIS_SERVER_NAME; "": the host */
};

/* One Redis connection as Laravel's config/database.php describes it. */
struct redis_settings {
    char host[256];
    int port;
    char path[256];               /* a unix socket's path, used instead of host and port; "" for TCP */
    char username[256];
    char password[512];
    int db;
    struct redis_tls tls;
    char cluster_nodes[1024];     /* REDIS_CLUSTER_NODES: a cluster's seeds, "host:port,..."
                                   * (host and port above are the first); "" for one server */
};

struct config {
    struct redis_settings queue;  /* the 'default' Redis connection: queues, failed jobs */
    struct redis_settings cache;  /* the 'cache' connection: restart key, exception counters */
    char prefix[256];             /* key prefix of both connections (options.prefix) */
    char horizon_prefix[256];     /* Horizon's keys' prefix (HORIZON_PREFIX, else <slug>_horizon:) */
    char cache_prefix[256];       /* cache store prefix, with the ':' Laravel 8-10 appends */
    char default_queue[256];      /* REDIS_QUEUE */
    char connection_name[64];     /* QUEUE_CONNECTION (database: the database queue), else "redis" */
    char timezone[64];            /* APP_TIMEZONE, for console times; "UTC" by default */
    char failed_driver[32];       /* QUEUE_FAILED_DRIVER, one of config_failed_drivers;
                                   * unset: database-uuids when DB_CONNECTION is set (an
                                   * app's .env sets it), else luaworker-redis */
    struct laravel_version laravel;  /* whose protocol and key conventions apply */
    char scripts_dir[4096];       /* where the Redis scripts were found (set by main.c); the
                                   * editor's definition file is in types/ beside it */
};

/* Where s says Redis is, for messages (never the password): host:port/db,
 * unix:path?database=db for a unix socket, or cluster host:port,... */
void config_describe_redis(const struct redis_settings *s, char *out, size_t size);

/* The failed-job stores luaworker has (runtime/queue/failed_jobs.lua), NULL-ended. */
extern const char *const config_failed_drivers[];

/* Loads env_file (NULL for none) into the environment without overriding variables
 * already set, then fills c for the given Laravel version. Returns 0, or -1 with
 * err naming the variable or file and what was expected. */
int config_load(struct config *c, const char *env_file, const struct laravel_version *laravel,
                char *err, size_t errlen);

/* Writes Laravel's Str::slug(title, sep) into out. Latin letters (U+00C0..U+024F)
 * are transliterated as Laravel does; other non-ASCII characters are dropped (set
 * REDIS_PREFIX explicitly for app names in other scripts). */
void config_slug(const char *title, char sep, char *out, size_t outlen);

#endif
