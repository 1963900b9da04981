/* host_file: the host functions for files the worker shares with the app's PHP:
 * Laravel's file cache store's add (the lock its file failed-job store takes),
 * sha1 (the store's file names) and writing a file whole. Uses lua_host. */
#ifndef LUAWORKER_HOST_FILE_H
#define LUAWORKER_HOST_FILE_H

#include <lauxlib.h>

extern const luaL_Reg host_file_functions[];

#endif
