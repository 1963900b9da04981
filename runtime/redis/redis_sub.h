/* redis_sub: a Redis connection subscribed to one channel, read from a libev loop.
 * It is set up with blocking calls (connect with a timeout, AUTH, CLIENT ID,
 * SUBSCRIBE), so that every reply is checked where it is asked for: hiredis' async
 * pub/sub mis-dispatches an error reply to SUBSCRIBE. Afterwards each message on
 * the channel calls on_message, and the end of the connection calls on_lost once.
 * With TLS (s->tls), all of it goes through a session of redis_tls. Uses hiredis,
 * libev, config and redis_tls. */
#ifndef LUAWORKER_REDIS_SUB_H
#define LUAWORKER_REDIS_SUB_H

#include <stddef.h>

#include "config/config.h"

struct ev_loop;
struct redis_sub;

typedef void redis_sub_fn(void *data);

/* Connects (waiting at most timeout seconds per step) and subscribes to channel.
 * Returns the subscription, with *client_id set to the connection's CLIENT ID; or
 * NULL with err set and *refused 1 when Redis answered with an error (0 when it
 * could not be reached). on_lost is not called for a subscription redis_sub_close
 * ends. */
struct redis_sub *redis_sub_open(struct ev_loop *loop, const struct redis_settings *s,
                                 const char *channel, double timeout, redis_sub_fn *on_message,
                                 redis_sub_fn *on_lost, void *data, long long *client_id,
                                 int *refused, char *err, size_t errlen);

/* Whether the connection still holds (on_lost not called yet). */
int redis_sub_alive(const struct redis_sub *sub);

void redis_sub_close(struct redis_sub *sub);

#endif
