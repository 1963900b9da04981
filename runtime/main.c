/* luaworker: runs Laravel Redis queue jobs with Lua handlers. main() parses the
 * command line and the configuration (exit status 2 on bad input, before anything
 * touches Redis), reads the Redis scripts, then, for `work` without --once, runs
 * the supervisor; otherwise it opens the vm, gives it its bindings (the functions
 * of "luaworker.host": waits, system, Redis, HTTP, the databases, the file store,
 * the heartbeat, the slot) and runs runtime/main.lua in it. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "config/cli.h"
#include "config/config.h"
#include "db/mysql_binding.h"
#include "db/pg_binding.h"
#include "db/sqlite_binding.h"
#include "http/http_binding.h"
#include "loop/signals.h"
#include "loop/system.h"
#include "loop/vm.h"
#include "loop/waits.h"
#include "queue/file_store_binding.h"
#include "redis/idle_wait.h"
#include "redis/redis_binding.h"
#include "redis/redis_tls.h"
#include "redis/scripts.h"
#include "supervisor/slot.h"
#include "supervisor/supervisor.h"
#include "supervisor/reload_check.h"
#include "supervisor/metrics_server.h"
#include "version.h"
#include "worker/database_lease_binding.h"
#include "worker/heartbeat_binding.h"
#include "worker/handler_check_binding.h"
#include "worker/slot_binding.h"

static const char *option_value(const struct cli *cli, const char *name)
{
    for (int k = 0; cli->command->options[k].name; k++)
        if (strcmp(cli->command->options[k].name, name) == 0)
            return cli->values[k] ? cli->values[k] : cli->command->options[k].def;
    return NULL;
}

/* The Laravel version: --laravel (or --laravel-version), else the app's beside
 * --env-file, else 8.83. Returns 0, or -1 after saying what is wrong. */
static int choose_laravel_version(const struct cli *cli, struct laravel_version *v)
{
    const char *name = "laravel", *given = option_value(cli, "laravel");
    if (!given && (given = option_value(cli, "laravel-version")))
        name = "laravel-version";
    if (given) {
        if (laravel_version_parse(given, v) == 0)
            return 0;
        fprintf(stderr, "luaworker: --%s=%s: expected a Laravel version from 8 to 13, as 12.51 "
                "(or 12 for its newest)\n", name, given);
        return -1;
    }
    *v = laravel_version_default;
    const char *env_file = option_value(cli, "env-file");
    if (!env_file)
        return 0;
    char dir[4096], from[4200], err[4400];
    const char *slash = strrchr(env_file, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - env_file) : 1, slash ? env_file : ".");
    if (laravel_version_detect(dir, v, from, sizeof from, err, sizeof err) < 0) {
        fprintf(stderr, "luaworker: %s\n", err);
        return -1;
    }
    return 0;
}

/* The warnings about `luaworker work`'s options taken together, in the process the
 * user started (each option's range, LUAWORKER_CONCURRENCY's too, is checked by
 * cli_parse, the environment by config_load). */
static void warn_work_options(const struct cli *cli, const struct config *config)
{
    const char *heartbeat = option_value(cli, "heartbeat");
    int retry_after = atoi(option_value(cli, "retry-after"));
    const char *connection = cli->nargs > 0 ? cli->args[0] : config->connection_name;
    /* (a --timeout past --retry-after needs no warning: a job in flight keeps its
     * reservation however long it runs, on either queue: worker/lease_keeper.h,
     * worker/database_lease_keeper.h) */
    if (heartbeat && strtod(heartbeat, NULL) * 2 > retry_after && strcmp(connection, "database") != 0)
        fprintf(stderr, "luaworker: warning: --heartbeat=%s is over half of --retry-after=%d: "
                "the jobs a dead worker reserved ahead may come back by retry_after, each with "
                "an attempt counted, before they are given back\n", heartbeat, retry_after);
}

int main(int argc, char **argv)
{
    /* `work` handles the signals of signals.h from its start: they wait, blocked,
     * until its handlers are in place (the supervisor's, or the worker's host), so
     * that a TERM sent to a process just started stops it as it should instead of
     * killing it. Other commands get them back as they were. */
    sigset_t handled, before;
    signals_fill(&handled);
    sigprocmask(SIG_BLOCK, &handled, &before);
    struct cli cli;
    char err[1024];
    if (cli_parse(argc, argv, &cli, err, sizeof err)) {
        fprintf(stderr, "luaworker: %s\n", err);
        return 2;
    }
    if (cli.help) {
        cli_usage(stdout, cli.command);
        return 0;
    }
    if (cli.version) {
        version_print(stdout);
        return 0;
    }
    if (strcmp(cli.command->name, "work") != 0)
        sigprocmask(SIG_SETMASK, &before, NULL);

    struct laravel_version laravel;
    if (choose_laravel_version(&cli, &laravel))
        return 2;
    struct config config;
    if (config_load(&config, option_value(&cli, "env-file"), &laravel, err, sizeof err)) {
        fprintf(stderr, "luaworker: %s\n", err);
        return 2;
    }
    /* TLS files OpenSSL cannot use are bad input, found before Redis is asked */
    if (config.queue.tls.enabled) {
        SSL_CTX *tls = redis_tls_context(&config.queue, err, sizeof err);
        if (!tls) {
            fprintf(stderr, "luaworker: %s\n", err);
            return 2;
        }
        SSL_CTX_free(tls);
    }
    /* Console times are in the app's timezone, as Laravel prints them. */
    setenv("TZ", config.timezone, 1);
    tzset();

    /* set in the workers a supervisor starts; the second in its check of the
     * handlers before a reload (a worker that checks them and exits) */
    const char *slot_fd = getenv(SLOT_ENV);
    int handler_check = getenv(HANDLER_CHECK_ENV) != NULL;
    if (strcmp(cli.command->name, "work") == 0 && !slot_fd && !handler_check) {
        const char *metrics = option_value(&cli, "metrics");
        char host_part[256];
        int port;
        if (metrics && metrics_server_address(metrics, host_part, sizeof host_part, &port, err,
                                              sizeof err)) {
            fprintf(stderr, "luaworker: %s\n", err);
            return 2;
        }
        if (metrics && option_value(&cli, "once"))
            fprintf(stderr, "luaworker: warning: --metrics is served by the supervisor, which --once "
                    "does not run: not served\n");
        warn_work_options(&cli, &config);
    }

    struct stat st;
    const char *handlers = option_value(&cli, "handlers");
    /* make writes its handler into a directory it makes */
    if (handlers && strcmp(cli.command->name, "make") != 0 &&
        (stat(handlers, &st) != 0 || !S_ISDIR(st.st_mode))) {
        fprintf(stderr, "luaworker: --handlers=%s: not a directory\n", handlers);
        return 2;
    }

    char dir[4096];
    struct scripts scripts;
    if (scripts_find_dir(option_value(&cli, "scripts"), dir, sizeof dir, err, sizeof err) ||
        scripts_load_dir(&scripts, dir, err, sizeof err)) {
        fprintf(stderr, "luaworker: %s\n", err);
        return 2;
    }
    snprintf(config.scripts_dir, sizeof config.scripts_dir, "%s", dir);

    /* A write to a connection Redis has closed must fail, not end the process. */
    signal(SIGPIPE, SIG_IGN);

    /* `work` runs under a supervisor (its workers are this binary again); --once
     * runs its one job in this process. */
    if (strcmp(cli.command->name, "work") == 0 && !slot_fd && !handler_check &&
        !option_value(&cli, "once")) {
        scripts_free(&scripts);
        return supervisor_run(argv, atoi(option_value(&cli, "processes")),
                              option_value(&cli, "no-watch") ? NULL : option_value(&cli, "handlers"),
                              option_value(&cli, "metrics"));
    }

    struct vm host;
    int status = 70;
    const char *memory_limit = option_value(&cli, "memory-limit");
    if (vm_open(&host, &config, err, sizeof err)) {
        fprintf(stderr, "luaworker: %s\n", err);
    } else {
        /* before the bindings: redis_binding limits the replies it reads to it */
        if (memory_limit)
            vm_set_memory_limit(&host, (size_t)strtoull(memory_limit, NULL, 10) << 20);
        if (redis_binding_open(&host, &scripts, err, sizeof err)) {
            fprintf(stderr, "luaworker: %s\n", err);
        } else if (slot_binding_attach(&host, slot_fd ? atoi(slot_fd) : -1)) {
            fprintf(stderr, "luaworker: cannot map the slot shared with the supervisor\n");
        } else {
            unsetenv(SLOT_ENV);
            idle_wait_register(&host);
            waits_register(&host);
            system_register(&host);
            http_binding_register(&host);
            pg_binding_register(&host);
            mysql_binding_register(&host);
            sqlite_binding_register(&host);
            file_store_binding_register(&host);
            handler_check_binding_register(&host);
            heartbeat_binding_register(&host);
            database_lease_binding_register(&host);
            status = vm_run(&host, &cli);
        }
    }
    vm_close(&host);
    fflush(stdout);
    return status;
}
