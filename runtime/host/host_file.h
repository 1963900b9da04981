/* host_file: the host functions for files the worker shares with the app's PHP:
 * Laravel's file cache store's add (the lock its file failed-job store takes),
 * sha1 (the store's file names), writing a file whole and checking at start that
 * it can be; and PHP's mb_scrub, for the text a failed-job store the app reads is
 * given. Failures name errno (EACCES...), so that a lasting one is told from a
 * passing one. Uses lua_host. */
#ifndef LUAWORKER_HOST_FILE_H
#define LUAWORKER_HOST_FILE_H

#include <lauxlib.h>

extern const luaL_Reg host_file_functions[];

#endif
