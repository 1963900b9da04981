#include "http/http_binding.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "loop/vm.h"
#include "http/http_client.h"

/* The client, made by the first request (one vm a process). */
static struct http_client *client;

/* The most header lines a request may send. */
#define MAX_HEADERS 256

struct done_result {
    const struct http_response *r;
};

/* Pushes (true, status, header block, body) or (false, message, "size" | "request"). */
static int push_response(lua_State *L, void *data)
{
    const struct http_response *r = ((struct done_result *)data)->r;
    if (r->error)
        return vm_push_error(L, r->error, r->too_large ? "size" : "request");
    lua_pushboolean(L, 1);
    lua_pushnumber(L, (lua_Number)r->status);
    lua_pushlstring(L, r->headers, r->headers_len);
    lua_pushlstring(L, r->body, r->body_len);
    return 4;
}

static int push_too_big(lua_State *L, const char *message)
{
    return vm_push_error(L, message, "memory");
}

static const struct vm_pusher response_pusher = { push_response, push_too_big };

static void on_done(void *data, const struct http_response *r)
{
    struct vm_waiter *w = data;
    struct vm *h = w->h;
    double ticket = w->ticket;
    vm_waiter_drop(w);
    if (h->closing || h->finished)
        return;
    struct done_result d = { r };
    vm_resume_with(h, ticket, &response_pusher, &d, r->error ? 0 : r->headers_len + r->body_len);
}

static void cancel_request(struct vm_waiter *w)
{
    http_request_cancel(w->data);
    vm_waiter_drop(w);
}

/* A string field of the options table at index 1, or def. */
static const char *opt_string(lua_State *L, const char *name, const char *def, size_t *len)
{
    lua_getfield(L, 1, name);
    const char *v = lua_isnil(L, -1) ? def : luaL_checklstring(L, -1, len);
    lua_pop(L, 1);
    return v;
}

static double opt_number(lua_State *L, const char *name, double def)
{
    lua_getfield(L, 1, name);
    double v = lua_isnil(L, -1) ? def : luaL_checknumber(L, -1);
    lua_pop(L, 1);
    return v;
}

/* host.http_request{method=, url=, headers={"Name: value", ...}, body=, timeout=,
 * verify=, redirects=, max_size= (nil: no limit)} -> true, status, header block,
 * body | false, message, kind ("size", "request", "memory": vm_push_error). Checked by luaworker.http first. Yields until the
 * response. The strings are copied before this returns. */
static int l_host_http_request(lua_State *L)
{
    struct vm *h = vm_of(L);
    vm_check_wait(L);
    luaL_checktype(L, 1, LUA_TTABLE);
    struct http_options o = {0};
    o.method = opt_string(L, "method", "GET", NULL);
    o.url = opt_string(L, "url", NULL, NULL);
    if (!o.url)
        return luaL_argerror(L, 1, "no url");
    o.body = opt_string(L, "body", NULL, &o.body_len);
    o.timeout = opt_number(L, "timeout", 0);
    o.redirects = (long)opt_number(L, "redirects", 0);
    double max_size = opt_number(L, "max_size", -1);   /* not given: no limit */
    o.max_size = max_size < 0 || max_size >= (double)SIZE_MAX ? SIZE_MAX : (size_t)max_size;
    lua_getfield(L, 1, "verify");
    o.verify = lua_isnil(L, -1) || lua_toboolean(L, -1);
    lua_pop(L, 1);
    const char *headers[MAX_HEADERS];
    lua_getfield(L, 1, "headers");
    if (lua_istable(L, -1)) {
        size_t n = lua_objlen(L, -1);
        if (n > MAX_HEADERS)
            return luaL_error(L, "too many headers (%d, at most %d)", (int)n, MAX_HEADERS);
        for (size_t i = 0; i < n; i++) {
            lua_rawgeti(L, -1, (int)i + 1);
            headers[i] = luaL_checkstring(L, -1);
            lua_pop(L, 1);  /* the table keeps the string */
        }
        o.headers = headers;
        o.nheaders = n;
    }
    if (!client) {
        char err[256];
        if (!(client = http_client_new(h->loop, err, sizeof err)))
            return vm_push_error(L, err, "request");
    }
    struct vm_waiter *w = vm_waiter_take(h);
    if (!w)
        return luaL_error(L, "out of memory");
    char err[256];
    if (!(w->data = http_request_start(client, &o, on_done, w, err, sizeof err))) {
        vm_waiter_give(w);
        return vm_push_error(L, err, "request");
    }
    w->cancel = cancel_request;
    vm_waiter_link(w);
    return vm_yield(L, w->ticket);
}

static const luaL_Reg functions[] = {
    {"http_request", l_host_http_request},
    {NULL, NULL},
};

/* Its requests end without a word: their waiters are freed by the vm. */
static void close_binding(void *data)
{
    (void)data;
    http_client_free(client);
    client = NULL;
}

void http_binding_register(struct vm *h)
{
    vm_add_functions(h, functions);
    vm_on_close(h, close_binding, NULL);
}
