/* host_system: the host functions for what the process asks of the system: clocks,
 * random ids (Laravel's Str::random and Str::uuid), the process's resident memory.
 * Uses lua_host. */
#ifndef LUAWORKER_HOST_SYSTEM_H
#define LUAWORKER_HOST_SYSTEM_H

#include <stddef.h>

#include <lauxlib.h>

extern const luaL_Reg host_system_functions[];

/* Fills buf with n bytes from the kernel's random source. */
void host_system_random(unsigned char *buf, size_t n);

/* Writes n random characters from [A-Za-z0-9] to out (no terminator). */
void host_system_random_id(char *out, size_t n);

/* CLOCK_MONOTONIC in seconds, the clock of host.clock. */
double host_system_clock(void);

#endif
