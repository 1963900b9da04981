/* vm: the LuaJIT state and the libev loop that drives it. The loop resumes one
 * main coroutine, the scheduler of runtime/loop/task.lua, which runs luaworker's
 * tasks (the program, each job in flight). A function of a binding that waits (a
 * Redis command, a sleep, a statement) takes a ticket, a number no other wait
 * under way has (a small one: the scheduler's tables keyed by tickets stay
 * arrays), and yields WAIT and the ticket up to the scheduler; when the reply or
 * timer arrives, the loop resumes the scheduler with the ticket and the results,
 * and the scheduler resumes the task that waits for that ticket.
 *
 * The vm knows no client: each binding (loop/waits, loop/system, redis/, db/,
 * http/, queue/, worker/) keeps its own state, adds its functions to the
 * "luaworker.host" module (vm_add_functions), is told of signals (vm_on_wake) and
 * is closed with the vm (vm_on_close). Uses config, php_value, encrypter, cli and
 * lua-cjson. */
#ifndef LUAWORKER_LOOP_VM_H
#define LUAWORKER_LOOP_VM_H

#include <stdint.h>

#include <ev.h>
#include <lauxlib.h>
#include <lua.h>

#include "config/cli.h"
#include <sys/queue.h>

#include "config/config.h"
#include "loop/signals.h"

/* A wait in progress: its ticket and, for one that can be cancelled (a timer of
 * loop/waits, a request of http_binding), how, and its place in the vm's list of
 * those (loop/waiter.c). Taken with vm_waiter_take, given back with vm_waiter_give
 * (kept for reuse, with its ticket: a ticket is in use by one wait at a time, from
 * its start until its result reaches the scheduler or it is cancelled). Tickets
 * below VM_FIRST_WAITER_TICKET are the bindings' own, for waits one at a time (see
 * redis_binding.h). */
enum { VM_FIRST_WAITER_TICKET = 3 };

struct vm_waiter {
    struct vm *h;
    double ticket;
    ev_timer timer;                 /* a timer's */
    int wakeable;                   /* a signal ends it early (host.sleep, a LISTEN wait) */
    int waking;                     /* a signal came while it waited: it is being ended */
    void *data;                     /* what its cancel ends (a request, a connection) */
    void (*cancel)(struct vm_waiter *w);  /* ends it, its ticket never brought */
    void (*expire)(struct vm_waiter *w);  /* its deadline's, while one runs */
    LIST_ENTRY(vm_waiter) link;     /* in the vm's waits or spare, or neither */
};

LIST_HEAD(vm_waiters, vm_waiter);

#define VM_UNITS_MAX 16
#define VM_HOOKS_MAX 8

struct vm {
    lua_State *L;
    lua_State *co;                  /* the main coroutine */
    int co_ref;
    struct ev_loop *loop;
    struct config config;
    int finished;                   /* the main coroutine returned or raised */
    int closing;                    /* replies no longer resume Lua */
    int exit_code;

    /* signals */
    ev_signal signals[SIGNALS_COUNT];  /* what arrived: signal_arrival.h */
    void (*wake[VM_HOOKS_MAX])(struct vm *h);   /* after a signal: end the waits */
    int wakes;

    /* waits */
    double waiters;                 /* waiters made so far (each has its ticket) */
    struct vm_waiters waits;        /* the waits that can be cancelled (timers, requests) */
    struct vm_waiters spare;        /* waiters given back, for reuse */
    int waiters_ref;                /* registry: weak set of the coroutines that may
                                     * wait besides the main one (host.allow_waits) */

    /* the bindings: their functions, and what closes them (in reverse order) */
    const luaL_Reg *units[VM_UNITS_MAX];
    int nunits;
    struct { void (*fn)(void *data); void *data; } closers[VM_HOOKS_MAX];
    int ncloser;

    /* the Lua heap's budget (see vm_set_memory_limit) */
    lua_Alloc heap_alloc;           /* LuaJIT's own allocator, which does the work */
    void *heap_ud;
    size_t heap_used;               /* bytes the state holds */
    size_t heap_limit;              /* 0: no limit */
    int heap_over;                  /* an allocation was refused; not back under yet */
    int heap_strict;                /* no grace: a result is being handed to Lua */
    size_t heap_refused;            /* what the heap would have held at the last refusal */
};

/* Sets up h (state, loop, signal watchers). Returns 0, or -1 with err set. */
int vm_open(struct vm *h, const struct config *config, char *err, size_t errlen);

/* Adds fns (functions taking the vm as upvalue 1, see vm_of) to the
 * "luaworker.host" module, made at its first require. Before vm_run. */
void vm_add_functions(struct vm *h, const luaL_Reg *fns);

/* Makes the metatable name (for luaL_checkudata) of a binding's values, with gc as
 * their __gc. */
void vm_add_type(struct vm *h, const char *name, lua_CFunction gc);

/* Starts timer t (set with its seconds) relative to the time now, not to the loop's
 * cached time, which is as old as the Lua that ran since the loop last looked at the
 * clock: a timer of s seconds never fires before s seconds have passed. */
void vm_timer_start(struct vm *h, ev_timer *t);

/* A binding's value in Lua is a handle: a userdata of a type vm_add_type made,
 * holding a pointer to the binding's C object. vm_push_handle pushes a new one;
 * vm_handle gives the object of the handle at idx (raising when it is not of type;
 * NULL once taken); vm_take_handle gives it and leaves the handle empty, for the
 * type's __gc and a close that frees the object. */
void vm_push_handle(lua_State *L, const char *type, void *object);
void *vm_handle(lua_State *L, int idx, const char *type);
void *vm_take_handle(lua_State *L, int idx, const char *type);

/* The one shape of a failure a binding's function returns to Lua:
 *   false, message, kind, details...
 * kind names what failed, for the Lua side to act on without reading the message:
 * "memory" (a result that does not fit under --memory-limit), "connection" (a
 * connection failed or could not be made), "query" (the server refused the
 * statement), "size" (an HTTP response over its max_size), "request" (an HTTP
 * transfer failed); Redis' are "reply", "lost", "unreachable" (redis_binding.h).
 * details follow where a client has them (a SQLSTATE or SQLite's code, MySQL's
 * error number). Pushes false, message and kind; returns 3, to which the caller
 * adds the details it pushes after. */
int vm_push_error(lua_State *L, const char *message, const char *kind);

/* fn(h) is called after each signal that may end a wait (all but USR2), once the
 * loop dispatches it. */
void vm_on_wake(struct vm *h, void (*fn)(struct vm *h));

/* fn(data) is called by vm_close, before the state closes, last added first. */
void vm_on_close(struct vm *h, void (*fn)(void *data), void *data);

/* Runs require("luaworker.main").run(cli, config) in the main coroutine until it
 * returns; returns its result as the process exit status (70 when it raised). */
int vm_run(struct vm *h, const struct cli *cli);

/* Resumes the main coroutine with ticket and the nargs values pushed on it. Called
 * by the loop's callbacks only, for values that cost no allocation (booleans);
 * others go through vm_resume_with. Once the main coroutine ended (a callback due
 * in the same turn of the loop) or the vm closes, drops the values and does
 * nothing. */
void vm_resume(struct vm *h, double ticket, int nargs);

/* How a binding hands a wait's result to Lua: push(L, data) pushes the values and
 * returns how many; too_big(L, message) pushes the binding's failure values for a
 * result that does not fit under --memory-limit (message says so, naming the size
 * and the limit) and returns how many. */
struct vm_pusher {
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
void vm_resume_with(struct vm *h, double ticket, const struct vm_pusher *p, void *data,
                      size_t bytes);

/* As vm_resume_with, but the values are left on the main state's stack for
 * store(L, count, data) to keep (it pops them); for a result no task waits for yet.
 * Returns 0, or -1 after reporting an error. */
int vm_keep_result(struct vm *h, const struct vm_pusher *p, void *data, size_t bytes,
                     int (*store)(lua_State *L, int count, void *data));

/* A waiter, its ticket free (one given back is reused), or NULL when there is no
 * memory. */
struct vm_waiter *vm_waiter_take(struct vm *h);

/* Gives w back for reuse (its timer must be stopped); its ticket is free again. */
void vm_waiter_give(struct vm_waiter *w);

/* A waiter for a wait that can be cancelled: data and cancel set, linked into
 * h->waits. Raises out of memory in L. */
struct vm_waiter *vm_waiter_start(lua_State *L, struct vm *h, void *data,
                                  void (*cancel)(struct vm_waiter *w));

/* Ends w's wait with expire(w) if it has not ended within seconds (w's timer: for
 * a wait that is not a timer, a connection's set-up). vm_waiter_drop stops it. */
void vm_waiter_deadline(struct vm_waiter *w, double seconds, void (*expire)(struct vm_waiter *w));

/* Ends w's wait now as its deadline would (expire(w)), its timer stopped: a wakeable
 * wait with a deadline that a signal ends early. */
void vm_waiter_expire(struct vm_waiter *w);

/* Takes w out of h->waits and gives it back (its wait ended, or was cancelled). */
void vm_waiter_drop(struct vm_waiter *w);

/* Adds w to h->waits (it can be cancelled: w->cancel is set), or takes it out. */
void vm_waiter_link(struct vm_waiter *w);
void vm_waiter_unlink(struct vm_waiter *w);

/* Ends the process's run with status 70 after an internal error (what). */
void vm_fail(struct vm *h, const char *what);

/* Runs fn(L, data) in a protected call on the main state (for callbacks that store
 * values in Lua without resuming). Returns 0, or -1 after reporting the error. */
int vm_protected(struct vm *h, int (*fn)(lua_State *L, void *data), void *data);

/* The host stored as upvalue 1 of a host function. */
struct vm *vm_of(lua_State *L);

/* Yields the calling coroutine with host.WAIT and ticket, for the scheduler to
 * resume when the loop brings that ticket (see task.lua). Use as
 * `return vm_yield(L, ticket);`. */
int vm_yield(lua_State *L, double ticket);

/* Raises unless L may wait for the loop: a coroutine of luaworker's tasks
 * (host.allow_waits), never the main coroutine (the scheduler). A host function that
 * yields calls it before it starts anything: a coroutine a handler made itself
 * would get host.WAIT back from its own resume, and the loop would resume the
 * main coroutine with a reply meant for it. Returns 0. */
int vm_check_wait(lua_State *L);

/* The marker vm_yield yields, exposed as host.WAIT. */
extern char vm_wait_marker;

/* Caps the Lua heap at bytes (0: no limit). An allocation that would take it past
 * the cap is refused, so LuaJIT raises "not enough memory" in the code that asked
 * (a handler's error, which fails its job). After a refusal, up to
 * VM_HEAP_GRACE bytes more are allowed until the heap is back under the cap, so
 * that the error can be reported and the job failed. */
void vm_set_memory_limit(struct vm *h, size_t bytes);

#define VM_HEAP_GRACE ((size_t)64 << 20)

/* Closes the connections and the state; frees what the host units hold. */
void vm_close(struct vm *h);

#endif
