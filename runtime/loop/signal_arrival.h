/* signal_arrival: a worker's stop (TERM, INT, QUIT) and reload (HUP) signals noted
 * as they arrive. libev dispatches a signal to its watcher (vm.c's) only when its
 * loop runs, and a handler that keeps the CPU holds the loop back; what arrived
 * meanwhile is read here, so that the job ending then is the last (as PHP's
 * asynchronous signals stop queue:work). Uses libev's ev_feed_signal only. */
#ifndef LUAWORKER_LOOP_SIGNAL_ARRIVAL_H
#define LUAWORKER_LOOP_SIGNAL_ARRIVAL_H

/* Puts a handler in place of libev's for the stop and reload signals, once their
 * ev_signal watchers are started: it notes the signal, then hands it to libev as
 * libev's own handler does. */
void signal_arrival_install(void);

/* The stop signal that arrived (its number, else 0) and whether a reload did. */
void signal_arrival_read(int *quit, int *reload);

#endif
