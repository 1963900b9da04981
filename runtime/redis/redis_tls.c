#include "redis/redis_tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

/* OpenSSL's reason for the last error in its queue, or fallback. */
static const char *openssl_reason(char *buf, size_t size, const char *fallback)
{
    unsigned long e = ERR_peek_last_error();
    if (!e)
        return fallback;
    ERR_error_string_n(e, buf, size);
    ERR_clear_error();
    return buf;
}

/* The context made last, and the settings it was made from: the connections of a
 * process share it (a CA bundle is read once, not for each connection). The
 * heartbeat's thread (worker/lease_keeper.h) connects too: mu guards it. */
static struct {
    pthread_mutex_t mu;
    struct redis_tls tls;
    SSL_CTX *ctx;
} made = {.mu = PTHREAD_MUTEX_INITIALIZER};

static SSL_CTX *make_context(const struct redis_settings *s, char *err, size_t errlen);

SSL_CTX *redis_tls_context(const struct redis_settings *s, char *err, size_t errlen)
{
    pthread_mutex_lock(&made.mu);
    if (!made.ctx || memcmp(&made.tls, &s->tls, sizeof s->tls) != 0) {
        SSL_CTX *ctx = make_context(s, err, errlen);
        if (!ctx) {
            pthread_mutex_unlock(&made.mu);
            return NULL;
        }
        SSL_CTX_free(made.ctx);
        made.tls = s->tls;
        made.ctx = ctx;
    }
    SSL_CTX *ctx = made.ctx;
    SSL_CTX_up_ref(ctx);
    pthread_mutex_unlock(&made.mu);
    return ctx;
}

static SSL_CTX *make_context(const struct redis_settings *s, char *err, size_t errlen)
{
    const struct redis_tls *t = &s->tls;
    char why[256];
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) {
        snprintf(err, errlen, "TLS: %s", openssl_reason(why, sizeof why, "out of memory"));
        return NULL;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_verify(ctx, t->verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
    if (t->ca_file[0]) {
        if (SSL_CTX_load_verify_locations(ctx, t->ca_file, NULL) != 1) {
            snprintf(err, errlen, "LUAWORKER_REDIS_CA_FILE=%s: not a CA certificate OpenSSL can read (%s)",
                     t->ca_file, openssl_reason(why, sizeof why, "no certificate"));
            goto fail;
        }
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        snprintf(err, errlen, "TLS: OpenSSL's default certificate paths: %s",
                 openssl_reason(why, sizeof why, "cannot be read"));
        goto fail;
    }
    if (t->cert_file[0]) {
        if (SSL_CTX_use_certificate_chain_file(ctx, t->cert_file) != 1) {
            snprintf(err, errlen, "LUAWORKER_REDIS_CERT_FILE=%s: not a certificate OpenSSL can read (%s)",
                     t->cert_file, openssl_reason(why, sizeof why, "no certificate"));
            goto fail;
        }
        int used = SSL_CTX_use_PrivateKey_file(ctx, t->key_file, SSL_FILETYPE_PEM) == 1;
        if (!used && ERR_GET_REASON(ERR_peek_last_error()) != X509_R_KEY_VALUES_MISMATCH) {
            snprintf(err, errlen, "LUAWORKER_REDIS_KEY_FILE=%s: not a key OpenSSL can read (%s)",
                     t->key_file, openssl_reason(why, sizeof why, "no key"));
            goto fail;
        }
        if (!used || SSL_CTX_check_private_key(ctx) != 1) {
            snprintf(err, errlen, "LUAWORKER_REDIS_KEY_FILE=%s: not the key of LUAWORKER_REDIS_CERT_FILE=%s",
                     t->key_file, t->cert_file);
            ERR_clear_error();
            goto fail;
        }
    }
    return ctx;
fail:
    SSL_CTX_free(ctx);
    return NULL;
}

SSL *redis_tls_session(SSL_CTX *ctx, const struct redis_settings *s, int fd, char *err,
                       size_t errlen)
{
    char why[256];
    const char *name = s->tls.server_name[0] ? s->tls.server_name : s->host;
    unsigned char ip[sizeof(struct in6_addr)];
    int is_ip = inet_pton(AF_INET, name, ip) == 1 || inet_pton(AF_INET6, name, ip) == 1;
    SSL *ssl = SSL_new(ctx);
    if (!ssl || SSL_set_fd(ssl, fd) != 1)
        goto fail;
    /* the server name is sent for a host name, never for an address (RFC 6066) */
    if (!is_ip && name[0] && SSL_set_tlsext_host_name(ssl, name) != 1)
        goto fail;
    if (s->tls.verify && !s->path[0]) {
        X509_VERIFY_PARAM *param = SSL_get0_param(ssl);
        if (is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, name) != 1
                  : X509_VERIFY_PARAM_set1_host(param, name, 0) != 1)
            goto fail;
    }
    SSL_set_connect_state(ssl);
    return ssl;
fail:
    snprintf(err, errlen, "TLS: %s", openssl_reason(why, sizeof why, "out of memory"));
    SSL_free(ssl);
    return NULL;
}

/* Whether OpenSSL's error e is an alert by which the server refused this end's
 * certificate, or its lack of one. */
static int client_certificate_refused(unsigned long e)
{
    switch (ERR_GET_REASON(e)) {
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
    case SSL_R_TLSV1_ALERT_ACCESS_DENIED:
        return 1;
    default:
        return 0;
    }
}

void redis_tls_failure(SSL *ssl, int code, const char *what, const char *where, char *err,
                       size_t errlen)
{
    char why[256];
    long verified = SSL_get_verify_result(ssl);
    if (code == SSL_ERROR_SSL && client_certificate_refused(ERR_peek_last_error())) {
        snprintf(err, errlen, "TLS %s with Redis at %s failed: certificate refused: Redis refused "
                 "this end's certificate, or its lack of one (%s)", what, where,
                 openssl_reason(why, sizeof why, "an alert"));
    } else if (verified != X509_V_OK) {
        snprintf(err, errlen, "TLS %s with Redis at %s failed: certificate refused: %s", what, where,
                 X509_verify_cert_error_string(verified));
        ERR_clear_error();
    } else if (code == SSL_ERROR_SYSCALL && !ERR_peek_last_error()) {
        snprintf(err, errlen, "TLS %s with Redis at %s failed: %s", what, where,
                 errno ? strerror(errno) : "the connection ended");
    } else if (code == SSL_ERROR_ZERO_RETURN) {
        snprintf(err, errlen, "TLS %s with Redis at %s failed: the connection ended", what, where);
    } else {
        snprintf(err, errlen, "TLS %s with Redis at %s failed: %s", what, where,
                 openssl_reason(why, sizeof why, "unknown error"));
    }
}
