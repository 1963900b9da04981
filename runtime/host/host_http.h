/* host_http: the host function for HTTP requests from Lua (luaworker.http), over
 * http_client on the host's loop: a request yields its task until the response,
 * and can be cancelled (host.cancel) when its task is abandoned. Uses lua_host and
 * http_client. */
#ifndef LUAWORKER_HOST_HTTP_H
#define LUAWORKER_HOST_HTTP_H

#include <lauxlib.h>

extern const luaL_Reg host_http_functions[];

#endif
