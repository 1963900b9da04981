/* signal_arrival: a worker's signals (signals.h) noted as they arrive. libev
 * dispatches a signal to its watcher (vm.c's) only when its loop runs, and a handler
 * that keeps the CPU holds the loop back; what arrived meanwhile is read here, so
 * that a stop, a reload or a pause takes effect as the job running then ends (as
 * PHP's asynchronous signals do in queue:work). Uses libev's ev_feed_signal only. */
#ifndef LUAWORKER_LOOP_SIGNAL_ARRIVAL_H
#define LUAWORKER_LOOP_SIGNAL_ARRIVAL_H

/* Puts a handler in place of libev's for each signal of signals.h, once their
 * ev_signal watchers are started: it notes the signal, then hands it to libev as
 * libev's own handler does. */
void signal_arrival_install(void);

/* The stop signal that arrived (TERM, INT, QUIT: its number, else 0), whether USR2
 * paused the worker and no CONT came after it, and whether a HUP (reload) came. */
void signal_arrival_read(int *quit, int *paused, int *reload);

#endif
