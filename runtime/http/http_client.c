#include "http/http_client.h"
#include "lib/buffer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <time.h>

#include <curl/curl.h>

#include "loader/lazy_lib.h"

/* libcurl, loaded on the first client (lazy_lib). */
static struct {
    CURLcode (*global_init)(long flags);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_setopt)(CURLM *m, CURLMoption option, ...);
    CURLMcode (*multi_cleanup)(CURLM *m);
    CURLMcode (*multi_socket_action)(CURLM *m, curl_socket_t s, int ev_bitmask, int *running);
    CURLMsg *(*multi_info_read)(CURLM *m, int *msgs_in_queue);
    CURLMcode (*multi_add_handle)(CURLM *m, CURL *e);
    CURLMcode (*multi_remove_handle)(CURLM *m, CURL *e);
    CURLMcode (*multi_assign)(CURLM *m, curl_socket_t s, void *sockp);
    const char *(*multi_strerror)(CURLMcode code);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *e, CURLoption option, ...);
    CURLcode (*easy_getinfo)(CURL *e, CURLINFO info, ...);
    void (*easy_cleanup)(CURL *e);
    const char *(*easy_strerror)(CURLcode code);
    struct curl_slist *(*slist_append)(struct curl_slist *list, const char *s);
    void (*slist_free_all)(struct curl_slist *list);
    CURLU *(*url)(void);
    void (*url_cleanup)(CURLU *u);
    CURLUcode (*url_set)(CURLU *u, CURLUPart part, const char *content, unsigned int flags);
    CURLUcode (*url_get)(const CURLU *u, CURLUPart part, char **content, unsigned int flags);
    void (*free)(void *p);
} curl;

static struct lazy_lib libcurl = {
    "libcurl.so.4", "luaworker.http needs libcurl (Debian's libcurl4)", NULL, ""
};

/* Loads libcurl and initializes it, once. Returns 0, or -1 with err set. */
static int load_curl(char *err, size_t errlen)
{
    static int initialized;
    static const struct lazy_symbol symbols[] = {
#define FN(name) {"curl_" #name, (void **)&curl.name}
        FN(global_init), FN(multi_init), FN(multi_setopt), FN(multi_cleanup),
        FN(multi_socket_action), FN(multi_info_read), FN(multi_add_handle),
        FN(multi_remove_handle), FN(multi_assign), FN(multi_strerror), FN(easy_init),
        FN(easy_setopt), FN(easy_getinfo), FN(easy_cleanup), FN(easy_strerror),
        FN(slist_append), FN(slist_free_all), FN(url), FN(url_cleanup), FN(url_set),
        FN(url_get), FN(free),
#undef FN
    };
    if (lazy_lib_load(&libcurl, symbols, sizeof symbols / sizeof symbols[0], err, errlen))
        return -1;
    if (!initialized) {
        if (curl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
            lazy_lib_fail(&libcurl, "libcurl could not be initialized");
            snprintf(err, errlen, "%s", libcurl.failure);
            return -1;
        }
        initialized = 1;
    }
    return 0;
}

/* A socket libcurl asked the loop to watch. */
struct watch {
    ev_io io;
    struct http_client *c;
    LIST_ENTRY(watch) link;         /* in the client's watches */
};

struct http_client {
    struct ev_loop *loop;
    CURLM *multi;
    ev_timer timer;
    LIST_HEAD(, watch) watches;
    LIST_HEAD(, http_request) requests;  /* under way */
};

/* A request, over one or more hops (a redirect followed starts another). */
struct http_request {
    struct http_client *c;
    CURL *easy;                     /* the hop under way */
    char *method, *url;             /* the hop's */
    char *request_body;             /* the hop's; NULL: none */
    size_t request_body_len;
    struct curl_slist *headers;     /* the hop's header lines */
    int verify;
    double deadline;                /* CLOCK_MONOTONIC seconds; 0: none */
    long redirects;                 /* the most to follow */
    long followed;                  /* followed so far */
    int redirect;                   /* the hop's response is a redirect to follow */
    struct buffer head, body;       /* the hop's response */
    size_t max_size;
    int too_large;
    http_done_fn *done;
    void *data;
    char error[CURL_ERROR_SIZE];
    CURLcode code;                  /* how it ended, once finished */
    int finished;                   /* ended, its response not handed over yet */
    int cancelled;                  /* cancelled then: freed instead of handed over */
    STAILQ_ENTRY(http_request) done_link;  /* in finish_done's list of those */
    LIST_ENTRY(http_request) link;  /* in the client's requests */
};

static void request_free(struct http_request *r)
{
    struct http_client *c = r->c;
    LIST_REMOVE(r, link);
    if (r->easy) {
        curl.multi_remove_handle(c->multi, r->easy);
        curl.easy_cleanup(r->easy);
    }
    curl.slist_free_all(r->headers);
    free(r->method);
    free(r->url);
    free(r->request_body);
    buffer_free(&r->head);
    buffer_free(&r->body);
    free(r);
}

static int follow(struct http_request *r, char *err, size_t errlen);

/* Hands r, finished with code, its response, unless it was cancelled meanwhile; a
 * redirect to follow starts r's next hop instead. */
static void deliver(struct http_request *r)
{
    struct http_response resp = {0};
    char error[CURL_ERROR_SIZE + 96];
    if (r->cancelled) {
        request_free(r);
        return;
    }
    if (r->code == CURLE_OK && r->redirect) {
        if (follow(r, error, sizeof error) == 0)
            return;
        resp.error = error;
    } else if (r->code == CURLE_OK) {
        curl.easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &resp.status);
        resp.headers = r->head.data ? r->head.data : "";
        resp.headers_len = r->head.len;
        resp.body = r->body.data ? r->body.data : "";
        resp.body_len = r->body.len;
    } else if (r->too_large) {
        snprintf(error, sizeof error, "the response is larger than the limit of %zu byte%s",
                 r->max_size, r->max_size == 1 ? "" : "s");
        resp.error = error;
        resp.too_large = 1;
    } else {
        snprintf(error, sizeof error, "cURL error %d: %s", (int)r->code,
                 r->error[0] ? r->error : curl.easy_strerror(r->code));
        resp.error = error;
    }
    r->done(r->data, &resp);
    request_free(r);
}

/* Hands each finished request its response. Called after curl_multi_socket_action
 * returned. All are taken from libcurl first: a done callback may start or cancel
 * requests. */
static void finish_done(struct http_client *c)
{
    STAILQ_HEAD(, http_request) finished = STAILQ_HEAD_INITIALIZER(finished);
    CURLMsg *msg;
    int left;
    while ((msg = curl.multi_info_read(c->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        struct http_request *r = NULL;
        curl.easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&r);
        r->code = msg->data.result;
        r->finished = 1;
        curl.multi_remove_handle(c->multi, r->easy);
        STAILQ_INSERT_TAIL(&finished, r, done_link);
    }
    struct http_request *r;
    while ((r = STAILQ_FIRST(&finished))) {
        STAILQ_REMOVE_HEAD(&finished, done_link);
        deliver(r);
    }
}

static void on_io(struct ev_loop *loop, ev_io *io, int revents)
{
    (void)loop;
    struct watch *w = (struct watch *)io;
    struct http_client *c = w->c;
    int action = (revents & EV_READ ? CURL_CSELECT_IN : 0) | (revents & EV_WRITE ? CURL_CSELECT_OUT : 0);
    int running;
    curl.multi_socket_action(c->multi, io->fd, action, &running);
    finish_done(c);
}

static void on_timer(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    struct http_client *c = t->data;
    int running;
    curl.multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    finish_done(c);
}

static void watch_free(struct http_client *c, struct watch *w)
{
    ev_io_stop(c->loop, &w->io);
    LIST_REMOVE(w, link);
    free(w);
}

/* CURLMOPT_SOCKETFUNCTION: watch s for what libcurl waits for, or stop. */
static int on_socket(CURL *easy, curl_socket_t s, int what, void *userp, void *socketp)
{
    (void)easy;
    struct http_client *c = userp;
    struct watch *w = socketp;
    if (what == CURL_POLL_REMOVE) {
        if (w)
            watch_free(c, w);
        return 0;
    }
    int events = (what & CURL_POLL_IN ? EV_READ : 0) | (what & CURL_POLL_OUT ? EV_WRITE : 0);
    if (!w) {
        if (!(w = calloc(1, sizeof *w)))
            return -1;
        w->c = c;
        LIST_INSERT_HEAD(&c->watches, w, link);
        curl.multi_assign(c->multi, s, w);
    } else {
        ev_io_stop(c->loop, &w->io);
    }
    ev_io_init(&w->io, on_io, s, events);
    ev_io_start(c->loop, &w->io);
    return 0;
}

/* CURLMOPT_TIMERFUNCTION: call curl_multi_socket_action after timeout_ms (-1: never). */
static int on_timeout(CURLM *multi, long timeout_ms, void *userp)
{
    (void)multi;
    struct http_client *c = userp;
    ev_timer_stop(c->loop, &c->timer);
    if (timeout_ms >= 0) {
        ev_timer_set(&c->timer, (double)timeout_ms / 1000., 0.);
        ev_timer_start(c->loop, &c->timer);
    }
    return 0;
}

static size_t on_body(char *p, size_t size, size_t n, void *userp)
{
    struct http_request *r = userp;
    size_t len = size * n;
    if (r->redirect)
        return len;     /* a redirect's: not kept */
    if (len > r->max_size - r->body.len) {
        r->too_large = 1;
        return 0;
    }
    return buffer_add(&r->body, p, len) ? 0 : len;
}

/* Each header line; a status line starts the block of another response (after a
 * 100 Continue): the last block is the response's. Redirects allowed, r->redirect
 * says whether the block is a redirect to follow: a 3xx with a Location (libcurl
 * resolves it, CURLINFO_REDIRECT_URL, once the hop is done). */
static size_t on_header(char *p, size_t size, size_t n, void *userp)
{
    struct http_request *r = userp;
    size_t len = size * n;
    if (len >= 5 && memcmp(p, "HTTP/", 5) == 0) {
        r->head.len = 0;
        r->redirect = 0;
    } else if (r->redirects > 0 && len > 9 && strncasecmp(p, "Location:", 9) == 0
               && strspn(p + 9, " \t\r\n") < len - 9) {
        long status = 0;
        curl.easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
        r->redirect = status >= 300 && status < 400;
    }
    return buffer_add(&r->head, p, len) ? 0 : len;
}

struct http_client *http_client_new(struct ev_loop *loop, char *err, size_t errlen)
{
    if (load_curl(err, errlen))
        return NULL;
    struct http_client *c = calloc(1, sizeof *c);
    if (!c || !(c->multi = curl.multi_init())) {
        free(c);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    c->loop = loop;
    ev_timer_init(&c->timer, on_timer, 0., 0.);
    c->timer.data = c;
    curl.multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl.multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
    curl.multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, on_timeout);
    curl.multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
    return c;
}

void http_client_free(struct http_client *c)
{
    if (!c)
        return;
    while (!LIST_EMPTY(&c->requests))
        request_free(LIST_FIRST(&c->requests));
    curl.multi_cleanup(c->multi);
    while (!LIST_EMPTY(&c->watches))
        watch_free(c, LIST_FIRST(&c->watches));
    ev_timer_stop(c->loop, &c->timer);
    free(c);
}

/* CLOCK_MONOTONIC in seconds. */
static double monotonic(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sets the method and body of e: r's for its hop. */
static void set_method(CURL *e, const struct http_request *r)
{
    if (r->request_body) {
        curl.easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->request_body_len);
        curl.easy_setopt(e, CURLOPT_POSTFIELDS, r->request_body);
        if (strcasecmp(r->method, "POST") != 0)
            curl.easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
    } else if (strcasecmp(r->method, "HEAD") == 0) {
        curl.easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else if (strcasecmp(r->method, "GET") != 0) {
        curl.easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
    }
}

/* Starts r's hop: a new easy handle for r->method, r->url, r->request_body and
 * r->headers (which it uses, not copies), added to the multi handle, with what is
 * left of r's timeout. Returns 0, or -1 with err set. */
static int hop_start(struct http_request *r, char *err, size_t errlen)
{
    CURL *e = r->easy = curl.easy_init();
    if (!e) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    curl.easy_setopt(e, CURLOPT_PRIVATE, r);
    curl.easy_setopt(e, CURLOPT_ERRORBUFFER, r->error);
    curl.easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl.easy_setopt(e, CURLOPT_URL, r->url);
    curl.easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl.easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl.easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl.easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl.easy_setopt(e, CURLOPT_HEADERDATA, r);
    curl.easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
    if (r->deadline > 0) {
        double left = r->deadline - monotonic();
        curl.easy_setopt(e, CURLOPT_TIMEOUT_MS, left > 0.001 ? (long)(left * 1000. + 0.5) : 1L);
    }
    curl.easy_setopt(e, CURLOPT_SSL_VERIFYPEER, r->verify ? 1L : 0L);
    curl.easy_setopt(e, CURLOPT_SSL_VERIFYHOST, r->verify ? 2L : 0L);
    const char *ca = getenv("CURL_CA_BUNDLE");
    if (!ca || !*ca)
        ca = getenv("SSL_CERT_FILE");
    if (ca && *ca)
        curl.easy_setopt(e, CURLOPT_CAINFO, ca);
    set_method(e, r);
    curl.easy_setopt(e, CURLOPT_HTTPHEADER, r->headers);
    CURLMcode mc = curl.multi_add_handle(r->c->multi, e);
    if (mc != CURLM_OK) {
        snprintf(err, errlen, "%s", curl.multi_strerror(mc));
        return -1;
    }
    return 0;
}

/* Writes url's origin, "scheme://host:port" (the scheme's port when none is given),
 * to out. Returns 0, or -1 when libcurl cannot parse url. */
static int origin_of(const char *url, char *out, size_t outlen)
{
    CURLU *u = curl.url();
    char *scheme = NULL, *host = NULL, *port = NULL;
    int rc = -1;
    if (u && curl.url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK
        && curl.url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK
        && curl.url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK
        && curl.url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK) {
        int n = snprintf(out, outlen, "%s://%s:%s", scheme, host, port);
        rc = n >= 0 && (size_t)n < outlen ? 0 : -1;
    }
    curl.free(scheme);
    curl.free(host);
    curl.free(port);
    curl.url_cleanup(u);
    return rc;
}

/* Whether a and b have one origin (scheme, host and port); not when either cannot
 * be parsed. */
static int same_origin(const char *a, const char *b)
{
    char oa[600], ob[600];
    return origin_of(a, oa, sizeof oa) == 0 && origin_of(b, ob, sizeof ob) == 0
           && strcasecmp(oa, ob) == 0;
}

/* Whether the header line ("Name: value", "Name;") is name's; with prefix, whether
 * its name starts with name. */
static int header_is(const char *line, const char *name, int prefix)
{
    size_t n = strlen(name);
    return strncasecmp(line, name, n) == 0 && (prefix || line[n] == ':' || line[n] == ';');
}

/* Takes Host from r->headers; with body, the headers of the body's size
 * (Content-Length, Transfer-Encoding: Guzzle keeps the others, Content-Type among
 * them); with credentials, Authorization and Cookie. Returns 0, or -1
 * out of memory (r->headers then as they were). */
static int drop_headers(struct http_request *r, int body, int credentials)
{
    struct curl_slist *kept = NULL;
    for (struct curl_slist *l = r->headers; l; l = l->next) {
        const char *h = l->data;
        if (header_is(h, "Host", 0)
            || (body && (header_is(h, "Content-Length", 0) || header_is(h, "Transfer-Encoding", 0)))
            || (credentials && (header_is(h, "Authorization", 0) || header_is(h, "Cookie", 0))))
            continue;
        struct curl_slist *k = curl.slist_append(kept, h);
        if (!k) {
            curl.slist_free_all(kept);
            return -1;
        }
        kept = k;
    }
    curl.slist_free_all(r->headers);
    r->headers = kept;
    return 0;
}

/* Starts r's next hop, to where its hop's response (a redirect) sends it, by the rule
 * in http_client.h. Returns 0; or -1 with err set (past the limit, out of memory,
 * the hop not started). */
static int follow(struct http_request *r, char *err, size_t errlen)
{
    if (r->followed == r->redirects) {
        /* libcurl's words, as when it followed them itself */
        snprintf(err, errlen, "cURL error %d: Maximum (%ld) redirects followed",
                 (int)CURLE_TOO_MANY_REDIRECTS, r->redirects);
        return -1;
    }
    long status = 0;
    char *location = NULL;
    curl.easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
    curl.easy_getinfo(r->easy, CURLINFO_REDIRECT_URL, &location);
    if (!location) {
        snprintf(err, errlen, "the Location of the redirect (%ld) is not a URL", status);
        return -1;
    }
    char *url = strdup(location);
    int as_get = status == 303 || status <= 302;
    int keeps_method = strcasecmp(r->method, "GET") == 0 || strcasecmp(r->method, "HEAD") == 0
                       || strcasecmp(r->method, "OPTIONS") == 0;
    char *method = as_get && !keeps_method ? strdup("GET") : NULL;
    if (!url || (as_get && !keeps_method && !method)
        || drop_headers(r, as_get, !same_origin(r->url, url))) {
        free(url);
        free(method);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    curl.easy_cleanup(r->easy);
    r->easy = NULL;
    free(r->url);
    r->url = url;
    if (method) {
        free(r->method);
        r->method = method;
    }
    if (as_get) {
        free(r->request_body);
        r->request_body = NULL;
        r->request_body_len = 0;
    }
    r->followed++;
    r->redirect = 0;
    r->head.len = r->body.len = 0;
    r->error[0] = '\0';
    r->finished = 0;
    return hop_start(r, err, errlen);
}

/* A request that could not start: freed, err set to why. Returns NULL. */
static struct http_request *start_failed(struct http_request *r, const char *why, char *err,
                                         size_t errlen)
{
    snprintf(err, errlen, "%s", why);
    request_free(r);
    return NULL;
}

struct http_request *http_request_start(struct http_client *c, const struct http_options *o,
                                        http_done_fn *done, void *data, char *err,
                                        size_t errlen)
{
    struct http_request *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    /* under way from here: request_free undoes whatever was done */
    r->c = c;
    LIST_INSERT_HEAD(&c->requests, r, link);
    r->done = done;
    r->data = data;
    r->max_size = o->max_size;
    r->verify = o->verify;
    r->redirects = o->redirects > 0 ? o->redirects : 0;
    if (o->timeout > 0)
        r->deadline = monotonic() + o->timeout;
    if (!(r->method = strdup(o->method)) || !(r->url = strdup(o->url)))
        return start_failed(r, "out of memory", err, errlen);
    if (o->body) {
        if (!(r->request_body = malloc(o->body_len + 1)))
            return start_failed(r, "out of memory", err, errlen);
        memcpy(r->request_body, o->body, o->body_len);
        r->request_body[o->body_len] = '\0';
        r->request_body_len = o->body_len;
    }
    for (size_t i = 0; i < o->nheaders; i++) {
        struct curl_slist *l = curl.slist_append(r->headers, o->headers[i]);
        if (!l)
            return start_failed(r, "out of memory", err, errlen);
        r->headers = l;
    }
    char why[256];
    if (hop_start(r, why, sizeof why))
        return start_failed(r, why, err, errlen);
    return r;
}

void http_request_cancel(struct http_request *r)
{
    if (r->finished)
        r->cancelled = 1;
    else
        request_free(r);
}
