/* cli: the command line. Each command has a table of options with queue:work's
 * names and defaults (plus luaworker's own), and each numeric option its accepted
 * range: the one place a value is checked, at parsing, before anything touches
 * Redis or a worker starts. Uses nothing else. */
#ifndef LUAWORKER_CLI_H
#define LUAWORKER_CLI_H

#include <stddef.h>
#include <stdio.h>

enum cli_type {
    CLI_FLAG,     /* no value; true when given */
    CLI_UINT,     /* whole number (decimal digits only) from min to max */
    CLI_SECONDS,  /* number of seconds from min to max, fractions allowed (digits and
                   * at most one '.') */
    CLI_STRING,   /* any text but the empty one */
    CLI_BACKOFF,  /* whole numbers from min to max separated by commas, e.g. "1,5,10" */
};

struct cli_option {
    const char *name;     /* without the leading "--" */
    enum cli_type type;
    const char *def;      /* default value as text, NULL for none; within the range */
    double min, max;      /* the accepted range of a CLI_UINT, CLI_SECONDS or
                           * CLI_BACKOFF value (of each entry of a CLI_BACKOFF list) */
    const char *unit;     /* what a whole number counts, for the messages: "jobs"... */
    const char *help;
    const char *env;      /* the environment variable that gives the default when the
                           * option is not given (checked the same way), or NULL */
};

struct cli_command {
    const char *name;
    const char *args;     /* positional arguments, for the usage line */
    int min_args, max_args;
    const char *help;
    const struct cli_option *options;  /* terminated by a NULL name */
};

#define CLI_MAX_ARGS 64
#define CLI_MAX_OPTIONS 48

struct cli {
    const struct cli_command *command;
    const char *args[CLI_MAX_ARGS];
    int nargs;
    int literal_from;                     /* args from this index came after `--` (as
                                           * given: never a keyword such as `all`);
                                           * -1 when there was no `--` */
    const char *values[CLI_MAX_OPTIONS];  /* by option index; NULL = not given */
    int help;                             /* --help or `help` was asked for */
    int version;                          /* --version or -V was asked for */
};

/* Parses argv[1..argc) and checks every value given, and the environment variable
 * of each option not given, against the option's type and range. Returns 0, or -1
 * with err set to a one-line message naming the argument (or the variable), its
 * value and what was expected, e.g. "--heartbeat=0.01: expected seconds from 0.1 to
 * 86400". */
int cli_parse(int argc, char **argv, struct cli *out, char *err, size_t errlen);

/* Prints the usage of command (or of all commands when NULL) to f. */
void cli_usage(FILE *f, const struct cli_command *command);

#endif
