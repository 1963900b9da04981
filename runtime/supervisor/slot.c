#include "supervisor/slot.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

struct slot *slot_create(int *fd)
{
    *fd = memfd_create("luaworker-slot", MFD_CLOEXEC);
    if (*fd < 0)
        return NULL;
    if (ftruncate(*fd, sizeof(struct slot)) != 0) {
        int e = errno;
        close(*fd);
        *fd = -1;
        errno = e;
        return NULL;
    }
    void *p = mmap(NULL, sizeof(struct slot), PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        close(*fd);
        *fd = -1;
        errno = e;
        return NULL;
    }
    return p;
}

struct slot *slot_map(int fd)
{
    void *p = mmap(NULL, sizeof(struct slot), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    return p == MAP_FAILED ? NULL : p;
}

void slot_unmap(struct slot *s)
{
    if (s)
        munmap(s, sizeof *s);
}

void slot_clear_worker(struct slot *s)
{
    size_t from = offsetof(struct slot, id);
    memset((char *)s + from, 0, sizeof *s - from);
}

uint64_t slot_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Opens and closes a change of the job fields (the sequence lock). */
static uint32_t begin_write(struct slot *s)
{
    uint32_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
    atomic_store_explicit(&s->seq, seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    return seq;
}

static void end_write(struct slot *s, uint32_t seq)
{
    atomic_store_explicit(&s->seq, seq + 2, memory_order_release);
}

void slot_job_start(struct slot *s, uint64_t job, uint32_t timeout, uint64_t started_ns)
{
    uint32_t seq = begin_write(s);
    atomic_store_explicit(&s->job, job, memory_order_relaxed);
    atomic_store_explicit(&s->timeout, timeout, memory_order_relaxed);
    atomic_store_explicit(&s->started_ns, started_ns, memory_order_relaxed);
    end_write(s, seq);
}

void slot_job_end(struct slot *s)
{
    uint32_t seq = begin_write(s);
    atomic_store_explicit(&s->job, 0, memory_order_relaxed);
    atomic_store_explicit(&s->timeout, 0, memory_order_relaxed);
    end_write(s, seq);
}

int slot_read_job(const struct slot *s, struct slot_job *out)
{
    struct slot *w = (struct slot *)s;  /* atomic loads take non-const pointers in C11 */
    for (int tries = 0; tries < 100; tries++) {
        uint32_t seq = atomic_load_explicit(&w->seq, memory_order_acquire);
        out->job = atomic_load_explicit(&w->job, memory_order_relaxed);
        out->timeout = atomic_load_explicit(&w->timeout, memory_order_relaxed);
        out->started_ns = atomic_load_explicit(&w->started_ns, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (!(seq & 1) && atomic_load_explicit(&w->seq, memory_order_relaxed) == seq)
            return 0;
    }
    return -1;
}

int slot_job_overdue(const struct slot_job *j, uint64_t now)
{
    if (!j->job || j->timeout == 0 || now <= j->started_ns)
        return 0;
    return now - j->started_ns >= (uint64_t)j->timeout * 1000000000u;
}
