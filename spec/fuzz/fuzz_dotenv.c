/* fuzz_dotenv: libFuzzer target for dotenv_parse.
 *
 * Each input is the text of a .env file.  ${NAME} expands through a lookup
 * that returns the same value for every name; every assignment's key and
 * value are read to their NUL, and an error message must be a NUL-terminated
 * "fuzz.env:LINE: ..." string.  Aborts when it is not.  Uses dotenv. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/dotenv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_assign(const char *key, const char *value, void *data)
{
    size_t *total = data;
    if (key[0] == '\0') {
        fprintf(stderr, "fuzz_dotenv: assignment with an empty name\n");
        abort();
    }
    *total += strlen(key) + strlen(value);
}

static const char *fuzz_lookup(const char *name, void *data)
{
    (void)name;
    (void)data;
    return "fuzz ${VALUE} \"$x\"";
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[256];
    size_t total = 0;
    memset(err, 'x', sizeof err);
    if (dotenv_parse((const char *)data, size, "fuzz.env", fuzz_assign, fuzz_lookup, &total,
                     err, sizeof err) != 0) {
        if (memchr(err, '\0', sizeof err) == NULL || strncmp(err, "fuzz.env:", 9) != 0) {
            fprintf(stderr, "fuzz_dotenv: bad error message\n");
            abort();
        }
    }
    return 0;
}
