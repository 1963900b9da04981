/* lua_host: the LuaJIT state and the libev loop that drives it. Everything
 * luaworker does runs in one main coroutine (runtime/main.lua); host functions
 * that wait (Redis commands, sleeps) yield it and the loop resumes it when the
 * reply or timer arrives. A coroutine started by luaworker (one per job) passes
 * such yields up to the main coroutine. Uses config, scripts, redis_conn,
 * redis_sub, supervisor (the job state it shares), host_api, php_value, cli and
 * lua-cjson. */
#ifndef LUAWORKER_LUA_HOST_H
#define LUAWORKER_LUA_HOST_H

#include <stdint.h>

#include <ev.h>
#include <lua.h>

#include "config/cli.h"
#include "config/config.h"
#include "redis/scripts.h"

struct redis_conn;
struct supervisor_slot;
struct redis_sub;

struct host {
    lua_State *L;
    lua_State *co;                  /* the main coroutine */
    int co_ref;
    struct ev_loop *loop;
    struct config config;
    struct scripts scripts;
    struct redis_conn *conns[3];    /* by HOST_*_CONN */
    ev_timer sleep_timer;
    ev_timer wait_timer;            /* ends host.wait_notify's BLPOP at its deadline */
    int blocking;                   /* a host.wait_notify BLPOP is in flight */
    int unblock_wanted;             /* end it as soon as its client id is known */
    long long block_client_id;      /* CLIENT ID of HOST_BLOCK_CONN, 0 until known */
    struct redis_sub *sub;          /* listens to __redis__:invalidate, or NULL */
    int invalidated;                /* an invalidation came since host.take_invalidated */
    ev_signal signals[6];
    volatile int quit;              /* TERM, INT or QUIT arrived */
    volatile int paused;            /* USR2 arrived, CONT not yet */
    volatile int reload;            /* HUP arrived: end after the current job */
    int supervisor_fd;              /* socket to the supervisor, -1 when none */
    int send_errors;                /* host.send replies that were errors, since read */
    char send_error[600];           /* the last one */
    struct supervisor_slot *slot;   /* the job state the supervisor reads, or NULL */
    uint32_t batch;                 /* number of the last 'B' frame sent */
    uint32_t job_batch, job_index;  /* batch and index of the job started last */
    int prefetching;                /* a host.prefetch reply is awaited */
    int prefetch_waiting;           /* the main coroutine waits for it */
    int prefetch_ref;               /* its reply, in the registry, or LUA_NOREF */
    char prefetch_queue[256];       /* its queue */
    int finished;                   /* the main coroutine returned or raised */
    int closing;                    /* replies no longer resume Lua */
    int exit_code;
    /* the Lua heap's budget (see host_set_memory_limit) */
    lua_Alloc heap_alloc;           /* LuaJIT's own allocator, which does the work */
    void *heap_ud;
    size_t heap_used;               /* bytes the state holds */
    size_t heap_limit;              /* 0: no limit */
    int heap_over;                  /* an allocation was refused; not back under yet */
};

/* HOST_BLOCK_CONN: the queue's database, for host.wait_notify's BLPOP (so that the
 * queue connection stays free to end it with CLIENT UNBLOCK) and the CLIENT
 * TRACKING that reports changes of the delayed sets to h->sub (see
 * host.subscribe_invalidations). */
enum { HOST_QUEUE_CONN = 0, HOST_CACHE_CONN = 1, HOST_BLOCK_CONN = 2, HOST_CONNS = 3 };

/* Sets up h (state, loop, connections, signal watchers); takes ownership of
 * scripts. Returns 0, or -1 with err set. */
int host_open(struct host *h, const struct config *config, struct scripts *scripts,
              char *err, size_t errlen);

/* Runs require("luaworker.main").run(cli, config) in the main coroutine until it
 * returns; returns its result as the process exit status (70 when it raised). */
int host_run(struct host *h, const struct cli *cli);

/* Resumes the main coroutine with the nargs values pushed on it. Called by the
 * loop's callbacks only. */
void host_resume(struct host *h, int nargs);

/* Caps the Lua heap at bytes (0: no limit). An allocation that would take it past
 * the cap is refused, so LuaJIT raises "not enough memory" in the code that asked
 * (a handler's error, which fails its job). After a refusal, up to
 * HOST_HEAP_GRACE bytes more are allowed until the heap is back under the cap, so
 * that the error can be reported and the job failed. */
void host_set_memory_limit(struct host *h, size_t bytes);

#define HOST_HEAP_GRACE ((size_t)64 << 20)

void host_close(struct host *h);

#endif
