# shellcheck shell=bash
# Sourced by spec/run, examples/demo.sh and examples/bench/bench.sh: a private
# redis-server on a free loopback port, its files in a directory of the caller's.
#   private_redis_start DIR   starts it, listening on DIR/redis.sock too, and, when
#                             DIR/tls holds ca.crt, server.crt and server.key, for TLS
#                             on the next port; sets private_redis_port (and
#                             private_redis_tls_port); returns 1 when no port could be
#                             had after 50 tries
#   private_redis_stop DIR    stops it; returns once it has stopped writing to DIR

private_redis_start() {
    local dir=$1 p
    private_redis_port=""
    private_redis_tls_port=""
    for _ in $(seq 1 50); do
        # below the local ports of outgoing connections (32768 and up)
        p=$((20000 + RANDOM % 12000))
        local tls=()
        [ -f "$dir/tls/server.crt" ] && tls=(--tls-port $((p + 1)) --tls-cert-file "$dir/tls/server.crt"
            --tls-key-file "$dir/tls/server.key" --tls-ca-cert-file "$dir/tls/ca.crt" --tls-auth-clients no)
        redis-server --port "$p" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no \
            --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" \
            --unixsocket "$dir/redis.sock" --unixsocketperm 700 "${tls[@]}" \
            >/dev/null 2>&1 || continue
        for _ in $(seq 1 50); do
            # this server, not another one already on port p (which answers too)
            if [ -f "$dir/redis.pid" ] && [ "$(redis-cli -p "$p" info server 2>/dev/null |
                tr -d '\r' | sed -n 's/^process_id://p')" = "$(cat "$dir/redis.pid")" ]; then
                private_redis_port=$p
                [ ${#tls[@]} -eq 0 ] || private_redis_tls_port=$((p + 1))
                return 0
            fi
            sleep 0.1
        done
    done
    return 1
}

private_redis_stop() {
    local dir=$1
    [ -f "$dir/redis.pid" ] && [ -n "${private_redis_port:-}" ] &&
        redis-cli -p "$private_redis_port" shutdown nosave >/dev/null 2>&1
    return 0
}
