/* scripts: the Redis Lua scripts luaworker runs (scripts/<name>.lua, one operation
 * per file), read once at start with their SHA1 so that they can be called with
 * EVALSHA. Uses libcrypto for SHA1. */
#ifndef LUAWORKER_SCRIPTS_H
#define LUAWORKER_SCRIPTS_H

#include <stddef.h>

struct script {
    char name[32];      /* file name without ".lua", e.g. "pop" */
    char *text;         /* owned */
    size_t len;
    char sha[41];       /* lowercase hex SHA1 of text, as SCRIPT LOAD returns it */
};

struct scripts {
    struct script *items;  /* owned */
    size_t count;
    char dir[4096];
};

/* The names every scripts directory must provide. */
extern const char *const scripts_required[];

/* Reads every required script from dir. Returns 0, or -1 with err naming the
 * directory or file and what was expected. */
int scripts_load_dir(struct scripts *s, const char *dir, char *err, size_t errlen);

/* Finds the directory to use: dir when given, else the scripts/ directory beside
 * the running binary, else the installed copy. Writes it to out; returns 0 or -1. */
int scripts_find_dir(const char *dir, char *out, size_t outlen, char *err, size_t errlen);

/* Returns the script called name, or NULL. */
const struct script *scripts_get(const struct scripts *s, const char *name);

void scripts_free(struct scripts *s);

#endif
