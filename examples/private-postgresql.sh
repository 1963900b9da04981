# shellcheck shell=bash
# Sourced by examples/bench/bench.sh (its database-queue rows): a throwaway
# PostgreSQL cluster (Debian's newest), its files in a directory of the caller's,
# run as the user nobody (postgres refuses root; from /, examples/as-nobody.sh), on
# a free loopback port, with its socket in that directory. Logins over TCP need no
# password (trust: the cluster lives as long as the bench).
#   private_postgresql_start DIR   makes and starts it; sets private_postgresql_port
#                                  and private_postgresql_bin; returns 1 when it would not
#   private_postgresql_stop DIR    stops it at once
#   private_postgresql_sql DIR SQL runs SQL as the user postgres, prints the rows

# examples/as-nobody.sh, found from this file wherever the caller is when it runs
private_postgresql_as_nobody="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/as-nobody.sh"

private_postgresql_start() {
    local dir=$1
    private_postgresql_port=""
    private_postgresql_bin=$(find /usr/lib/postgresql -maxdepth 2 -name bin -type d 2>/dev/null |
        sort -V | tail -n 1)
    [ -n "$private_postgresql_bin" ] || return 1
    mkdir -p "$dir/pg"
    chown nobody "$dir" "$dir/pg"
    "$private_postgresql_as_nobody" "$private_postgresql_bin/initdb" -D "$dir/pg/data" -U postgres \
        --auth=trust -E UTF8 --locale=C >"$dir/pg/initdb.log" 2>&1 || return 1
    local port
    for _ in $(seq 1 20); do
        # below the local ports of outgoing connections (32768 and up)
        port=$((20000 + RANDOM % 12000))
        if "$private_postgresql_as_nobody" "$private_postgresql_bin/pg_ctl" -D "$dir/pg/data" \
            -l "$dir/pg/log" -w \
            -o "-p $port -k $dir/pg -c listen_addresses=127.0.0.1 -c max_connections=200" start \
            >/dev/null 2>&1; then
            private_postgresql_port=$port
            return 0
        fi
    done
    return 1
}

private_postgresql_sql() {
    "$private_postgresql_as_nobody" "$private_postgresql_bin/psql" -h "$1/pg" \
        -p "$private_postgresql_port" -U postgres -At -q -c "$2" postgres
}

private_postgresql_stop() {
    [ -n "${private_postgresql_port:-}" ] || return 0
    "$private_postgresql_as_nobody" "$private_postgresql_bin/pg_ctl" -D "$1/pg/data" \
        -m immediate stop >/dev/null 2>&1 || true
    private_postgresql_port=""
}
