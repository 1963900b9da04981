/* metrics_text: a fleet's metrics in Prometheus's text format (0.0.4), from the
 * counts of its worker slots (slot_counts) summed by queue and job class, and its
 * own gauges: jobs processed, failed and released, the attempts' durations (a
 * histogram), jobs in flight, workers running, restarts, timeouts, connection
 * losses. Label values are escaped as the format says (\\, \", \n), and a byte
 * that is not UTF-8 becomes '?': no class name breaks the text. Uses slot and
 * lib/buffer. */
#ifndef LUAWORKER_METRICS_TEXT_H
#define LUAWORKER_METRICS_TEXT_H

#include "lib/buffer.h"
#include "supervisor/slot.h"

/* Appends the fleet's metrics to out: slots[0..n-1], of which running have a
 * worker process now. Returns 0, or -1 when out of memory. */
int metrics_text(struct buffer *out, struct slot *const *slots, int n, int running);

#endif
