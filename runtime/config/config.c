#include "config/config.h"

#include "config/dotenv.h"
#include "lib/buffer.h"
#include "php/encrypter.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void env_assign(const char *key, const char *value, void *data)
{
    (void)data;
    setenv(key, value, 0);
}

static const char *env_lookup(const char *name, void *data)
{
    (void)data;
    return getenv(name);
}

/* The largest .env file read (a real one is a few kB; /dev/zero never ends). */
#define ENV_FILE_MAX (1024 * 1024)

static int load_env_file(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "--env-file=%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    struct buffer text = {0};
    int rc = -1;
    for (;;) {
        if (text.len > ENV_FILE_MAX) {
            snprintf(err, errlen, "--env-file=%s: larger than %d bytes: expected a Laravel .env file",
                     path, ENV_FILE_MAX);
            goto out;
        }
        if (buffer_reserve(&text, 4096)) {
            snprintf(err, errlen, "--env-file=%s: out of memory", path);
            goto out;
        }
        size_t n = fread(text.data + text.len, 1, 4096, f);
        buffer_commit(&text, n);
        if (n == 0)
            break;
    }
    if (ferror(f)) {
        snprintf(err, errlen, "--env-file=%s: read error", path);
        goto out;
    }
    rc = dotenv_parse(text.data, text.len, path, env_assign, env_lookup, NULL, err, errlen);
out:
    buffer_free(&text);
    fclose(f);
    return rc;
}

static const char *env_or(const char *name, const char *def)
{
    const char *v = getenv(name);
    return v ? v : def;
}

static int copy(char *dst, size_t size, const char *src, const char *name, char *err, size_t errlen)
{
    if (strlen(src) >= size) {
        snprintf(err, errlen, "%s: value is too long (at most %zu bytes)", name, size - 1);
        return -1;
    }
    strcpy(dst, src);
    return 0;
}

const char *const config_failed_drivers[] = {"database-uuids", "database", "file", "null",
                                             "luaworker-redis", "luaworker-database", NULL};

/* The failed-job store QUEUE_FAILED_DRIVER names, or its default, into out. */
static int failed_driver(char *out, size_t size, char *err, size_t errlen)
{
    const char *name = getenv("QUEUE_FAILED_DRIVER");
    const char *db = getenv("DB_CONNECTION");
    if (!name || !*name)
        name = db && *db ? "database-uuids" : "luaworker-redis";
    for (const char *const *d = config_failed_drivers; *d; d++)
        if (strcmp(name, *d) == 0)
            return copy(out, size, name, "QUEUE_FAILED_DRIVER", err, errlen);
    snprintf(err, errlen, "QUEUE_FAILED_DRIVER=%.200s: expected database-uuids, database, file, "
             "null, luaworker-redis or luaworker-database", name);
    return -1;
}

/* Parses a whole decimal integer from min to max. */
static int parse_int(const char *s, long min, long max, long *out)
{
    char *end;
    errno = 0;
    if (!isdigit((unsigned char)*s))
        return -1;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static int int_var(const char *name, const char *value, long min, long max, int *out,
                   char *err, size_t errlen)
{
    long v;
    if (parse_int(value, min, max, &v)) {
        snprintf(err, errlen, "%s=%s: expected a whole number from %ld to %ld", name, value, min, max);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* Applies a unix socket URL over s: unix:///path or unix:/path (predis' and
 * redis-py's form; PHP's parse_url refuses them), with the query's database or db,
 * username and password. */
static int apply_unix_url(struct redis_settings *s, const char *url, char *err, size_t errlen)
{
    const char *p = url + 5;  /* after "unix:" */
    if (strncmp(p, "//", 2) == 0)
        p += 2;
    char tmp[1024];
    if (copy(tmp, sizeof tmp, p, "REDIS_URL", err, errlen))
        return -1;
    char *query = strchr(tmp, '?');
    if (query)
        *query++ = '\0';
    if (tmp[0] != '/') {
        snprintf(err, errlen, "REDIS_URL=unix:%.300s: expected unix:///path/to/redis.sock "
                 "(the socket's absolute path)", tmp);
        return -1;
    }
    if (copy(s->path, sizeof s->path, tmp, "REDIS_URL path", err, errlen))
        return -1;
    for (char *pair = query ? strtok(query, "&") : NULL; pair; pair = strtok(NULL, "&")) {
        char *eq = strchr(pair, '=');
        if (!eq)
            continue;
        *eq = '\0';
        const char *v = eq + 1;
        int rc = 0;
        if (strcmp(pair, "database") == 0 || strcmp(pair, "db") == 0)
            rc = int_var("REDIS_URL database", v, 0, 1 << 20, &s->db, err, errlen);
        else if (strcmp(pair, "password") == 0)
            rc = copy(s->password, sizeof s->password, v, "REDIS_URL password", err, errlen);
        else if (strcmp(pair, "username") == 0)
            rc = copy(s->username, sizeof s->username, v, "REDIS_URL user", err, errlen);
        if (rc)
            return -1;
    }
    return 0;
}

/* Applies REDIS_URL (redis://[user[:password]@]host[:port][/db], or a unix socket's
 * URL) over s, as Laravel's ConfigurationUrlParser merges a url over the
 * connection's own keys. */
static int apply_url(struct redis_settings *s, const char *url, char *err, size_t errlen)
{
    if (strncmp(url, "unix:", 5) == 0)
        return apply_unix_url(s, url, err, errlen);
    const char *p = strstr(url, "://");
    int tls = !strncmp(url, "rediss://", 9) || !strncmp(url, "tls://", 6);
    if (!p || (strncmp(url, "redis://", 8) && strncmp(url, "tcp://", 6) && !tls)) {
        /* the password is never printed: the message shows the URL up to it */
        const char *at = p ? strrchr(p, '@') : NULL;
        const char *pw = at ? memchr(p + 3, ':', (size_t)(at - p - 3)) : NULL;
        int shown = pw ? (int)(pw + 1 - url) : (int)strlen(url);
        snprintf(err, errlen, "REDIS_URL=%.*s%s: expected redis://[user:password@]host[:port][/db] "
                 "(rediss:// or tls:// for TLS) or unix:///path/to/redis.sock", shown, url,
                 pw ? "***" : "");
        return -1;
    }
    /* as Laravel's RedisManager: a tls:// or tcp:// URL sets the scheme, redis:// leaves it */
    if (tls)
        s->tls.enabled = 1;
    else if (strncmp(url, "tcp://", 6) == 0)
        s->tls.enabled = 0;
    p += 3;
    char tmp[1024];
    if (copy(tmp, sizeof tmp, p, "REDIS_URL", err, errlen))
        return -1;
    char *query = strchr(tmp, '?');
    if (query)
        *query = '\0';
    char *hostpart = tmp;
    char *at = strrchr(tmp, '@');
    if (at) {
        *at = '\0';
        hostpart = at + 1;
        char *colon = strchr(tmp, ':');
        if (colon) {
            *colon = '\0';
            if (copy(s->password, sizeof s->password, colon + 1, "REDIS_URL password", err, errlen))
                return -1;
        }
        if (*tmp && copy(s->username, sizeof s->username, tmp, "REDIS_URL user", err, errlen))
            return -1;
    }
    char *path = strchr(hostpart, '/');
    if (path) {
        *path++ = '\0';
        if (*path && int_var("REDIS_URL database", path, 0, 1 << 20, &s->db, err, errlen))
            return -1;
    }
    char *colon = strrchr(hostpart, ':');
    if (colon) {
        *colon = '\0';
        if (int_var("REDIS_URL port", colon + 1, 1, 65535, &s->port, err, errlen))
            return -1;
    }
    if (*hostpart) {
        if (copy(s->host, sizeof s->host, hostpart, "REDIS_URL host", err, errlen))
            return -1;
        s->path[0] = '\0';
    }
    return 0;
}

/* A file a TLS variable names: "" when unset, else a path that must exist. */
static int tls_file(char *dst, size_t size, const char *name, char *err, size_t errlen)
{
    const char *v = env_or(name, "");
    if (copy(dst, size, v, name, err, errlen))
        return -1;
    struct stat st;
    if (*v && stat(v, &st) != 0) {
        snprintf(err, errlen, "%s=%.300s: %s", name, v, strerror(errno));
        return -1;
    }
    return 0;
}

/* The TLS settings (struct redis_tls) of a connection that uses TLS. */
static int load_redis_tls(struct redis_tls *t, char *err, size_t errlen)
{
    const char *verify = env_or("LUAWORKER_REDIS_VERIFY", "1");
    if (strcmp(verify, "1") && strcmp(verify, "0")) {
        snprintf(err, errlen, "LUAWORKER_REDIS_VERIFY=%.100s: expected 1 (check Redis' certificate "
                 "and name: the default) or 0 (do not)", verify);
        return -1;
    }
    t->verify = strcmp(verify, "1") == 0;
    if (tls_file(t->ca_file, sizeof t->ca_file, "LUAWORKER_REDIS_CA_FILE", err, errlen) ||
        tls_file(t->cert_file, sizeof t->cert_file, "LUAWORKER_REDIS_CERT_FILE", err, errlen) ||
        tls_file(t->key_file, sizeof t->key_file, "LUAWORKER_REDIS_KEY_FILE", err, errlen) ||
        copy(t->server_name, sizeof t->server_name, env_or("LUAWORKER_REDIS_SERVER_NAME", ""),
             "LUAWORKER_REDIS_SERVER_NAME", err, errlen))
        return -1;
    if (!*t->cert_file != !*t->key_file) {
        snprintf(err, errlen, "%s: expected LUAWORKER_REDIS_CERT_FILE and LUAWORKER_REDIS_KEY_FILE "
                 "together (a client certificate and its key)",
                 *t->cert_file ? "LUAWORKER_REDIS_KEY_FILE is not set" : "LUAWORKER_REDIS_CERT_FILE is not set");
        return -1;
    }
    return 0;
}

/* Where Redis is, from the app's settings: REDIS_SCHEME=unix with REDIS_PATH
 * (predis' options), a REDIS_HOST that is a socket's path (phpredis' form; its port,
 * 0 there, is not looked at), else REDIS_HOST and REDIS_PORT; REDIS_URL over them.
 * TLS: REDIS_SCHEME=tls (predis), a REDIS_HOST of tls://host or ssl://host
 * (phpredis), a rediss:// or tls:// REDIS_URL. */
static int load_redis_address(struct redis_settings *s, char *err, size_t errlen)
{
    const char *scheme = env_or("REDIS_SCHEME", "tcp");
    if (strcmp(scheme, "tls") == 0) {
        s->tls.enabled = 1;
    } else if (strcmp(scheme, "unix") == 0) {
        const char *path = env_or("REDIS_PATH", "");
        if (path[0] != '/') {
            snprintf(err, errlen, "REDIS_PATH=%.300s: expected the absolute path of Redis' unix "
                     "socket (REDIS_SCHEME=unix)", path);
            return -1;
        }
        if (copy(s->path, sizeof s->path, path, "REDIS_PATH", err, errlen))
            return -1;
    } else if (*scheme && strcmp(scheme, "tcp") != 0) {
        snprintf(err, errlen, "REDIS_SCHEME=%.100s: expected tcp, tls or unix", scheme);
        return -1;
    }
    const char *host = env_or("REDIS_HOST", "127.0.0.1");
    if (!strncmp(host, "tls://", 6) || !strncmp(host, "ssl://", 6)) {
        s->tls.enabled = 1;
        host += 6;
    }
    if (copy(s->host, sizeof s->host, host, "REDIS_HOST", err, errlen))
        return -1;
    if (!s->path[0] && s->host[0] == '/' &&
        copy(s->path, sizeof s->path, s->host, "REDIS_HOST", err, errlen))
        return -1;
    s->port = 6379;
    if (!s->path[0] && int_var("REDIS_PORT", env_or("REDIS_PORT", "6379"), 1, 65535, &s->port, err, errlen))
        return -1;
    return 0;
}

/* REDIS_CLUSTER_NODES (luaworker's own: an app lists its cluster's nodes in
 * config/database.php): "host:port,host:port", the seeds of a Redis Cluster, over
 * REDIS_HOST and REDIS_PORT (not a unix socket: a cluster's nodes announce TCP
 * addresses). A cluster has database 0 only: REDIS_DB and REDIS_CACHE_DB do not
 * apply, as Laravel ignores them there. */
static int load_redis_cluster(struct redis_settings *s, char *err, size_t errlen)
{
    const char *nodes = env_or("REDIS_CLUSTER_NODES", "");
    if (!*nodes)
        return 0;
    if (copy(s->cluster_nodes, sizeof s->cluster_nodes, nodes, "REDIS_CLUSTER_NODES", err, errlen))
        return -1;
    for (const char *p = nodes; *p;) {
        size_t len = strcspn(p, ",");
        const char *colon = NULL;
        for (const char *q = p; q < p + len; q++)
            if (*q == ':')
                colon = q;
        char *end = NULL;
        long port = colon ? strtol(colon + 1, &end, 10) : 0;
        if (!colon || colon == p || end != p + len || port < 1 || port > 65535) {
            snprintf(err, errlen, "REDIS_CLUSTER_NODES=%.300s: expected host:port of each node, "
                     "separated by commas ('%.*s' is not)", nodes, (int)len, p);
            return -1;
        }
        if (p == nodes) {
            if ((size_t)(colon - p) >= sizeof s->host) {
                snprintf(err, errlen, "REDIS_CLUSTER_NODES: host name too long");
                return -1;
            }
            memcpy(s->host, p, (size_t)(colon - p));
            s->host[colon - p] = '\0';
            s->port = (int)port;
        }
        p += len;
        if (*p == ',')
            p++;
    }
    if (s->path[0]) {
        snprintf(err, errlen, "REDIS_CLUSTER_NODES is set with a unix socket (%.300s): a "
                 "cluster's nodes are reached over TCP; unset REDIS_PATH, or REDIS_HOST's path",
                 s->path);
        return -1;
    }
    s->db = 0;
    return 0;
}

static int load_redis(struct redis_settings *s, const char *db_var, const char *db_default,
                      char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    if (load_redis_address(s, err, errlen) ||
        copy(s->username, sizeof s->username, env_or("REDIS_USERNAME", ""), "REDIS_USERNAME", err, errlen) ||
        copy(s->password, sizeof s->password, env_or("REDIS_PASSWORD", ""), "REDIS_PASSWORD", err, errlen) ||
        int_var(db_var, env_or(db_var, db_default), 0, 1 << 20, &s->db, err, errlen))
        return -1;
    /* Laravel's env() maps the literal string "null" to null. */
    if (strcmp(s->password, "null") == 0)
        s->password[0] = '\0';
    const char *url = getenv("REDIS_URL");
    if (url && *url && apply_url(s, url, err, errlen))
        return -1;
    if (s->tls.enabled && load_redis_tls(&s->tls, err, errlen))
        return -1;
    if (!s->path[0] && !*s->host) {
        snprintf(err, errlen, "REDIS_HOST=: expected a host name or IP address, or a unix socket's path");
        return -1;
    }
    return load_redis_cluster(s, err, errlen);
}

void config_describe_redis(const struct redis_settings *s, char *out, size_t size)
{
    if (s->cluster_nodes[0])
        snprintf(out, size, "cluster %s", s->cluster_nodes);
    else if (s->path[0])
        snprintf(out, size, "unix:%s?database=%d", s->path, s->db);
    else
        snprintf(out, size, "%s:%d/%d", s->host, s->port, s->db);
}

/* APP_TIMEZONE must name a zone of the tz database (TZDIR, else
 * /usr/share/zoneinfo), as PHP's timezone ids do; glibc would take any other
 * text for UTC without a word. */
static int check_timezone(const char *tz, char *err, size_t errlen)
{
    const char *dir = getenv("TZDIR");
    char path[512];
    struct stat st;
    if (strcmp(tz, "UTC") == 0)
        return 0;
    snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : "/usr/share/zoneinfo", tz);
    if (*tz && *tz != '/' && !strstr(tz, "..") && stat(path, &st) == 0 && S_ISREG(st.st_mode))
        return 0;
    snprintf(err, errlen, "APP_TIMEZONE=%s: expected a tz database zone such as UTC or "
             "Europe/Paris (none such in %s)", tz, dir && *dir ? dir : "/usr/share/zoneinfo");
    return -1;
}

/* ASCII for U+00C0..U+024F (Latin-1 letters, Latin Extended-A and -B), as Laravel's
 * Str::ascii() gives them for language "en", alphanumerics only. */
static const char *const latin_ascii[0x250 - 0xC0] = {
    "A", "A", "A", "A", "A", "A", "AE", "C", "E", "E", "E", "E", "I", "I", "I", "I", "D", "N", "O",
    "O", "O", "O", "O", "", "O", "U", "U", "U", "U", "Y", "TH", "ss", "a", "a", "a", "a", "a", "a",
    "ae", "c", "e", "e", "e", "e", "i", "i", "i", "i", "d", "n", "o", "o", "o", "o", "o", "", "o",
    "u", "u", "u", "u", "y", "th", "y", "A", "a", "A", "a", "A", "a", "C", "c", "C", "c", "C", "c",
    "C", "c", "D", "d", "D", "d", "E", "e", "E", "e", "E", "e", "E", "e", "E", "e", "G", "g", "G",
    "g", "G", "g", "G", "g", "H", "h", "H", "h", "I", "i", "I", "i", "I", "i", "I", "i", "I", "i",
    "IJ", "ij", "J", "j", "k", "k", "k", "L", "l", "L", "l", "L", "l", "L", "l", "L", "l", "N",
    "n", "N", "n", "N", "n", "n", "N", "n", "O", "o", "O", "o", "O", "o", "OE", "oe", "R", "r",
    "R", "r", "R", "r", "S", "s", "S", "s", "S", "s", "S", "s", "T", "t", "T", "t", "T", "t", "U",
    "u", "U", "u", "U", "u", "U", "u", "U", "u", "U", "u", "W", "w", "Y", "y", "Y", "Z", "z", "Z",
    "z", "Z", "z", "s", "", "B", "", "", "", "", "", "", "", "", "", "", "", "", "", "E", "", "",
    "f", "", "", "", "", "I", "", "", "l", "", "", "", "", "O", "O", "o", "", "", "", "", "", "",
    "", "", "", "", "", "", "", "U", "u", "U", "", "", "", "Z", "z", "", "", "", "", "", "", "",
    "", "", "", "", "", "", "", "", "", "LJ", "Lj", "lj", "NJ", "Nj", "nj", "A", "a", "I", "i",
    "O", "o", "U", "u", "U", "u", "U", "u", "U", "u", "U", "u", "", "", "", "", "", "", "", "", "",
    "", "", "", "", "O", "o", "", "", "", "", "j", "DZ", "Dz", "dz", "", "", "", "", "N", "n", "A",
    "a", "AE", "ae", "O", "o", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "", "",
    "", "", "", "", "", "", "", "S", "s", "T", "t", "", "", "", "", "", "", "", "", "", "", "A",
    "a", "E", "e", "", "", "", "", "O", "o", "", "", "Y", "y", "", "", "", "", "db", "qp", "A",
    "C", "c", "L", "T", "", "", "", "", "", "U", "", "E", "e", "J", "j", "", "", "", "", "Y", "y"
};

/* Appends ch to out[*n], preceded by sep when a separator is pending. */
static void slug_put(char *out, size_t outlen, size_t *n, int *pending_sep, char sep, char ch)
{
    if (*pending_sep && *n > 0 && *n + 1 < outlen)
        out[(*n)++] = sep;
    *pending_sep = 0;
    if (*n + 1 < outlen)
        out[(*n)++] = ch;
}

void config_slug(const char *title, char sep, char *out, size_t outlen)
{
    char flip = sep == '-' ? '_' : '-';
    size_t n = 0;
    int pending_sep = 0;
    if (!outlen)
        return;
    for (const unsigned char *p = (const unsigned char *)title; *p; p++) {
        int c = *p;
        if (c == flip || c == sep || isspace(c)) {
            pending_sep = 1;
        } else if (c == '@') {
            pending_sep = 1;
            slug_put(out, outlen, &n, &pending_sep, sep, 'a');
            slug_put(out, outlen, &n, &pending_sep, sep, 't');
            pending_sep = 1;
        } else if (c < 0x80) {
            if (isalnum(c))
                slug_put(out, outlen, &n, &pending_sep, sep, (char)tolower(c));
        } else if (c >= 0xC3 && c <= 0xC9 && (p[1] & 0xC0) == 0x80) {
            unsigned cp = ((unsigned)(c & 0x1F) << 6) | (p[1] & 0x3F);
            p++;
            if (cp >= 0xC0 && cp < 0x250)
                for (const char *a = latin_ascii[cp - 0xC0]; *a; a++)
                    slug_put(out, outlen, &n, &pending_sep, sep, (char)tolower((unsigned char)*a));
        }
        /* other non-ASCII characters are dropped */
    }
    out[n] = '\0';
}

int config_load(struct config *c, const char *env_file, const struct laravel_version *laravel,
                char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    if (env_file && load_env_file(env_file, err, errlen))
        return -1;
    c->laravel = *laravel;
    if (load_redis(&c->queue, "REDIS_DB", "0", err, errlen) ||
        load_redis(&c->cache, "REDIS_CACHE_DB", "1", err, errlen))
        return -1;

    char slug[200];
    config_slug(env_or("APP_NAME", "laravel"), '_', slug, sizeof slug);
    const char *prefix = getenv("REDIS_PREFIX");
    if (prefix) {
        if (copy(c->prefix, sizeof c->prefix, prefix, "REDIS_PREFIX", err, errlen))
            return -1;
    } else {
        snprintf(c->prefix, sizeof c->prefix, "%s_database_", slug);
    }
    /* Horizon's config/horizon.php: HORIZON_PREFIX, else the slug and "_horizon:"
     * (on its own connection: REDIS_PREFIX does not apply) */
    const char *horizon = getenv("HORIZON_PREFIX");
    if (horizon) {
        if (copy(c->horizon_prefix, sizeof c->horizon_prefix, horizon, "HORIZON_PREFIX", err, errlen))
            return -1;
    } else {
        snprintf(c->horizon_prefix, sizeof c->horizon_prefix, "%s_horizon:", slug);
    }

    /* config/cache.php: 8.x "<slug>_cache", 11.x+ "<slug>_cache_"; Laravel 8-10's
     * RedisStore appends ':' to a non-empty prefix, 11+ uses it as it is. */
    char cache_prefix[256];
    const char *cp = getenv("CACHE_PREFIX");
    if (cp) {
        if (copy(cache_prefix, sizeof cache_prefix, cp, "CACHE_PREFIX", err, errlen))
            return -1;
    } else {
        snprintf(cache_prefix, sizeof cache_prefix, "%s_cache%s", slug,
                 laravel->major >= 11 ? "_" : "");
    }
    snprintf(c->cache_prefix, sizeof c->cache_prefix, "%s%s", cache_prefix,
             laravel->major < 11 && *cache_prefix ? ":" : "");

    if (copy(c->default_queue, sizeof c->default_queue, env_or("REDIS_QUEUE", "default"),
             "REDIS_QUEUE", err, errlen) ||
        copy(c->timezone, sizeof c->timezone, env_or("APP_TIMEZONE", "UTC"), "APP_TIMEZONE",
             err, errlen) ||
        check_timezone(c->timezone, err, errlen) ||
        encrypter_check_app_key(getenv("APP_KEY"), getenv("APP_CIPHER"), err, errlen))
        return -1;
    if (failed_driver(c->failed_driver, sizeof c->failed_driver, err, errlen))
        return -1;
    const char *qc = env_or("QUEUE_CONNECTION", "redis");
    if (strcmp(qc, "sync") == 0 || strcmp(qc, "sqs") == 0 ||
        strcmp(qc, "beanstalkd") == 0 || strcmp(qc, "null") == 0)
        qc = "redis";
    return copy(c->connection_name, sizeof c->connection_name, qc, "QUEUE_CONNECTION", err, errlen);
}
