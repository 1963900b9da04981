/* The slot's job clock, as the supervisor reads it for timeouts
 * (runtime/supervisor/slot.c), with the times the worker and the supervisor see on
 * their two CPUs set by hand. Prints TAP; exits 1 when a check failed. */
#include <stdint.h>
#include <stdio.h>

#include "supervisor/slot.h"

static int checks, failures;

static void check(int ok, const char *what)
{
    checks++;
    if (!ok)
        failures++;
    printf("%sok %d - slot: %s\n", ok ? "" : "not ", checks, what);
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

    uint64_t started = slot_now_ns();
    slot_job_start(s, 7, 60, started);
    check(slot_read_job(s, &j) == 0 && j.job == 7 && j.timeout == 60 && j.started_ns == started,
          "reads the job that has the CPU, with its start");
    /* the supervisor took its time just before the worker started the job */
    check(!slot_job_overdue(&j, j.started_ns - 1), "a job started after now is not overdue");
    check(!slot_job_overdue(&j, j.started_ns + 59 * SECOND), "a job within its timeout is not");
    check(slot_job_overdue(&j, j.started_ns + 60 * SECOND), "a job at its timeout is overdue");

    /* another job in flight gets the CPU: its own start counts */
    slot_job_start(s, 8, 1, started - 2 * SECOND);
    slot_read_job(s, &j);
    check(j.job == 8 && slot_job_overdue(&j, started), "the job on the CPU is the one timed");
    slot_job_start(s, 9, 0, started - 3600 * SECOND);
    slot_read_job(s, &j);
    check(!slot_job_overdue(&j, started), "a job without a timeout never is");

    slot_job_end(s);
    slot_read_job(s, &j);
    check(!slot_job_overdue(&j, slot_now_ns() + 3600 * SECOND), "no job, nothing overdue");

    slot_unmap(s);
    printf("1..%d\n", checks);
    return failures ? 1 : 0;
}
