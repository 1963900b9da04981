/* fleet_view: what the slots of a fleet say together, for the metrics and the live
 * page: each (queue, job class) series summed over the slots, the queues' sizes of
 * the freshest report, the last failures of all slots, the failures of the last
 * hour. Reads only. Uses slot. */
#ifndef LUAWORKER_FLEET_VIEW_H
#define LUAWORKER_FLEET_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "supervisor/slot.h"

/* One (queue, job) series summed over the slots; queue and job point into a slot. */
struct fleet_sum {
    const char *queue, *job;
    uint64_t outcomes[3], attempts, duration_us, buckets[COUNTS_BUCKETS];
};

/* The series of slots[0..n-1] summed by (queue, job), sorted by them: *count of
 * them, to free(). NULL when out of memory. */
struct fleet_sum *fleet_sums(struct slot *const *slots, int n, size_t *count);

/* A queue's sizes reported within this many seconds are shown; older ones are not. */
#define FLEET_SIZES_FRESH 60

/* The queues' sizes of the slot that reported them last (within
 * FLEET_SIZES_FRESH), into out. Returns how many. */
uint32_t fleet_sizes(struct slot *const *slots, int n, struct counts_queue_size *out);

/* The last failures of all slots, newest first, at most max, into out. Returns how
 * many. */
uint32_t fleet_failures(struct slot *const *slots, int n, struct counts_failure *out, uint32_t max);

/* The failures of all slots in the hour up to now (Unix seconds). */
uint64_t fleet_failed_last_hour(struct slot *const *slots, int n, uint64_t now);

#endif
