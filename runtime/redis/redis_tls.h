/* redis_tls: TLS on a connection to Redis, which hiredis 0.14 cannot do itself: an
 * OpenSSL context made from a connection's settings (struct redis_tls), and a
 * session on a socket already connected, whose reads, writes and handshake its
 * owner drives (redis_conn on the libev loop, redis_sub blocking). The server's
 * certificate is checked against the CA file, else OpenSSL's default paths
 * (SSL_CERT_FILE, SSL_CERT_DIR, the system's bundle), and its name against the
 * server name or the host, unless verification is turned off. Uses config and
 * OpenSSL's libssl. */
#ifndef LUAWORKER_REDIS_TLS_H
#define LUAWORKER_REDIS_TLS_H

#include <stddef.h>

#include <openssl/ssl.h>

#include "config/config.h"

/* A context for the connections of s (s->tls.enabled), or NULL with err set naming
 * the file or setting OpenSSL refused. The same settings give the same context,
 * made once per process; each caller frees its reference (SSL_CTX_free). */
SSL_CTX *redis_tls_context(const struct redis_settings *s, char *err, size_t errlen);

/* A client session of ctx on fd (connected to the host of s), its server name and
 * name check set; NULL with err set when out of memory. */
SSL *redis_tls_session(SSL_CTX *ctx, const struct redis_settings *s, int fd, char *err,
                       size_t errlen);

/* Why an SSL call on ssl failed (code: its SSL_get_error), as "TLS <what> with Redis
 * at <where> failed: <reason>"; a certificate refused, Redis' by this end's check or
 * this end's (or its lack) by Redis' alert, is said as "... failed: certificate
 * refused: <reason>" (a lasting error: see redis.lua's is_refusal). Clears
 * OpenSSL's error queue. */
void redis_tls_failure(SSL *ssl, int code, const char *what, const char *where, char *err,
                       size_t errlen);

#endif
