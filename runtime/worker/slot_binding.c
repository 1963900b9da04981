#include "worker/slot_binding.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "loop/system.h"
#include "loop/vm.h"
#include "supervisor/slot.h"

/* The worker's side of its slot (one vm a process). */
static struct {
    struct slot *slot;              /* shared with the supervisor, NULL when none */
    char id[SLOT_ID_MAX];           /* this process's id, as its jobs are recorded */
} sl;

/* host.identity() -> this process's id, under which its jobs are recorded. */
static int l_host_identity(lua_State *L)
{
    lua_pushstring(L, sl.id);
    return 1;
}

/* host.predecessor() -> id, job, timeout, death of the worker this one replaces,
 * when it ended without giving back its jobs; nil when there is none. job: the
 * number of the job it ran when it was killed for running past its timeout
 * (timeout: that timeout) or crashed (death: how it ended), 0 when none. */
static int l_host_predecessor(lua_State *L)
{
    struct slot *s = sl.slot;
    if (!s || !s->predecessor[0])
        return 0;
    char id[SLOT_ID_MAX];
    memcpy(id, s->predecessor, sizeof id);
    id[sizeof id - 1] = '\0';
    lua_pushstring(L, id);
    lua_pushnumber(L, (lua_Number)s->predecessor_job);
    lua_pushnumber(L, s->predecessor_timeout);
    char death[sizeof s->predecessor_death];
    memcpy(death, s->predecessor_death, sizeof death);
    death[sizeof death - 1] = '\0';
    lua_pushstring(L, death);
    return 4;
}

/* host.replacing() -> true when this worker replaces one of a running fleet (its
 * start-up checks report a lasting fault and go on, as the worker it replaces
 * did), false at the fleet's start or without a supervisor (--once). */
static int l_host_replacing(lua_State *L)
{
    lua_pushboolean(L, sl.slot && sl.slot->replacing);
    return 1;
}

/* host.report_ready(): the handlers are loaded (a worker that ends before this
 * failed to start, and is started again after a delay). */
static int l_host_report_ready(lua_State *L)
{
    (void)L;
    struct slot *s = sl.slot;
    if (s)
        atomic_store(&s->ready, 1);
    return 0;
}

/* host.report_running(job, timeout, started): job (its number) gets the CPU; it
 * started at host.clock() time started (moved on by the time outages held it up);
 * the supervisor ends the process when it keeps the CPU past timeout seconds from
 * then (cut to 0..UINT32_MAX: it comes from the payload; 0 = none). No system call. */
static int l_host_report_running(lua_State *L)
{
    struct slot *s = sl.slot;
    lua_Number job = luaL_checknumber(L, 1);
    lua_Number seconds = luaL_checknumber(L, 2);
    lua_Number started = luaL_checknumber(L, 3);
    uint32_t timeout = !(seconds > 0) ? 0 : seconds >= (lua_Number)UINT32_MAX ? UINT32_MAX
                                                                             : (uint32_t)seconds;
    if (s)
        slot_job_start(s, job > 0 ? (uint64_t)job : 0, timeout,
                       started > 0 ? (uint64_t)(started * 1e9) : 0);
    return 0;
}

/* host.report_end(): no job has the CPU. No system call. */
static int l_host_report_end(lua_State *L)
{
    (void)L;
    struct slot *s = sl.slot;
    if (s)
        slot_job_end(s);
    return 0;
}

/* host.report_exit(reason): the reason this worker stops ("max_jobs", "empty"...),
 * for the supervisor (at most 31 bytes are kept). */
static int l_host_report_exit(lua_State *L)
{
    struct slot *s = sl.slot;
    const char *reason = luaL_checkstring(L, 1);
    if (s)
        snprintf(s->reason, sizeof s->reason, "%s", reason);
    return 0;
}

static const char *const outcomes[] = {"processed", "failed", "released", NULL};

/* The class argument at i: a string, else "" (a payload whose name is not one). */
static const char *class_arg(lua_State *L, int i)
{
    return lua_type(L, i) == LUA_TSTRING ? lua_tostring(L, i) : "";
}

/* host.count_job(queue, class, outcome): one job more of queue and class
 * (job:name(); "" when it is no string) for outcome: "processed"
 * (JobProcessed), "failed" (failed for good) or "released" (each release). In
 * the slot's counts (slot_counts); nothing without a supervisor (--once). */
static int l_host_count_job(lua_State *L)
{
    const char *queue = luaL_checkstring(L, 1), *job = class_arg(L, 2);
    int outcome = luaL_checkoption(L, 3, NULL, outcomes);
    if (sl.slot)
        counts_outcome(counts_series_of(&sl.slot->counts, queue, job), (enum counts_outcome)outcome);
    return 0;
}

/* host.count_attempt(queue, class, seconds): an attempt of a job of queue and
 * class (its code's run) took seconds. */
static int l_host_count_attempt(lua_State *L)
{
    const char *queue = luaL_checkstring(L, 1), *job = class_arg(L, 2);
    lua_Number seconds = luaL_checknumber(L, 3);
    if (sl.slot)
        counts_attempt(counts_series_of(&sl.slot->counts, queue, job), seconds);
    return 0;
}

/* host.record_failure(queue, class, exception): a job failed for good now, its
 * exception's first line (for the live page; cut to fit). */
static int l_host_record_failure(lua_State *L)
{
    const char *queue = luaL_checkstring(L, 1), *job = class_arg(L, 2);
    const char *exception = luaL_checkstring(L, 3);
    if (sl.slot)
        counts_failure(&sl.slot->counts, queue, job, exception, (uint64_t)system_unix_time());
    return 0;
}

/* host.report_in_flight(n): the worker has n jobs in flight. */
static int l_host_report_in_flight(lua_State *L)
{
    lua_Number n = luaL_checknumber(L, 1);
    if (sl.slot)
        atomic_store_explicit(&sl.slot->in_flight, n > 0 ? (uint32_t)n : 0, memory_order_relaxed);
    return 0;
}

/* host.count_connection_loss(): an outage of the worker's connections began. */
static int l_host_count_connection_loss(lua_State *L)
{
    (void)L;
    if (sl.slot)
        atomic_fetch_add_explicit(&sl.slot->counts.connection_losses, 1, memory_order_relaxed);
    return 0;
}

/* host.reports_queue_sizes() -> whether this worker reports its queues' sizes
 * (host.report_queue_sizes) for the metrics. */
static int l_host_reports_queue_sizes(lua_State *L)
{
    lua_pushboolean(L, sl.slot && sl.slot->reports_sizes);
    return 1;
}

/* host.report_queue_sizes({ {queue, pending, delayed, reserved, oldest_wait}, ... }):
 * the sizes of the worker's queues now (the first COUNTS_QUEUES), and how long the
 * oldest waiting job of each has waited (seconds, nil when unknown). */
static int l_host_report_queue_sizes(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    struct counts_queue_size sizes[COUNTS_QUEUES];
    uint32_t n = 0;
    for (int i = 1; n < COUNTS_QUEUES; i++) {
        lua_rawgeti(L, 1, i);
        if (!lua_istable(L, -1)) {
            lua_pop(L, 1);
            break;
        }
        struct counts_queue_size *q = &sizes[n++];
        lua_rawgeti(L, -1, 1);
        snprintf(q->queue, sizeof q->queue, "%s", luaL_checkstring(L, -1));
        uint64_t *parts[3] = {&q->pending, &q->delayed, &q->reserved};
        for (int p = 0; p < 3; p++) {
            lua_rawgeti(L, -2 - p, p + 2);
            lua_Number v = luaL_checknumber(L, -1);
            *parts[p] = v > 0 ? (uint64_t)v : 0;
        }
        lua_rawgeti(L, -5, 5);
        lua_Number wait = lua_isnumber(L, -1) ? lua_tonumber(L, -1) : -1;
        q->oldest_wait = wait >= 0 ? (int64_t)wait : -1;
        lua_pop(L, 6);
    }
    if (sl.slot)
        counts_report_sizes(&sl.slot->counts, sizes, n, slot_now_ns());
    return 0;
}

static const luaL_Reg functions[] = {
    {"reports_queue_sizes", l_host_reports_queue_sizes},
    {"report_queue_sizes", l_host_report_queue_sizes},
    {"count_job", l_host_count_job},
    {"record_failure", l_host_record_failure},
    {"count_attempt", l_host_count_attempt},
    {"report_in_flight", l_host_report_in_flight},
    {"count_connection_loss", l_host_count_connection_loss},
    {"identity", l_host_identity},
    {"predecessor", l_host_predecessor},
    {"replacing", l_host_replacing},
    {"report_ready", l_host_report_ready},
    {"report_running", l_host_report_running},
    {"report_end", l_host_report_end},
    {"report_exit", l_host_report_exit},
    {NULL, NULL},
};

static void close_binding(void *data)
{
    (void)data;
    slot_unmap(sl.slot);
    sl.slot = NULL;
}

int slot_binding_attach(struct vm *h, int fd)
{
    vm_add_functions(h, functions);
    vm_on_close(h, close_binding, NULL);
    char name[64] = "localhost", suffix[7];
    gethostname(name, sizeof name - 1);
    name[sizeof name - 1] = '\0';
    for (char *p = name; *p; p++)
        if (*p == ':' || *p == ' ')
            *p = '-';
    system_random_id(suffix, 6);
    suffix[6] = '\0';
    snprintf(sl.id, sizeof sl.id, "%s:%d:%s", name, (int)getpid(), suffix);
    if (fd < 0)
        return 0;
    sl.slot = slot_map(fd);
    if (!sl.slot)
        return -1;
    memcpy(sl.slot->id, sl.id, sizeof sl.slot->id);
    return 0;
}
