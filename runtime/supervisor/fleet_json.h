/* fleet_json: what the live page shows (/fleet.json), from the fleet's slots
 * (fleet_view): now, the workers (slot, pid, jobs in flight, restarts), the
 * queues (pending, delayed, reserved, the oldest waiting job's wait), the counts
 * by queue and class, the failures of the last hour and the last ones with their
 * exception's first line. Strings are JSON-escaped, a byte that is not UTF-8 is
 * '?'. Uses fleet_view and lib/buffer. */
#ifndef LUAWORKER_FLEET_JSON_H
#define LUAWORKER_FLEET_JSON_H

#include <stdint.h>

#include "lib/buffer.h"
#include "supervisor/slot.h"

/* Appends the JSON of slots[0..n-1], whose workers' pids are pids (0: none now),
 * at now (Unix seconds). Returns 0, or -1 when out of memory. */
int fleet_json(struct buffer *out, struct slot *const *slots, const int *pids, int n, uint64_t now);

#endif
