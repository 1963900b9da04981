#include "config/laravel_version.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILE (8u << 20)         /* a composer.lock of a large app is some hundreds of KB */

const struct laravel_version laravel_version_default = { 8, 83 };

/* Reads a decimal number of at most 3 digits at *p, advancing it. Returns -1 when
 * there is none. */
static int number(const char **p)
{
    int n = 0, digits = 0;
    while (isdigit((unsigned char)**p) && digits < 4) {
        n = n * 10 + (**p - '0');
        (*p)++;
        digits++;
    }
    return digits == 0 || digits > 3 ? -1 : n;
}

int laravel_version_parse(const char *text, struct laravel_version *v)
{
    const char *p = text;
    if (*p == 'v')
        p++;
    int major = number(&p), minor = LARAVEL_NEWEST_MINOR;
    if (strcmp(p, ".x-dev") == 0 || strcmp(p, ".x") == 0) {
        p += strlen(p);  /* a branch (composer's "12.x-dev"): its newest */
    } else if (*p == '.') {
        p++;
        minor = number(&p);
        if (*p == '.') {
            p++;
            if (number(&p) < 0)
                return -1;
        }
    }
    if (*p || major < 8 || major > 13 || minor < 0)
        return -1;
    v->major = major;
    v->minor = minor;
    return 0;
}

int laravel_version_at_least(const struct laravel_version *v, int major, int minor)
{
    return v->major > major || (v->major == major && v->minor >= minor);
}

/* The file at path, NUL-terminated (free it), or NULL when it cannot be read. */
static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    char *text = size >= 0 && (unsigned long)size <= MAX_FILE ? malloc((size_t)size + 1) : NULL;
    size_t n = text && fseek(f, 0, SEEK_SET) == 0 ? fread(text, 1, (size_t)size, f) : 0;
    fclose(f);
    if (text)
        text[n] = '\0';
    return text;
}

/* Copies the string value that follows key (as "key": "value" or key = 'value')
 * after start into out. Returns 0, or -1 when there is none. */
static int value_after(const char *start, const char *key, char *out, size_t outlen)
{
    const char *k = strstr(start, key);
    if (!k)
        return -1;
    const char *q = k + strlen(key);
    while (*q && *q != '"' && *q != '\'' && *q != '\n')
        q++;
    if (*q != '"' && *q != '\'')
        return -1;
    char quote = *q++;
    size_t n = 0;
    while (q[n] && q[n] != quote && n + 1 < outlen)
        n++;
    if (q[n] != quote)
        return -1;
    memcpy(out, q, n);
    out[n] = '\0';
    return 0;
}

int laravel_version_detect(const char *app_dir, struct laravel_version *v, char *from,
                           size_t fromlen, char *err, size_t errlen)
{
    static const char *const files[] = {
        "composer.lock", "vendor/laravel/framework/src/Illuminate/Foundation/Application.php",
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(from, fromlen, "%s/%s", app_dir, files[i]);
        char *text = read_file(from);
        if (!text)
            continue;
        char found[64];
        int rc;
        if (i == 0) {
            /* the package's "version" follows its "name" in composer.lock */
            const char *package = strstr(text, "\"name\": \"laravel/framework\"");
            rc = package ? value_after(package, "\"version\":", found, sizeof found) : -1;
        } else {
            rc = value_after(text, "const VERSION", found, sizeof found);
        }
        free(text);
        if (rc == 0 && laravel_version_parse(found, v) == 0)
            return 0;
        if (i == 0 && rc != 0)
            continue;  /* a lock file without the framework: the next place says */
        snprintf(err, errlen, "%s: Laravel %s is not a version luaworker speaks (8 to 13); "
                 "say which with --laravel", from, rc == 0 ? found : "(unreadable)");
        return -1;
    }
    return 1;
}
