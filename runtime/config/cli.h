/* cli: the command line. Each command has a table of options with queue:work's
 * names and defaults (plus luaworker's own); parsing checks every value against its
 * type before anything touches Redis. Uses nothing else. */
#ifndef LUAWORKER_CLI_H
#define LUAWORKER_CLI_H

#include <stddef.h>
#include <stdio.h>

enum cli_type {
    CLI_FLAG,     /* no value; true when given */
    CLI_UINT,     /* whole number >= 0 */
    CLI_SECONDS,  /* number >= 0, fractions allowed */
    CLI_STRING,
    CLI_BACKOFF,  /* whole numbers >= 0 separated by commas, e.g. "1,5,10" */
};

struct cli_option {
    const char *name;     /* without the leading "--" */
    enum cli_type type;
    const char *def;      /* default value as text, NULL for none */
    const char *help;
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
};

/* Parses argv[1..argc). Returns 0, or -1 with err set to a one-line message naming
 * the argument and what was expected. */
int cli_parse(int argc, char **argv, struct cli *out, char *err, size_t errlen);

/* Prints the usage of command (or of all commands when NULL) to f. */
void cli_usage(FILE *f, const struct cli_command *command);

#endif
