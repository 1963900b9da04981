/* system: the functions of "luaworker.host" for what the process asks of the
 * system: clocks, random ids (Laravel's Str::random and Str::uuid), the process's
 * resident memory, file kinds. Uses vm. */
#ifndef LUAWORKER_LOOP_SYSTEM_H
#define LUAWORKER_LOOP_SYSTEM_H

#include <stddef.h>
#include <time.h>

struct vm;

/* Adds the functions to h's "luaworker.host". */
void system_register(struct vm *h);

/* Fills buf with n bytes from the kernel's random source. */
void system_random(unsigned char *buf, size_t n);

/* Writes n random characters from [A-Za-z0-9] to out (no terminator). */
void system_random_id(char *out, size_t n);

/* CLOCK_MONOTONIC in seconds, the clock of host.clock. */
double system_clock(void);

/* CLOCK_REALTIME in seconds with fractions, the clock of host.microtime: the clock
 * Redis expires keys by and Laravel scores reservations by. It runs on while a
 * paused virtual machine's (or a suspended laptop's) CLOCK_MONOTONIC stands still. */
double system_wall_clock(void);

/* The Unix second of CLOCK_REALTIME, as PHP's time() reads it (gettimeofday):
 * time(NULL) reads a coarse copy of the clock that lags it by up to a tick, so that
 * a second begun for microtime() (and for PHP) is not yet begun for time(NULL). */
time_t system_unix_time(void);

#endif
