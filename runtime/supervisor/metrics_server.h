/* metrics_server: the supervisor's HTTP endpoint (--metrics=HOST:PORT), served by
 * libmicrohttpd (loaded on first use, loader/lazy_lib) driven from the supervisor's
 * libev loop: no thread, and no request parser of luaworker's own. GET (and HEAD)
 * of a path its render function knows; anything else gets 404 or 405. Against
 * hostile clients: at most METRICS_CONNECTIONS connections (more are closed at
 * once), each closed after METRICS_IDLE seconds without progress, requests whose
 * headers pass METRICS_REQUEST_BYTES refused; no request can hold up the loop. */
#ifndef LUAWORKER_METRICS_SERVER_H
#define LUAWORKER_METRICS_SERVER_H

#include <stddef.h>

#include "lib/buffer.h"

struct ev_loop;
struct metrics_server;

#define METRICS_CONNECTIONS 64
#define METRICS_IDLE 10
#define METRICS_REQUEST_BYTES 16384

/* Writes the body for path into out and sets *type (its Content-Type). Returns
 * 200, or 404 for a path it does not serve (out is then ignored), or 500 when it
 * could not. */
typedef int metrics_render_fn(void *data, const char *path, struct buffer *out, const char **type);

/* Splits "HOST:PORT" ("[::1]:9100" for IPv6) and checks it. Returns 0, or -1 with
 * err naming what is wrong. */
int metrics_server_address(const char *address, char *host, size_t hostlen, int *port, char *err,
                           size_t errlen);

/* Listens on address. Returns the server, or NULL with err set (the library
 * missing, an address in use...). */
struct metrics_server *metrics_server_start(struct ev_loop *loop, const char *address,
                                            metrics_render_fn *render, void *data, char *err,
                                            size_t errlen);

void metrics_server_stop(struct metrics_server *m);

#endif
