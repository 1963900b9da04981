#include "redis/scripts.h"

#include <errno.h>
#include <limits.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef LUAWORKER_SHARE
#define LUAWORKER_SHARE "/usr/local/share/luaworker"
#endif

const char *const scripts_required[] = {
    "push", "later", "pop", "release", "migrate", "size", "clear", "fail", "retry", "next_due",
    "give_back", "flush", "release_lock", "duration_limiter", "concurrency_limiter", "cache_add",
    NULL,
};

static int read_file(const char *path, char **text, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    int rc = -1;
    char *buf = NULL;
    if (fseek(f, 0, SEEK_END) != 0)
        goto fail;
    long size = ftell(f);
    if (size < 0 || fseek(f, 0, SEEK_SET) != 0)
        goto fail;
    buf = malloc((size_t)size + 1);
    if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size)
        goto fail;
    buf[size] = '\0';
    *text = buf;
    *len = (size_t)size;
    buf = NULL;
    rc = 0;
fail:
    if (rc)
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
    free(buf);
    fclose(f);
    return rc;
}

int scripts_load_dir(struct scripts *s, const char *dir, char *err, size_t errlen)
{
    size_t n = 0;
    while (scripts_required[n])
        n++;
    memset(s, 0, sizeof *s);
    s->items = calloc(n, sizeof *s->items);
    if (!s->items) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(s->dir, sizeof s->dir, "%s", dir);
    for (size_t i = 0; i < n; i++) {
        struct script *sc = &s->items[i];
        char path[PATH_MAX];
        snprintf(sc->name, sizeof sc->name, "%s", scripts_required[i]);
        snprintf(path, sizeof path, "%s/%s.lua", dir, sc->name);
        if (read_file(path, &sc->text, &sc->len, err, errlen)) {
            scripts_free(s);
            return -1;
        }
        s->count = i + 1;
        unsigned char md[SHA_DIGEST_LENGTH];
        SHA1((const unsigned char *)sc->text, sc->len, md);
        for (size_t j = 0; j < SHA_DIGEST_LENGTH; j++)
            snprintf(sc->sha + 2 * j, 3, "%02x", md[j]);
    }
    return 0;
}

static int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int scripts_find_dir(const char *dir, char *out, size_t outlen, char *err, size_t errlen)
{
    if (dir) {
        if (!is_dir(dir)) {
            snprintf(err, errlen, "--scripts=%s: not a directory", dir);
            return -1;
        }
        snprintf(out, outlen, "%s", dir);
        return 0;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            snprintf(out, outlen, "%s/scripts", exe);
            if (is_dir(out))
                return 0;
        }
    }
    snprintf(out, outlen, "%s/scripts", LUAWORKER_SHARE);
    if (is_dir(out))
        return 0;
    snprintf(err, errlen, "no scripts directory: none beside the binary nor at %s/scripts; "
             "pass --scripts=DIR", LUAWORKER_SHARE);
    return -1;
}

const struct script *scripts_get(const struct scripts *s, const char *name)
{
    for (size_t i = 0; i < s->count; i++)
        if (strcmp(s->items[i].name, name) == 0)
            return &s->items[i];
    return NULL;
}

void scripts_free(struct scripts *s)
{
    for (size_t i = 0; i < s->count; i++)
        free(s->items[i].text);
    free(s->items);
    s->items = NULL;
    s->count = 0;
}
