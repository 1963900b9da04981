/* http_client: HTTP(S) requests over libcurl's multi interface, driven by a libev
 * loop (curl_multi_socket_action, with the multi handle's socket and timer
 * callbacks as in curl's evhiperfifo example): any number at once in one thread,
 * connections kept and reused per host by the multi handle, HTTP/2 where libcurl
 * has it. https verifies the peer against the system CA bundle (CURL_CA_BUNDLE or
 * SSL_CERT_FILE, when set, name another). libcurl (libcurl.so.4) is loaded by the
 * first client made, not at the process's start. Uses libcurl and libev. */
#ifndef LUAWORKER_HTTP_CLIENT_H
#define LUAWORKER_HTTP_CLIENT_H

#include <stddef.h>

#include <ev.h>

struct http_client;
struct http_request;

struct http_options {
    const char *method;             /* "GET", "POST", "HEAD", ... */
    const char *url;
    const char *const *headers;     /* "Name: value" lines */
    size_t nheaders;
    const char *body;               /* NULL: none */
    size_t body_len;
    double timeout;                 /* seconds for the whole request; 0: none */
    int verify;                     /* verify the peer's certificate and name */
    long redirects;                 /* redirects to follow at most; 0: none */
    size_t max_size;                /* the most bytes of body to take; SIZE_MAX: no limit */
};

/* A finished request: error NULL and the last response's status, header block
 * (its lines, CRLF-ended, from the status line on) and body; or error set (the
 * other fields then say nothing). Valid during the callback only. */
struct http_response {
    long status;
    const char *headers;
    size_t headers_len;
    const char *body;
    size_t body_len;
    const char *error;
    int too_large;                  /* the error: the body went over max_size */
};

/* Called once per request started, from the loop, unless it is cancelled. */
typedef void http_done_fn(void *data, const struct http_response *r);

/* A client on loop, or NULL with err set. */
struct http_client *http_client_new(struct ev_loop *loop, char *err, size_t errlen);

/* Ends every request under way (their done is not called) and frees c. */
void http_client_free(struct http_client *c);

/* Starts a request; done(data, response) once it ends. Returns it, or NULL with err
 * set (done is then never called).
 *
 * Redirects (a 3xx with a Location, up to o->redirects of them, the next one an
 * error) are followed as Laravel's client follows them (Guzzle's
 * RedirectMiddleware::modifyRequest, not strict), one request per hop: after a 303,
 * or a 300, 301 or 302, the request goes on as GET (GET, HEAD and OPTIONS keep
 * their method) without its body and the headers of its size (Content-Length,
 * Transfer-Encoding; a Content-Type given stays, as Guzzle keeps it); after any
 * other 3xx, with its method
 * and body. Only http and https are followed. A Host header given goes at the first
 * redirect (each hop's is its URL's); Authorization and Cookie go at the first
 * redirect to another origin (scheme, host or port), and do not come back. The body
 * of a redirect is not kept nor counted against max_size; the timeout is for all
 * the hops together. */
struct http_request *http_request_start(struct http_client *c, const struct http_options *o,
                                        http_done_fn *done, void *data, char *err,
                                        size_t errlen);

/* Ends r now, its connection closed; its done is never called. */
void http_request_cancel(struct http_request *r);

#endif
