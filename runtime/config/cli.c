#include "config/cli.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The options of each type: name, default, [range, unit,] help. A whole number
 * counted in unit is taken from min to max; WHOLE_MAX is the most any is (2^31 - 1,
 * about 68 years of seconds). */
#define WHOLE_MAX 2147483647.0
#define FLAG(name, help) {name, CLI_FLAG, NULL, 0, 0, NULL, help, NULL}
#define TEXT(name, def, help) {name, CLI_STRING, def, 0, 0, NULL, help, NULL}
#define WHOLE(name, def, min, max, unit, help) {name, CLI_UINT, def, min, max, unit, help, NULL}
#define SECONDS(name, def, min, max, help) {name, CLI_SECONDS, def, min, max, "seconds", help, NULL}
#define BACKOFF(name, def, help) {name, CLI_BACKOFF, def, 0, WHOLE_MAX, "seconds", help, NULL}
#define END {NULL, CLI_FLAG, NULL, 0, 0, NULL, NULL, NULL}

/* The most seconds of a wait given with fractions (--sleep, --rest, --block-for,
 * --heartbeat): a day; more is taken for a mistake (milliseconds, say). */
#define DAY 86400.0
/* The most MB of --memory and --memory-limit: a tebibyte. */
#define MAX_MB 1048576.0

#define COMMON_OPTIONS                                                                    \
    TEXT("env-file", NULL, "read a Laravel .env file (real environment variables win)"), \
    TEXT("scripts", NULL, "directory of the Redis scripts (default: scripts/ beside the binary)"), \
    TEXT("laravel", NULL, "Laravel version whose protocol applies, as 12.51, or 12 for its newest (default: the app's, from composer.lock or vendor/ beside --env-file, else 8.83)"), \
    TEXT("laravel-version", NULL, "the same as --laravel (its older name)")

/* The ranges are what the worker can run:
 * --processes: each worker holds four Redis connections and the supervisor a
 *   descriptor; past 512, use more machines or supervisors;
 * --concurrency: a task, its timer and its reservation per job in flight;
 * --retry-after: a job's reservation expires retry_after seconds after its pop,
 *   so at 0 the next pop takes it back while it runs: 1 or more;
 * --heartbeat: set every heartbeat/4 with a time to live of heartbeat in whole
 *   ms (Redis' SET PX), and dead workers looked for every heartbeat/2: at 0.1 s, 25
 *   ms between two SETs, as often as a round trip should be asked to fit;
 * --migration-batch-size: at 0 no due job would ever move (Redis' LIMIT 0 0);
 * --timeout: the slot the supervisor reads holds 32 bits of seconds. */
static const struct cli_option work_options[] = {
    TEXT("queue", NULL, "queues to work, comma separated, in priority order (default: REDIS_QUEUE or 'default')"),
    TEXT("name", "default", "worker name (kept for queue:work compatibility)"),
    FLAG("daemon", "no effect (deprecated in queue:work too)"),
    FLAG("once", "process one poll of the queues and exit"),
    FLAG("stop-when-empty", "exit when the queues are empty"),
    BACKOFF("delay", "0", "deprecated alias of --backoff; the larger of the two applies"),
    BACKOFF("backoff", "0", "seconds to wait before retrying a job that raised an error (may be a list: 1,5,10)"),
    WHOLE("max-jobs", "0", 0, WHOLE_MAX, "jobs", "exit after this many jobs (0 = no limit)"),
    WHOLE("max-time", "0", 0, WHOLE_MAX, "seconds", "exit after this many seconds (0 = no limit)"),
    FLAG("force", "work even when the app is in maintenance mode (storage/framework/down beside --env-file)"),
    WHOLE("memory", "128", 0, MAX_MB, "MB", "exit with status 12 when resident memory reaches this many MB (0 = no limit)"),
    WHOLE("memory-limit", "1024", 0, MAX_MB, "MB", "MB a worker's Lua heap may hold; a job needing more fails with 'not enough memory' (0 = no limit)"),
    SECONDS("sleep", "3", 0, DAY, "seconds to sleep when no job is available"),
    SECONDS("rest", "0", 0, DAY, "seconds to rest after each job"),
    WHOLE("timeout", "60", 0, WHOLE_MAX, "seconds", "seconds a job may run when its payload has no timeout (0 = none)"),
    WHOLE("tries", "1", 0, WHOLE_MAX, "attempts", "attempts allowed when the payload has no maxTries (0 = unlimited)"),
    FLAG("json", "print one JSON object per event instead of the console lines"),
    FLAG("quiet", "print no job lines"),
    WHOLE("processes", "1", 1, 512, "processes", "worker processes to run, each working the queues (a supervisor replaces any that end)"),
    {"concurrency", CLI_UINT, NULL, 1, 10000, "jobs", "jobs each process runs at once, each yielding to the others while it waits (default: LUAWORKER_CONCURRENCY, else 1)", "LUAWORKER_CONCURRENCY"},
    TEXT("handlers", "./handlers", "directory of the Lua handlers"),
    FLAG("horizon", "keep Horizon's records of the jobs (status, lists, metrics, failures), as its listeners do, for its dashboard"),
    TEXT("metrics", NULL, "serve the fleet's Prometheus metrics at HOST:PORT, path /metrics (e.g. 127.0.0.1:9100; not with --once)"),
    FLAG("no-watch", "do not reload the workers when a handler file changes (HUP still does)"),
    WHOLE("retry-after", "90", 1, WHOLE_MAX, "seconds", "seconds a reserved job stays reserved (the connection's retry_after)"),
    SECONDS("heartbeat", NULL, 0.1, DAY, "seconds after which a worker that stopped beating is taken for dead and the jobs it reserved ahead go back (default: 10, or a third of --retry-after when less)"),
    SECONDS("block-for", NULL, 0, DAY, "seconds to block on the first queue's notify list when it is empty (block_for; 0 = without limit)"),
    WHOLE("migration-batch-size", NULL, 1, WHOLE_MAX, "jobs", "most delayed/expired jobs moved per queue and poll (Laravel 9.23+; default: all)"),
    COMMON_OPTIONS,
    END,
};

static const struct cli_option queue_options[] = {
    TEXT("queue", NULL, "queue name (default: REDIS_QUEUE or 'default')"),
    COMMON_OPTIONS,
    END,
};

static const struct cli_option peek_options[] = {
    TEXT("queue", NULL, "queue name (default: REDIS_QUEUE or 'default')"),
    WHOLE("limit", "10", 1, WHOLE_MAX, "jobs", "show at most this many jobs"),
    TEXT("class", NULL, "only jobs of this class (displayName, else data.commandName)"),
    FLAG("json", "one JSON object per job"),
    COMMON_OPTIONS,
    END,
};

static const struct cli_option push_options[] = {
    TEXT("queue", NULL, "queue name (default: REDIS_QUEUE or 'default')"),
    WHOLE("delay", "0", 0, WHOLE_MAX, "seconds", "seconds until the job is available (puts it on :delayed)"),
    WHOLE("tries", NULL, 0, WHOLE_MAX, "attempts", "maxTries of the job"),
    BACKOFF("backoff", NULL, "backoff of the job, e.g. 1,5,10"),
    WHOLE("timeout", NULL, 0, WHOLE_MAX, "seconds", "timeout of the job in seconds"),
    WHOLE("max-exceptions", NULL, 0, WHOLE_MAX, "exceptions", "maxExceptions of the job"),
    WHOLE("retry-until", NULL, 0, WHOLE_MAX, "seconds", "retryUntil of the job, as seconds from now"),
    COMMON_OPTIONS,
    END,
};

static const struct cli_option status_options[] = {
    FLAG("json", "one JSON object per worker"),
    COMMON_OPTIONS,
    END,
};

static const struct cli_option run_options[] = {
    TEXT("handlers", "./handlers", "directory of the Lua handlers"),
    TEXT("queue", NULL, "the queue the job is taken to be on (default: REDIS_QUEUE or 'default')"),
    WHOLE("attempts", NULL, 1, WHOLE_MAX, "attempts", "the attempt this run is (default: the payload's attempts + 1)"),
    WHOLE("tries", "1", 0, WHOLE_MAX, "attempts", "attempts allowed when the payload has no maxTries (0 = unlimited), as work's"),
    BACKOFF("backoff", "0", "seconds before a job that raised is retried, as work's (may be a list: 1,5,10)"),
    FLAG("fake-http", "answer the handler's HTTP requests with 200 and an empty body, without sending them"),
    FLAG("json", "say what the worker would have done as one JSON object"),
    COMMON_OPTIONS,
    END,
};

static const struct cli_option make_options[] = {
    TEXT("handlers", "./handlers", "directory of the Lua handlers"),
    TEXT("specs", "./spec", "directory of the handlers' specs (luaworker test)"),
    TEXT("from-queue", NULL, "list the properties of a waiting job of this class on this queue in the handler"),
    COMMON_OPTIONS,
    END,
};

static const struct cli_option test_options[] = {
    TEXT("handlers", "./handlers", "directory of the Lua handlers the specs run"),
    COMMON_OPTIONS,
    END,
};

static const struct cli_option failed_options[] = {
    FLAG("json", "one JSON object per failed job"),
    COMMON_OPTIONS,
    END,
};

static const struct cli_option common_options[] = {
    COMMON_OPTIONS,
    END,
};

static const struct cli_command commands[] = {
    {"work", "[connection]", 0, 1, "process jobs from the queues, like artisan queue:work", work_options},
    {"failed", "[[show] id]", 0, 2, "list failed jobs, newest first; with an id, show that one whole (its exception and trace, its payload, its command decoded)", failed_options},
    {"retry", "<id>... | all", 1, CLI_MAX_ARGS, "push failed jobs back onto their queues", queue_options},
    {"forget", "<id>", 1, 1, "delete a failed job", common_options},
    {"flush", "", 0, 0, "delete all failed jobs", common_options},
    {"push", "<displayName|Class@method> [json-data]", 1, 2,
     "push a Laravel-format job (json-data: the job's properties, or a string job's data)", push_options},
    {"size", "[connection]", 0, 1, "print pending, delayed and reserved counts of a queue", queue_options},
    {"peek", "[connection]", 0, 1,
     "show a queue's jobs and their commands without taking any: waiting, then delayed, then reserved",
     peek_options},
    {"clear", "[connection]", 0, 1, "delete all jobs of a queue", queue_options},
    {"notify", "install | remove", 1, 1,
     "on PostgreSQL: add (or take away) the trigger that wakes idle workers of the database queue "
     "when a job is pushed", common_options},
    {"restart", "", 0, 0, "tell every worker (luaworker or queue:work) to exit after its current job", common_options},
    {"status", "[connection]", 0, 1,
     "list the live luaworker workers on this connection, fleet by fleet: pids, queues, jobs in "
     "flight and done, uptime, memory", status_options},
    {"make", "<class>", 1, 1,
     "write a handler for a job class (and its spec), refusing to overwrite", make_options},
    {"run", "<payload-file | ->", 1, 1,
     "run one job's payload through its handler as the worker would, touching no queue, and say what "
     "the worker would have done", run_options},
    {"test", "[paths...] [-- busted options]", 0, CLI_MAX_ARGS,
     "run the handlers' busted specs (default: spec/) inside luaworker's runtime", test_options},
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

/* Whether v is a whole number in decimal digits only (no sign, space or "0x")
 * from o's min to its max; *end is set past its digits. */
static int whole_in_range(const struct cli_option *o, const char *v, const char **end)
{
    if (!isdigit((unsigned char)*v))
        return 0;
    char *e;
    errno = 0;
    unsigned long long n = strtoull(v, &e, 10);
    *end = e;
    return !errno && (double)n >= o->min && (double)n <= o->max;
}

/* Writes "<what>=<v>: expected <o's type and range>" to err. */
static void range_message(const struct cli_option *o, const char *what, const char *v,
                          char *err, size_t errlen)
{
    switch (o->type) {
    case CLI_UINT:
        snprintf(err, errlen, "%s=%s: expected a whole number of %s from %.15g to %.15g", what, v,
                 o->unit, o->min, o->max);
        break;
    case CLI_SECONDS:
        snprintf(err, errlen, "%s=%s: expected seconds from %.15g to %.15g", what, v, o->min, o->max);
        break;
    case CLI_BACKOFF:
        snprintf(err, errlen, "%s=%s: expected a whole number of seconds from %.15g to %.15g, or a "
                 "comma-separated list of them such as 1,5,10", what, v, o->min, o->max);
        break;
    case CLI_FLAG:
    case CLI_STRING:
        snprintf(err, errlen, "%s=%s: expected a value", what, v);
        break;
    }
}

/* Checks v, the value of o given as `what` ("--name" or an environment variable),
 * against o's type and range. Returns 0, or -1 with err set. */
static int check_value(const struct cli_option *o, const char *what, const char *v, char *err,
                       size_t errlen)
{
    const char *end;
    switch (o->type) {
    case CLI_FLAG:
    case CLI_STRING:
        if (*v)
            return 0;
        break;
    case CLI_UINT:
        if (whole_in_range(o, v, &end) && !*end)
            return 0;
        break;
    case CLI_SECONDS:
        /* digits with at most one '.', at least one digit: no sign, exponent, "nan",
         * "inf", hex or space */
        if (strspn(v, "0123456789.") == strlen(v) && strchr(v, '.') == strrchr(v, '.') &&
            strpbrk(v, "0123456789")) {
            double d = strtod(v, NULL);
            if (d >= o->min && d <= o->max)
                return 0;
        }
        break;
    case CLI_BACKOFF:
        for (const char *p = v; whole_in_range(o, p, &end); p = end + 1) {
            if (*end == '\0')
                return 0;
            if (*end != ',')
                break;
        }
        break;
    }
    range_message(o, what, v, err, errlen);
    return -1;
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
    if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "-V") == 0) {
        out->version = 1;
        return 0;
    }
    out->command = find_command(argv[i]);
    if (!out->command) {
        /* the names from the table itself, so that none is ever left out */
        char names[256] = "";
        for (const struct cli_command *c = commands; c->name; c++) {
            size_t n = strlen(names);
            snprintf(names + n, sizeof names - n, "%s, ", c->name);
        }
        snprintf(err, errlen, "unknown command '%s' (expected one of: %shelp)", argv[i], names);
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
        char what[64];
        snprintf(what, sizeof what, "--%s", o->name);
        if (check_value(o, what, value, err, errlen))
            return -1;
        out->values[k] = value;
    }
    /* an environment variable stands for an option not given: checked as it is */
    for (int k = 0; c->options[k].name; k++) {
        const char *env = c->options[k].env, *v = env ? getenv(env) : NULL;
        if (v && !out->values[k] && check_value(&c->options[k], env, v, err, errlen))
            return -1;
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
        fprintf(f, "\nluaworker help <command> shows a command's options; luaworker --version (-V) "
                "what this binary is.\n");
        return;
    }
    /* lua: what follows the file is the script's, so luaworker's options come first */
    if (strcmp(command->name, "lua") == 0)
        fprintf(f, "usage: luaworker lua [options] %s\n  %s\n  (options after the file are the script's "
                "arguments)\n\noptions:\n", command->args, command->help);
    else
        fprintf(f, "usage: luaworker %s %s [options]\n  %s\n\noptions:\n", command->name, command->args,
                command->help);
    for (const struct cli_option *o = command->options; o->name; o++) {
        char left[64];
        snprintf(left, sizeof left, "--%s%s", o->name, o->type == CLI_FLAG ? "" : "=VALUE");
        fprintf(f, "  %-28s %s", left, o->help);
        if (o->type == CLI_UINT || o->type == CLI_SECONDS || o->type == CLI_BACKOFF)
            fprintf(f, " [from %.15g to %.15g]", o->min, o->max);
        if (o->def && o->type != CLI_FLAG)
            fprintf(f, " [default: %s]", o->def);
        fprintf(f, "\n");
    }
}
