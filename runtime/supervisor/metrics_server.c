#include "supervisor/metrics_server.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <ev.h>
#include <microhttpd.h>

#include "loader/lazy_lib.h"

static struct {
    struct MHD_Daemon *(*start_daemon)(unsigned int flags, uint16_t port, MHD_AcceptPolicyCallback apc,
                                       void *apc_cls, MHD_AccessHandlerCallback dh, void *dh_cls, ...);
    void (*stop_daemon)(struct MHD_Daemon *daemon);
    enum MHD_Result (*run)(struct MHD_Daemon *daemon);
    const union MHD_DaemonInfo *(*get_daemon_info)(struct MHD_Daemon *daemon,
                                                   enum MHD_DaemonInfoType info_type, ...);
    struct MHD_Response *(*create_response_from_buffer)(size_t size, void *buffer,
                                                        enum MHD_ResponseMemoryMode mode);
    enum MHD_Result (*add_response_header)(struct MHD_Response *response, const char *header,
                                           const char *content);
    enum MHD_Result (*queue_response)(struct MHD_Connection *connection, unsigned int status_code,
                                      struct MHD_Response *response);
    void (*destroy_response)(struct MHD_Response *response);
} mhd;

static struct lazy_lib libmhd = {
    "libmicrohttpd.so.12", "--metrics needs libmicrohttpd (Debian's libmicrohttpd12)", NULL, ""
};

struct metrics_server {
    struct ev_loop *loop;
    struct MHD_Daemon *daemon;
    ev_io io;              /* the daemon's epoll descriptor */
    ev_timer timer;        /* its timeouts (idle connections) */
    metrics_render_fn *render;
    void *data;
};

int metrics_server_address(const char *address, char *host, size_t hostlen, int *port, char *err,
                           size_t errlen)
{
    const char *colon = strrchr(address, ':');
    const char *h = address, *h_end = colon;
    if (address[0] == '[') {
        const char *close = strchr(address, ']');
        if (!close || close[1] != ':') {
            snprintf(err, errlen, "--metrics=%s: expected HOST:PORT, as 127.0.0.1:9100 or [::1]:9100",
                     address);
            return -1;
        }
        h = address + 1;
        h_end = close;
        colon = close + 1;
    }
    char *end;
    long p = colon ? strtol(colon + 1, &end, 10) : 0;
    if (!colon || h_end == h || colon[1] == '\0' || *end || p < 1 || p > 65535 ||
        (size_t)(h_end - h) >= hostlen) {
        snprintf(err, errlen, "--metrics=%s: expected HOST:PORT with a port from 1 to 65535, as "
                 "127.0.0.1:9100", address);
        return -1;
    }
    memcpy(host, h, (size_t)(h_end - h));
    host[h_end - h] = '\0';
    *port = (int)p;
    return 0;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned int status, const char *type,
                             const char *body, size_t len)
{
    struct MHD_Response *r = mhd.create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!r)
        return MHD_NO;
    mhd.add_response_header(r, "Content-Type", type);
    mhd.add_response_header(r, "Cache-Control", "no-store");
    enum MHD_Result ok = mhd.queue_response(c, status, r);
    mhd.destroy_response(r);
    return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **state)
{
    (void)version;
    (void)upload;
    struct metrics_server *m = cls;
    static int first;
    if (*state == NULL) {  /* the headers are in: answer on the next call */
        *state = &first;
        return MHD_YES;
    }
    if (*upload_size) {  /* a body: not read */
        *upload_size = 0;
        return MHD_YES;
    }
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        static const char text[] = "only GET and HEAD\n";
        return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8", text, sizeof text - 1);
    }
    struct buffer out = {0};
    const char *type = "text/plain; charset=utf-8";
    int status = m->render(m->data, url, &out, &type);
    enum MHD_Result ok;
    if (status == 200) {
        ok = reply(c, 200, type, out.data ? out.data : "", out.len);
    } else if (status == 404) {
        static const char text[] = "not found: / (the live page), /metrics and /fleet.json are served\n";
        ok = reply(c, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8", text, sizeof text - 1);
    } else {
        static const char text[] = "the metrics could not be made\n";
        ok = reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "text/plain; charset=utf-8", text, sizeof text - 1);
    }
    buffer_free(&out);
    return ok;
}

/* Runs the daemon's ready work: requests on its epoll descriptor, and its
 * timeouts (idle connections closed), which the timer looks at every
 * METRICS_TICK seconds. */
#define METRICS_TICK 0.25
static void run(struct metrics_server *m)
{
    mhd.run(m->daemon);
}

static void on_io(struct ev_loop *loop, ev_io *w, int revents)
{
    (void)loop;
    (void)revents;
    run(w->data);
}

static void on_timer(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    run(t->data);
}

struct metrics_server *metrics_server_start(struct ev_loop *loop, const char *address,
                                            metrics_render_fn *render, void *data, char *err,
                                            size_t errlen)
{
    static const struct lazy_symbol symbols[] = {
#define FN(name) {"MHD_" #name, (void **)&mhd.name}
        FN(start_daemon), FN(stop_daemon), FN(run), FN(get_daemon_info),
        FN(create_response_from_buffer), FN(add_response_header), FN(queue_response),
        FN(destroy_response),
#undef FN
    };
    char host[256];
    int port;
    if (metrics_server_address(address, host, sizeof host, &port, err, errlen))
        return NULL;
    if (lazy_lib_load(&libmhd, symbols, sizeof symbols / sizeof symbols[0], err, errlen))
        return NULL;
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
    struct addrinfo *ai = NULL;
    int gai = getaddrinfo(host, service, &hints, &ai);
    if (gai) {
        snprintf(err, errlen, "--metrics=%s: %s", address, gai_strerror(gai));
        return NULL;
    }
    struct metrics_server *m = calloc(1, sizeof *m);
    if (!m) {
        freeaddrinfo(ai);
        snprintf(err, errlen, "--metrics: out of memory");
        return NULL;
    }
    m->loop = loop;
    m->render = render;
    m->data = data;
    unsigned int flags = MHD_USE_EPOLL | (ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0);
    m->daemon = mhd.start_daemon(flags, (uint16_t)port, NULL, NULL, on_request, m,
                                 MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                                 MHD_OPTION_CONNECTION_LIMIT, (unsigned int)METRICS_CONNECTIONS,
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)METRICS_IDLE,
                                 MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)METRICS_REQUEST_BYTES,
                                 MHD_OPTION_END);
    int e = errno;
    freeaddrinfo(ai);
    const union MHD_DaemonInfo *info = m->daemon ? mhd.get_daemon_info(m->daemon, MHD_DAEMON_INFO_EPOLL_FD)
                                                 : NULL;
    if (!info) {
        snprintf(err, errlen, "--metrics=%s: cannot listen there%s%s", address, e ? ": " : "",
                 e ? strerror(e) : "");
        if (m->daemon)
            mhd.stop_daemon(m->daemon);
        free(m);
        return NULL;
    }
    ev_io_init(&m->io, on_io, info->epoll_fd, EV_READ);
    m->io.data = m;
    ev_io_start(loop, &m->io);
    ev_unref(loop);  /* serving alone does not keep the supervisor running */
    ev_timer_init(&m->timer, on_timer, METRICS_TICK, METRICS_TICK);
    m->timer.data = m;
    ev_timer_start(loop, &m->timer);
    ev_unref(loop);
    return m;
}

void metrics_server_stop(struct metrics_server *m)
{
    if (!m)
        return;
    ev_ref(m->loop);
    ev_io_stop(m->loop, &m->io);
    ev_ref(m->loop);
    ev_timer_stop(m->loop, &m->timer);
    mhd.stop_daemon(m->daemon);
    free(m);
}
