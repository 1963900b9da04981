# shellcheck shell=bash
# Sourced by examples/bench/bench.sh, and run by spec/mysql_spec.lua and
# spec/failed_jobs_spec.lua: a throwaway MariaDB server (Debian's mariadb-server),
# its files in a directory of the caller's, run as the user nobody (mariadbd
# refuses root; from /, examples/as-nobody.sh), on a free loopback port. It has a
# database "app" and a user "luaworker" whose password is $private_mariadb_password
# (logins over TCP need it; root logs in on the socket).
#   private_mariadb_start DIR        makes and starts it; sets private_mariadb_port and
#                                    private_mariadb_socket; returns 1 when it would not
#   private_mariadb_stop DIR         stops it at once (a crash, as far as clients see)
#   private_mariadb_serve DIR PORT   starts it again, stopped, on PORT (its data kept);
#                                    returns 1 when it would not

private_mariadb_password=luaworker-spec-pw
# examples/as-nobody.sh, found from this file wherever the caller is when it runs
private_mariadb_as_nobody="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/as-nobody.sh"

# Runs the server of DIR on port $2 and waits until it answers; returns 1 when it
# ended (its port taken?) or did not answer within 30 s (a first start on a loaded
# machine, under a sanitizer's specs, has taken over 10).
private_mariadb_serve() {
    local dir=$1 port=$2 server
    private_mariadb_socket="$dir/mariadb.sock"
    "$private_mariadb_as_nobody" mariadbd --no-defaults --datadir="$dir/mariadb" \
        --socket="$private_mariadb_socket" --port="$port" --bind-address=127.0.0.1 \
        --pid-file="$dir/mariadb.pid" --log-error="$dir/mariadb.log" --skip-log-bin \
        --innodb-buffer-pool-size=32M --max-connections=500 >/dev/null 2>&1 &
    server=$!
    for _ in $(seq 1 300); do
        if mariadb --no-defaults -S "$private_mariadb_socket" -uroot -e 'select 1' \
            >/dev/null 2>&1; then
            private_mariadb_port=$port
            return 0
        fi
        kill -0 "$server" 2>/dev/null || return 1
        sleep 0.1
    done
    private_mariadb_stop "$dir"
    return 1
}

private_mariadb_start() {
    local dir=$1
    private_mariadb_port=""
    mkdir -p "$dir/mariadb"
    chown nobody "$dir" "$dir/mariadb"
    "$private_mariadb_as_nobody" mariadb-install-db --no-defaults --datadir="$dir/mariadb" \
        --auth-root-authentication-method=normal --skip-test-db >"$dir/mariadb-install.log" 2>&1 ||
        return 1
    for _ in $(seq 1 20); do
        # below the local ports of outgoing connections (32768 and up)
        if private_mariadb_serve "$dir" $((20000 + RANDOM % 12000)); then
            mariadb --no-defaults -S "$private_mariadb_socket" -uroot -e "
                CREATE DATABASE app;
                CREATE USER 'luaworker'@'%' IDENTIFIED BY '$private_mariadb_password';
                GRANT ALL ON app.* TO 'luaworker'@'%';" || return 1
            return 0
        fi
    done
    return 1
}

private_mariadb_stop() {
    local dir=$1 pid
    pid=$(cat "$dir/mariadb.pid" 2>/dev/null) || return 0
    kill -KILL "$pid" 2>/dev/null
    while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
    rm -f "$dir/mariadb.pid"
    return 0
}
