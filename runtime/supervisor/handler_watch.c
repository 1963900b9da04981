#include "supervisor/handler_watch.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <ev.h>
#include <lauxlib.h>

/* One .lua file as last seen. */
struct entry {
    char *path;          /* relative to the watched directory */
    struct timespec mtime;
    off_t size;
};

struct snapshot {
    struct entry *items;
    size_t count, cap;
};

struct handler_watch {
    struct ev_loop *loop;
    ev_timer timer;
    char dir[PATH_MAX];
    struct snapshot seen;      /* as last reported (or at start) */
    struct snapshot pending;   /* a scan that differed from seen, not yet settled */
    int pending_ticks;         /* scans in a row that found pending */
    handler_watch_fn *fn;
    void *data;
};

static void snapshot_free(struct snapshot *s)
{
    for (size_t i = 0; i < s->count; i++)
        free(s->items[i].path);
    free(s->items);
    memset(s, 0, sizeof *s);
}

static int ends_with_lua(const char *name)
{
    size_t n = strlen(name);
    return n > 4 && strcmp(name + n - 4, ".lua") == 0;
}

/* Adds the .lua files below dir/rel to s (depth-bounded). */
static void scan(const char *dir, const char *rel, struct snapshot *s, int depth)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s%s%s", dir, *rel ? "/" : "", rel);
    DIR *d = opendir(path);
    if (!d || depth > 16) {
        if (d)
            closedir(d);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char sub[PATH_MAX], full[PATH_MAX];
        if (snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", e->d_name) >= (int)sizeof sub ||
            snprintf(full, sizeof full, "%s/%s", dir, sub) >= (int)sizeof full)
            continue;  /* a path too long to open is not a handler */
        struct stat st;
        if (stat(full, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            scan(dir, sub, s, depth + 1);
        } else if (S_ISREG(st.st_mode) && ends_with_lua(e->d_name)) {
            if (s->count == s->cap) {
                size_t cap = s->cap ? s->cap * 2 : 32;
                struct entry *items = realloc(s->items, cap * sizeof *items);
                if (!items)
                    break;
                s->items = items;
                s->cap = cap;
            }
            char *copy = strdup(sub);
            if (!copy)
                break;
            s->items[s->count++] = (struct entry){copy, st.st_mtim, st.st_size};
        }
    }
    closedir(d);
}

static int by_path(const void *a, const void *b)
{
    return strcmp(((const struct entry *)a)->path, ((const struct entry *)b)->path);
}

static int same(const struct entry *a, const struct entry *b)
{
    return a->size == b->size && a->mtime.tv_sec == b->mtime.tv_sec &&
           a->mtime.tv_nsec == b->mtime.tv_nsec;
}

static void append(char *list, size_t size, const char *path)
{
    size_t n = strlen(list);
    if (n + strlen(path) + 3 < size)
        snprintf(list + n, size - n, "%s%s", n ? ", " : "", path);
}

/* Compiles every file of s; writes the first error into err (with all, each error,
 * "; " between them, as far as err holds them). Returns how many do not compile
 * (-1 when no Lua state could be made: err says so). */
static int compile_all(const char *dir, const struct snapshot *s, int all, char *err, size_t errlen)
{
    lua_State *L = luaL_newstate();
    if (!L) {
        snprintf(err, errlen, "cannot create a Lua state to check the handlers");
        return -1;
    }
    int bad = 0;
    err[0] = '\0';
    for (size_t i = 0; i < s->count && (all || bad == 0); i++) {
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", dir, s->items[i].path) >= (int)sizeof path)
            continue;
        if (luaL_loadfile(L, path) != 0) {
            size_t n = strlen(err);
            snprintf(err + n, errlen - n, "%s%s", bad ? "; " : "", lua_tostring(L, -1));
            bad++;
        }
        lua_settop(L, 0);
    }
    lua_close(L);
    return bad;
}


/* Sorts s's items by path; an empty snapshot (no items, NULL) is left alone: qsort
 * must not be handed NULL, even for no items. */
static void sort_snapshot(struct snapshot *s)
{
    if (s->count > 1)
        qsort(s->items, s->count, sizeof *s->items, by_path);
}

/* Whether a and b (sorted) list the same files with the same sizes and times. */
static int same_snapshot(const struct snapshot *a, const struct snapshot *b)
{
    if (a->count != b->count)
        return 0;
    for (size_t i = 0; i < a->count; i++)
        if (strcmp(a->items[i].path, b->items[i].path) || !same(&a->items[i], &b->items[i]))
            return 0;
    return 1;
}

/* Whether a file of s that is not as in seen is empty: most likely one caught
 * between its truncation and its write (an editor or a deploy that writes in
 * place); a handler is never empty. */
static int has_empty_change(const struct snapshot *s, const struct snapshot *seen)
{
    for (size_t i = 0; i < s->count; i++) {
        if (s->items[i].size != 0)
            continue;
        const struct entry *was = seen->count ? bsearch(&s->items[i], seen->items, seen->count,
                                                        sizeof *seen->items, by_path) : NULL;
        if (!was || !same(was, &s->items[i]))
            return 1;
    }
    return 0;
}

/* Scans in a row an empty changed file holds a change back: past them (2 s at the
 * supervisor's 0.25 s), an empty file is taken for what it is. */
#define EMPTY_TICKS 8

/* Each tick: a scan that differs from what was last reported is reported once it has
 * settled (the next scan finds it the same, and no changed file in it is empty, for
 * up to EMPTY_TICKS scans), so that a file being written is not compile-checked, and
 * reloaded, half done. */
static void on_tick(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    struct handler_watch *w = t->data;
    struct snapshot now = {0};
    scan(w->dir, "", &now, 0);
    sort_snapshot(&now);
    if (same_snapshot(&now, &w->seen)) {
        snapshot_free(&now);
        snapshot_free(&w->pending);
        return;
    }
    int again = same_snapshot(&now, &w->pending);
    w->pending_ticks = again ? w->pending_ticks + 1 : 0;
    int settled = again && (!has_empty_change(&now, &w->seen) || w->pending_ticks >= EMPTY_TICKS);
    snapshot_free(&w->pending);
    if (!settled) {
        w->pending = now;
        return;
    }

    char changed[2048] = "";
    size_t i = 0, j = 0;
    while (i < w->seen.count || j < now.count) {
        int c = i == w->seen.count ? 1 : j == now.count ? -1
                : strcmp(w->seen.items[i].path, now.items[j].path);
        if (c < 0) {
            append(changed, sizeof changed, w->seen.items[i++].path);  /* removed */
        } else if (c > 0) {
            append(changed, sizeof changed, now.items[j++].path);      /* added */
        } else {
            if (!same(&w->seen.items[i], &now.items[j]))
                append(changed, sizeof changed, now.items[j].path);
            i++;
            j++;
        }
    }
    snapshot_free(&w->seen);
    w->seen = now;
    if (*changed) {
        char err[1024];
        int bad = compile_all(w->dir, &w->seen, 0, err, sizeof err) != 0;
        w->fn(w->data, changed, bad ? err : NULL);
    }
}

struct handler_watch *handler_watch_start(struct ev_loop *loop, const char *dir, double interval,
                                          handler_watch_fn *fn, void *data)
{
    struct handler_watch *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->loop = loop;
    w->fn = fn;
    w->data = data;
    snprintf(w->dir, sizeof w->dir, "%s", dir);
    scan(w->dir, "", &w->seen, 0);
    sort_snapshot(&w->seen);
    ev_timer_init(&w->timer, on_tick, interval, interval);
    w->timer.data = w;
    ev_timer_start(loop, &w->timer);
    ev_unref(loop);  /* watching alone does not keep the supervisor running */
    return w;
}

void handler_watch_stop(struct handler_watch *w)
{
    if (!w)
        return;
    ev_ref(w->loop);
    ev_timer_stop(w->loop, &w->timer);
    snapshot_free(&w->seen);
    snapshot_free(&w->pending);
    free(w);
}

int handler_watch_files(const char *dir, handler_watch_file_fn *fn, void *data)
{
    struct snapshot s = {0};
    scan(dir, "", &s, 0);
    sort_snapshot(&s);
    for (size_t i = 0; i < s.count; i++)
        fn(data, s.items[i].path);
    size_t n = s.count;
    snapshot_free(&s);
    return (int)n;
}

int handler_watch_check(const char *dir, char *err, size_t errlen)
{
    struct snapshot s = {0};
    scan(dir, "", &s, 0);
    sort_snapshot(&s);
    int bad = compile_all(dir, &s, 1, err, errlen);
    snapshot_free(&s);
    return bad;
}
