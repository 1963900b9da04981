#include "config/cli.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define COMMON_OPTIONS                                                                    \
    {"env-file", CLI_STRING, NULL, "read a Laravel .env file (real environment variables win)"}, \
    {"scripts", CLI_STRING, NULL, "directory of the Redis scripts (default: scripts/ beside the binary)"}, \
    {"laravel", CLI_STRING, NULL, "Laravel version whose protocol applies, as 12.51, or 12 for its newest (default: the app's, from composer.lock or vendor/ beside --env-file, else 8.83)"}, \
    {"laravel-version", CLI_STRING, NULL, "the same as --laravel (its older name)"}

static const struct cli_option work_options[] = {
    {"queue", CLI_STRING, NULL, "queues to work, comma separated, in priority order (default: REDIS_QUEUE or 'default')"},
    {"name", CLI_STRING, "default", "worker name (kept for queue:work compatibility)"},
    {"daemon", CLI_FLAG, NULL, "no effect (deprecated in queue:work too)"},
    {"once", CLI_FLAG, NULL, "process one poll of the queues and exit"},
    {"stop-when-empty", CLI_FLAG, NULL, "exit when the queues are empty"},
    {"delay", CLI_BACKOFF, "0", "deprecated alias of --backoff; the larger of the two applies"},
    {"backoff", CLI_BACKOFF, "0", "seconds to wait before retrying a job that raised an error (may be a list: 1,5,10)"},
    {"max-jobs", CLI_UINT, "0", "exit after this many jobs (0 = no limit)"},
    {"max-time", CLI_UINT, "0", "exit after this many seconds (0 = no limit)"},
    {"force", CLI_FLAG, NULL, "work even when the app is in maintenance mode (storage/framework/down beside --env-file)"},
    {"memory", CLI_UINT, "128", "exit with status 12 when resident memory reaches this many MB"},
    {"memory-limit", CLI_UINT, "1024", "MB a worker's Lua heap may hold; a job needing more fails with 'not enough memory' (0 = no limit)"},
    {"sleep", CLI_SECONDS, "3", "seconds to sleep when no job is available"},
    {"rest", CLI_SECONDS, "0", "seconds to rest after each job"},
    {"timeout", CLI_UINT, "60", "seconds a job may run when its payload has no timeout (0 = none)"},
    {"tries", CLI_UINT, "1", "attempts allowed when the payload has no maxTries (0 = unlimited)"},
    {"json", CLI_FLAG, NULL, "print one JSON object per event instead of the console lines"},
    {"quiet", CLI_FLAG, NULL, "print no job lines"},
    {"processes", CLI_UINT, "1", "worker processes to run, each working the queues (a supervisor replaces any that end)"},
    {"concurrency", CLI_UINT, NULL, "jobs each process runs at once, each yielding to the others while it waits (default: LUAWORKER_CONCURRENCY, else 1)"},
    {"handlers", CLI_STRING, "./handlers", "directory of the Lua handlers"},
    {"no-watch", CLI_FLAG, NULL, "do not reload the workers when a handler file changes (HUP still does)"},
    {"retry-after", CLI_UINT, "90", "seconds a reserved job stays reserved (the connection's retry_after)"},
    {"heartbeat", CLI_SECONDS, NULL, "seconds after which a worker that stopped beating is taken for dead and the jobs it reserved ahead go back (default: 10, or a third of --retry-after when less)"},
    {"block-for", CLI_SECONDS, NULL, "seconds to block on the first queue's notify list when it is empty (block_for)"},
    {"migration-batch-size", CLI_UINT, NULL, "most delayed/expired jobs moved per queue and poll (Laravel 9.23+)"},
    COMMON_OPTIONS,
    {NULL, CLI_FLAG, NULL, NULL},
};

static const struct cli_option queue_options[] = {
    {"queue", CLI_STRING, NULL, "queue name (default: REDIS_QUEUE or 'default')"},
    COMMON_OPTIONS,
    {NULL, CLI_FLAG, NULL, NULL},
};

static const struct cli_option push_options[] = {
    {"queue", CLI_STRING, NULL, "queue name (default: REDIS_QUEUE or 'default')"},
    {"delay", CLI_UINT, "0", "seconds until the job is available (puts it on :delayed)"},
    {"tries", CLI_UINT, NULL, "maxTries of the job"},
    {"backoff", CLI_BACKOFF, NULL, "backoff of the job, e.g. 1,5,10"},
    {"timeout", CLI_UINT, NULL, "timeout of the job in seconds"},
    {"max-exceptions", CLI_UINT, NULL, "maxExceptions of the job"},
    {"retry-until", CLI_UINT, NULL, "retryUntil of the job, as seconds from now"},
    COMMON_OPTIONS,
    {NULL, CLI_FLAG, NULL, NULL},
};

static const struct cli_option common_options[] = {
    COMMON_OPTIONS,
    {NULL, CLI_FLAG, NULL, NULL},
};

static const struct cli_command commands[] = {
    {"work", "[connection]", 0, 1, "process jobs from the queues, like artisan queue:work", work_options},
    {"failed", "", 0, 0, "list failed jobs, newest first", common_options},
    {"retry", "<id>... | all", 1, CLI_MAX_ARGS, "push failed jobs back onto their queues", queue_options},
    {"forget", "<id>", 1, 1, "delete a failed job", common_options},
    {"flush", "", 0, 0, "delete all failed jobs", common_options},
    {"push", "<displayName|Class@method> [json-data]", 1, 2,
     "push a Laravel-format job (json-data: the job's properties, or a string job's data)", push_options},
    {"size", "[connection]", 0, 1, "print pending, delayed and reserved counts of a queue", queue_options},
    {"clear", "[connection]", 0, 1, "delete all jobs of a queue", queue_options},
    {"restart", "", 0, 0, "tell every worker (luaworker or queue:work) to exit after its current job", common_options},
    {"lua", "<file> [args...]", 1, CLI_MAX_ARGS, "run a Lua file inside luaworker's runtime (require \"luaworker\" works)", common_options},
    {NULL, NULL, 0, 0, NULL, NULL},
};

static const struct cli_command *find_command(const char *name)
{
    for (const struct cli_command *c = commands; c->name; c++)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}

static int check_value(const struct cli_option *o, const char *v, char *err, size_t errlen)
{
    char *end;
    switch (o->type) {
    case CLI_FLAG:
    case CLI_STRING:
        if (*v)
            return 0;
        snprintf(err, errlen, "--%s=: expected a value", o->name);
        return -1;
    case CLI_UINT:
        errno = 0;
        if (isdigit((unsigned char)*v)) {
            unsigned long long n = strtoull(v, &end, 10);
            if (!errno && !*end && n <= 2147483647ULL)
                return 0;
        }
        snprintf(err, errlen, "--%s=%s: expected a whole number of 0 or more", o->name, v);
        return -1;
    case CLI_SECONDS:
        errno = 0;
        if (*v && strspn(v, "0123456789.") == strlen(v) && strchr(v, '.') == strrchr(v, '.')) {
            double d = strtod(v, &end);
            if (!errno && !*end && d >= 0 && d < 1e9)
                return 0;
        }
        snprintf(err, errlen, "--%s=%s: expected a number of seconds of 0 or more", o->name, v);
        return -1;
    case CLI_BACKOFF:
        for (const char *p = v;;) {
            if (!isdigit((unsigned char)*p))
                break;
            errno = 0;
            unsigned long long n = strtoull(p, &end, 10);
            if (errno || n > 2147483647ULL)
                break;
            p = end;
            if (*p == '\0')
                return 0;
            if (*p++ != ',')
                break;
        }
        snprintf(err, errlen, "--%s=%s: expected seconds, or a comma-separated list such as 1,5,10",
                 o->name, v);
        return -1;
    }
    return 0;
}

int cli_parse(int argc, char **argv, struct cli *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->literal_from = -1;
    int i = 1;
    if (i >= argc || strcmp(argv[i], "help") == 0 || strcmp(argv[i], "--help") == 0 ||
        strcmp(argv[i], "-h") == 0) {
        out->help = 1;
        if (i + 1 < argc)
            out->command = find_command(argv[i + 1]);
        return 0;
    }
    out->command = find_command(argv[i]);
    if (!out->command) {
        snprintf(err, errlen, "unknown command '%s' (expected one of: work, failed, retry, forget, "
                 "flush, push, size, clear, restart, lua, help)", argv[i]);
        return -1;
    }
    const struct cli_command *c = out->command;
    int rest_are_args = 0;
    for (i = 2; i < argc; i++) {
        const char *a = argv[i];
        /* `lua <file> args...`: everything after the file belongs to the script. */
        if (rest_are_args || a[0] != '-' || strcmp(a, "-") == 0) {
            if (out->nargs >= c->max_args) {
                snprintf(err, errlen, "%s: unexpected argument '%s' (usage: luaworker %s %s)",
                         c->name, a, c->name, c->args);
                return -1;
            }
            out->args[out->nargs++] = a;
            if (strcmp(c->name, "lua") == 0)
                rest_are_args = 1;
            continue;
        }
        /* `--` ends the options: an id such as `-h` or a class after it is an argument */
        if (strcmp(a, "--") == 0 && !rest_are_args) {
            rest_are_args = 1;
            out->literal_from = out->nargs;
            continue;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            out->help = 1;
            return 0;
        }
        if (strcmp(a, "-q") == 0)
            a = "--quiet";
        if (strncmp(a, "--", 2) != 0) {
            snprintf(err, errlen, "%s: unknown option '%s'", c->name, a);
            return -1;
        }
        const char *name = a + 2, *eq = strchr(name, '=');
        size_t namelen = eq ? (size_t)(eq - name) : strlen(name);
        int k;
        for (k = 0; c->options[k].name; k++)
            if (strlen(c->options[k].name) == namelen && strncmp(c->options[k].name, name, namelen) == 0)
                break;
        const struct cli_option *o = &c->options[k];
        if (!o->name) {
            snprintf(err, errlen, "%s: unknown option '--%.*s' (see luaworker help %s)",
                     c->name, (int)namelen, name, c->name);
            return -1;
        }
        const char *value;
        if (o->type == CLI_FLAG) {
            if (eq) {
                snprintf(err, errlen, "--%s takes no value", o->name);
                return -1;
            }
            value = "1";
        } else if (eq) {
            value = eq + 1;
        } else if (i + 1 < argc) {
            value = argv[++i];
        } else {
            snprintf(err, errlen, "--%s: expected a value", o->name);
            return -1;
        }
        if (check_value(o, value, err, errlen))
            return -1;
        out->values[k] = value;
    }
    if (out->nargs < c->min_args) {
        snprintf(err, errlen, "%s: missing argument (usage: luaworker %s %s)", c->name,
                 c->name, c->args);
        return -1;
    }
    return 0;
}

void cli_usage(FILE *f, const struct cli_command *command)
{
    if (!command) {
        fprintf(f, "usage: luaworker <command> [arguments] [options]\n\ncommands:\n");
        for (const struct cli_command *c = commands; c->name; c++)
            fprintf(f, "  %-8s %s\n", c->name, c->help);
        fprintf(f, "\nluaworker help <command> shows a command's options.\n");
        return;
    }
    fprintf(f, "usage: luaworker %s %s [options]\n  %s\n\noptions:\n", command->name, command->args,
            command->help);
    for (const struct cli_option *o = command->options; o->name; o++) {
        char left[64];
        snprintf(left, sizeof left, "--%s%s", o->name, o->type == CLI_FLAG ? "" : "=VALUE");
        fprintf(f, "  %-28s %s", left, o->help);
        if (o->def && o->type != CLI_FLAG)
            fprintf(f, " [default: %s]", o->def);
        fprintf(f, "\n");
    }
}
