/* dotenv: parses the text of a Laravel `.env` file (phpdotenv 5 syntax, the subset
 * Laravel apps use): `KEY=value`, `export KEY=value`, blank lines, `#` comments,
 * unquoted values (trimmed, ` #` starts a comment), 'single-quoted' literals and
 * "double-quoted" values with \" \\ \n \r \t \$ escapes; ${NAME} is expanded in
 * unquoted and double-quoted values through the caller's lookup. Uses nothing else. */
#ifndef LUAWORKER_DOTENV_H
#define LUAWORKER_DOTENV_H

#include <stddef.h>

/* Receives each assignment in file order; key and value are NUL-terminated and
 * valid only during the call. */
typedef void dotenv_assign_fn(const char *key, const char *value, void *data);
/* Returns the current value of NAME (for ${NAME}), or NULL when unset. */
typedef const char *dotenv_lookup_fn(const char *name, void *data);

/* Parses text[0..len). Returns 0, or -1 with err set to "PATH:LINE: what was
 * expected" (PATH as given, for messages only). */
int dotenv_parse(const char *text, size_t len, const char *path,
                 dotenv_assign_fn *assign, dotenv_lookup_fn *lookup, void *data,
                 char *err, size_t errlen);

#endif
