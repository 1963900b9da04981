/* handler_watch: notices changes to the handler directory (a .lua file below it
 * added, removed or modified) by scanning it on a libev timer, and compile-checks
 * every handler file before reporting the change, so that a file that does not
 * compile never reaches a worker by a reload. A change is reported once it has
 * settled (two scans in a row alike, no file empty): a file written in place is
 * not taken half written. Uses libev and LuaJIT (a bare state, for luaL_loadfile
 * only). */
#ifndef LUAWORKER_HANDLER_WATCH_H
#define LUAWORKER_HANDLER_WATCH_H

#include <stddef.h>

struct ev_loop;
struct handler_watch;

/* Called once per change: changed lists the files (relative to the directory,
 * ", "-separated); error is NULL when every handler file compiles, else the
 * first compile error ("path:line: message"). Both valid during the call only. */
typedef void handler_watch_fn(void *data, const char *changed, const char *error);

/* Starts watching dir every interval seconds. Returns NULL when out of memory. */
struct handler_watch *handler_watch_start(struct ev_loop *loop, const char *dir, double interval,
                                          handler_watch_fn *fn, void *data);

void handler_watch_stop(struct handler_watch *w);

/* Compile-checks every handler file below dir now (the files a watch sees: *.lua,
 * no name starting with a dot, at most 16 folders deep), running none. Returns how
 * many do not compile, each one's error in err ("; " between them, as far as err
 * holds them); -1 when it cannot check (err says why). */
int handler_watch_check(const char *dir, char *err, size_t errlen);

/* Calls fn with each handler file below dir (the files a watch sees), relative to
 * dir, sorted; the path is valid during the call only. Returns how many. */
typedef void handler_watch_file_fn(void *data, const char *path);
int handler_watch_files(const char *dir, handler_watch_file_fn *fn, void *data);

#endif
