/* lua_host: the LuaJIT state and the libev loop that drives it. The loop resumes
 * one main coroutine, the scheduler of runtime/host/task.lua, which runs
 * luaworker's tasks (the program, each job in flight). A host function that waits
 * (a Redis command, a sleep) takes a ticket, a number no other wait under way has
 * (a small one: the scheduler's tables keyed by tickets stay arrays), and yields
 * host.WAIT and the ticket up to the scheduler; when the reply or
 * timer arrives, the loop resumes the scheduler with the ticket and the results,
 * and the scheduler resumes the task that waits for that ticket. The state the
 * host functions share (host_api and its units) is struct host. Uses config,
 * scripts, redis_conn, redis_sub, php_value, encrypter, cli and lua-cjson. */
#ifndef LUAWORKER_LUA_HOST_H
#define LUAWORKER_LUA_HOST_H

#include <stdint.h>

#include <ev.h>
#include <lua.h>

#include "config/cli.h"
#include "config/config.h"
#include "redis/scripts.h"
#include "supervisor/signals.h"

struct redis_conn;
struct redis_sub;
struct slot;
struct http_client;

/* HOST_BLOCK_CONN: the queue's database, for host.wait_notify's BLPOP (so that the
 * queue connection stays free to end it with CLIENT UNBLOCK) and the CLIENT
 * TRACKING that reports changes of the delayed sets to h->sub (see
 * host.subscribe_invalidations). */
enum { HOST_QUEUE_CONN = 0, HOST_CACHE_CONN = 1, HOST_BLOCK_CONN = 2, HOST_CONNS = 3 };

#define HOST_ID_MAX 128

/* A wait in progress: its ticket and, for one that can be cancelled (a timer of
 * host_wait, a request of host_http), how, and its place in the host's list of
 * those. Taken with host_waiter_take, given
 * back with host_waiter_give (kept for reuse, with its ticket: a ticket is in use
 * by one wait at a time, from its start until its result reaches the scheduler or
 * it is cancelled). */
enum {
    HOST_BLOCK_TICKET = 1,          /* host.wait_notify's (one at a time) */
    HOST_COLLECT_TICKET = 2,        /* host.collect's (one at a time) */
    HOST_FIRST_WAITER_TICKET = 3    /* waiters': 3, 4, ... */
};

struct host_waiter {
    struct host *h;
    double ticket;
    ev_timer timer;                 /* a timer's */
    int wakeable;                   /* a signal ends it early (host.sleep) */
    void *data;                     /* what its cancel ends (a request, a connection) */
    void (*cancel)(struct host_waiter *w);  /* ends it, its ticket never brought */
    struct host_waiter *prev, *next;
};

struct host {
    lua_State *L;
    lua_State *co;                  /* the main coroutine */
    int co_ref;
    struct ev_loop *loop;
    struct config config;
    struct scripts scripts;
    struct redis_conn *conns[HOST_CONNS];
    int finished;                   /* the main coroutine returned or raised */
    int closing;                    /* replies no longer resume Lua */
    int exit_code;

    /* signals (lua_host) */
    ev_signal signals[SIGNALS_COUNT];
    volatile int quit;              /* the TERM, INT or QUIT that arrived, or 0 */
    volatile int paused;            /* USR2 arrived, CONT not yet */
    volatile int reload;            /* HUP arrived: end after the current job */
    void (*wake)(struct host *h);   /* called after a signal: ends the current wait */

    /* waits (host_wait) */
    double waiters;                 /* waiters made so far (each has its ticket) */
    struct host_waiter *waits;      /* the waits that can be cancelled (timers, requests) */
    struct http_client *http;       /* host_http's, made by the first request; or NULL */
    struct host_waiter *spare;      /* waiters given back, for reuse */
    ev_timer wait_timer;            /* ends host.wait_notify's BLPOP at its deadline */
    int blocking;                   /* a host.wait_notify BLPOP is in flight */
    int unblock_wanted;             /* end it as soon as its client id is known */
    long long block_client_id;      /* CLIENT ID of HOST_BLOCK_CONN, 0 until known */
    struct redis_sub *sub;          /* listens to __redis__:invalidate, or NULL */
    int invalidated;                /* an invalidation came since host.take_invalidated */

    /* Redis commands (host_redis) */
    int send_errors;                /* host.send replies that were errors, since read */
    char send_error[600];           /* the last one */
    int deferred_ref;               /* registry: id -> result of a host.defer call */
    int waiters_ref;                /* registry: weak set of the coroutines that may
                                     * wait besides the main one (host.allow_waits) */
    unsigned deferred_next;         /* the next id */
    unsigned collecting;            /* the id a task waits for in host.collect, 0 when none */

    /* the heartbeat and the lease it gives (host_heartbeat); times are host.clock() */
    ev_timer heartbeat_timer;
    char **heartbeat_argv;          /* the keys, the value, the ttl in ms; owned */
    int heartbeat_keys;
    int heartbeat_pending;          /* replies of the round in flight */
    int heartbeat_round_ok;
    double heartbeat_sent;          /* when the round in flight was sent */
    double lease;                   /* seconds a confirmed heartbeat holds the lease */
    double lease_confirmed;         /* when the last confirmed heartbeat was sent */
    double lease_since;             /* when the first of an unbroken run of them was */

    /* the supervisor (host_slot) */
    struct slot *slot;              /* shared with the supervisor, NULL when none */
    char id[HOST_ID_MAX];           /* this process's id, as its jobs are recorded */

    /* the Lua heap's budget (see host_set_memory_limit) */
    lua_Alloc heap_alloc;           /* LuaJIT's own allocator, which does the work */
    void *heap_ud;
    size_t heap_used;               /* bytes the state holds */
    size_t heap_limit;              /* 0: no limit */
    int heap_over;                  /* an allocation was refused; not back under yet */
    int heap_strict;                /* no grace: a result is being handed to Lua */
    size_t heap_refused;            /* what the heap would have held at the last refusal */
};

/* Sets up h (state, loop, connections, signal watchers); takes ownership of
 * scripts. Returns 0, or -1 with err set. */
int host_open(struct host *h, const struct config *config, struct scripts *scripts,
              char *err, size_t errlen);

/* Runs require("luaworker.main").run(cli, config) in the main coroutine until it
 * returns; returns its result as the process exit status (70 when it raised). */
int host_run(struct host *h, const struct cli *cli);

/* Resumes the main coroutine with ticket and the nargs values pushed on it. Called
 * by the loop's callbacks only, for values that cost no allocation (booleans);
 * others go through host_resume_with. */
void host_resume(struct host *h, double ticket, int nargs);

/* How a binding hands a wait's result to Lua: push(L, data) pushes the values and
 * returns how many; too_big(L, message) pushes the binding's failure values for a
 * result that does not fit under --memory-limit (message says so, naming the size
 * and the limit) and returns how many. */
struct host_pusher {
    int (*push)(lua_State *L, void *data);
    int (*too_big)(lua_State *L, const char *message);
};

/* Resumes the main coroutine with ticket and the values p->push pushes. bytes: the
 * result's size as far as the binding knows it (0: unknown). push runs in a
 * protected call on the main state, without the heap's grace: a result that does
 * not fit under the Lua heap's limit, after a full collection, is handed over as
 * p->too_big's failure instead, an error of the task that waits (its job's), never
 * of the process. Any allocation may run a __gc finalizer, and one that raises is
 * reported and push run again. Called by the loop's callbacks. */
void host_resume_with(struct host *h, double ticket, const struct host_pusher *p, void *data,
                      size_t bytes);

/* As host_resume_with, but the values are left on the main state's stack for
 * store(L, count, data) to keep (it pops them); for a result no task waits for yet.
 * Returns 0, or -1 after reporting an error. */
int host_keep_result(struct host *h, const struct host_pusher *p, void *data, size_t bytes,
                     int (*store)(lua_State *L, int count, void *data));

/* A waiter, its ticket free (one given back is reused), or NULL when there is no
 * memory. */
struct host_waiter *host_waiter_take(struct host *h);

/* Gives w back for reuse (its timer must be stopped); its ticket is free again. */
void host_waiter_give(struct host_waiter *w);

/* Adds w to h->waits (it can be cancelled: w->cancel is set), or takes it out. */
void host_waiter_link(struct host_waiter *w);
void host_waiter_unlink(struct host_waiter *w);

/* Ends the process's run with status 70 after an internal error (what). */
void host_fail(struct host *h, const char *what);

/* Runs fn(L, data) in a protected call on the main state (for callbacks that store
 * values in Lua without resuming). Returns 0, or -1 after reporting the error. */
int host_protected(struct host *h, int (*fn)(lua_State *L, void *data), void *data);

/* The host stored as upvalue 1 of a host function. */
struct host *host_of(lua_State *L);

/* Yields the calling coroutine with host.WAIT and ticket, for the scheduler to
 * resume when the loop brings that ticket (see task.lua). Use as
 * `return host_yield(L, ticket);`. */
int host_yield(lua_State *L, double ticket);

/* Raises unless L may wait for the loop: a coroutine of luaworker's tasks
 * (host.allow_waits), never the main coroutine (the scheduler). A host function that
 * yields calls it before it starts anything: a coroutine a handler made itself
 * would get host.WAIT back from its own resume, and the loop would resume the
 * main coroutine with a reply meant for it. Returns 0. */
int host_check_wait(lua_State *L);

/* The marker host_yield yields, exposed as host.WAIT. */
extern char host_wait_marker;

/* Caps the Lua heap at bytes (0: no limit). An allocation that would take it past
 * the cap is refused, so LuaJIT raises "not enough memory" in the code that asked
 * (a handler's error, which fails its job). After a refusal, up to
 * HOST_HEAP_GRACE bytes more are allowed until the heap is back under the cap, so
 * that the error can be reported and the job failed. */
void host_set_memory_limit(struct host *h, size_t bytes);

#define HOST_HEAP_GRACE ((size_t)64 << 20)

/* Closes the connections and the state; frees what the host units hold. */
void host_close(struct host *h);

#endif
