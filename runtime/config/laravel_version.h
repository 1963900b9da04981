/* laravel_version: which Laravel's protocol luaworker speaks. A version is given
 * (--laravel=12.51, or a major alone for its newest minor) or read from the app
 * beside its .env: composer.lock's laravel/framework, else the framework's
 * Application::VERSION under vendor/. Uses nothing else. */
#ifndef LUAWORKER_LARAVEL_VERSION_H
#define LUAWORKER_LARAVEL_VERSION_H

#include <stddef.h>

#define LARAVEL_NEWEST_MINOR 999    /* the minor of a version given as a major alone */

struct laravel_version {
    int major;                      /* 8 to 13 */
    int minor;
};

/* Laravel 8.83, what luaworker speaks when nothing says otherwise. */
extern const struct laravel_version laravel_version_default;

/* Reads "12", "12.51", "v12.51.3" (a patch is ignored), "12.x" or "12.x-dev" (the
 * newest 12) into v. Returns 0, or -1 when text is not such a version of Laravel 8
 * to 13. */
int laravel_version_parse(const char *text, struct laravel_version *v);

/* Reads the version of the app in app_dir into v, and the file it came from into
 * from. Returns 0; 1 when the app has neither file; -1 with err set when a file
 * names no version luaworker knows. */
int laravel_version_detect(const char *app_dir, struct laravel_version *v, char *from,
                           size_t fromlen, char *err, size_t errlen);

/* Whether v is at least major.minor. */
int laravel_version_at_least(const struct laravel_version *v, int major, int minor);

#endif
