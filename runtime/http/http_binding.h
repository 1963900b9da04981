/* http_binding: the function of "luaworker.host" for HTTP requests from Lua
 * (luaworker.http), over http_client on the vm's loop: a request yields its task
 * until the response, and can be cancelled (host.cancel) when its task is
 * abandoned. The client is made by the first request and closed with the vm. Uses
 * vm and http_client. */
#ifndef LUAWORKER_HTTP_HTTP_BINDING_H
#define LUAWORKER_HTTP_HTTP_BINDING_H

struct vm;

/* Adds the function to h's "luaworker.host". */
void http_binding_register(struct vm *h);

#endif
