/* The slot's job clock, as the supervisor reads it for timeouts
 * (runtime/supervisor/slot.c), with the times the worker and the supervisor see on
 * their two CPUs set by hand. Prints TAP; exits 1 when a check failed. */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "supervisor/slot.h"

static int checks, failures;

static void check(int ok, const char *what)
{
    checks++;
    if (!ok)
        failures++;
    printf("%sok %d - slot: %s\n", ok ? "" : "not ", checks, what);
}

static void pause_ms(long ms)
{
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

static const uint64_t SECOND = 1000000000u;

int main(void)
{
    int fd;
    struct slot *s = slot_create(&fd);
    if (!s) {
        printf("not ok 1 - slot: slot_create\n");
        return 1;
    }
    struct slot_job j;

    slot_job_start(s, 7, 60);
    check(slot_read_job(s, &j) == 0 && j.job == 7 && j.timeout == 60, "reads the job started");
    /* the supervisor took its time just before the worker started the job */
    check(!slot_job_overdue(&j, j.started_ns - 1), "a job started after now is not overdue");
    check(!slot_job_overdue(&j, j.started_ns + 59 * SECOND), "a job within its timeout is not");
    check(slot_job_overdue(&j, j.started_ns + 60 * SECOND), "a job at its timeout is overdue");

    /* waits for Redis stop the clock */
    uint64_t started = j.started_ns;
    slot_wait(s, 1);
    slot_read_job(s, &j);
    check(!slot_job_overdue(&j, started + 3600 * SECOND), "a job waiting for Redis is not overdue");
    pause_ms(20);
    slot_wait(s, 0);
    slot_read_job(s, &j);
    check(j.started_ns >= started + 20000000u, "the time a job waited is not counted");

    /* a wait that began before the job (the next jobs' pop) counts from its start */
    slot_job_end(s);
    slot_wait(s, 1);
    pause_ms(30);
    slot_job_start(s, 8, 1);
    slot_wait(s, 0);
    slot_read_job(s, &j);
    check(j.started_ns <= slot_now_ns(), "a wait begun before the job does not move its start past now");
    check(slot_job_overdue(&j, slot_now_ns() + SECOND), "that job still times out");

    slot_job_end(s);
    slot_read_job(s, &j);
    check(!slot_job_overdue(&j, slot_now_ns() + 3600 * SECOND), "no job, nothing overdue");

    slot_unmap(s);
    printf("1..%d\n", checks);
    return failures ? 1 : 0;
}
