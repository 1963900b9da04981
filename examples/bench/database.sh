# shellcheck shell=bash
# Sourced by examples/bench/bench.sh: the database queue's rows (Laravel's jobs table,
# migrated by the Laravel 8 app) on SQLite (a file of the bench's own), PostgreSQL
# (a private cluster, examples/private-postgresql.sh) and MariaDB (a database "queue"
# on bench.sh's private server), luaworker against `php artisan
# queue:work database`: no-op throughput with 1 and 4 processes, and luaworker's
# one process with --concurrency=32 against queue:work's one (and the failed rows
# a run left: PHP's workers on one SQLite file lose deletes to "database is locked",
# see docs/database-queue.md), and push-to-start latency with the defaults
# (--sleep=3): on SQLite and MariaDB both poll; on PostgreSQL luaworker listens, after
# `luaworker notify install`, and queue:work polls. Both keep the cache in the app's
# Redis (CACHE_DRIVER=redis). BENCH_DB_JOBS (5000) scales the throughput runs.
# Uses bench.sh's tmp, HANDLERS, LW_FAST, PHP_FAST, R, now_us, latency, and its
# private MariaDB (private_mariadb_port, private_mariadb_socket).

DB_JOBS=${BENCH_DB_JOBS:-5000}

# shellcheck source=examples/private-postgresql.sh
. examples/private-postgresql.sh

# KIND: the environment of both workers and of the app's dispatch on the database
# queue of KIND (sqlite, pgsql, mysql).
db_env() {
    case $1 in
    sqlite) echo QUEUE_CONNECTION=database DB_CONNECTION=sqlite DB_DATABASE="$tmp/queue.sqlite" \
        CACHE_DRIVER=redis ;;
    pgsql) echo QUEUE_CONNECTION=database DB_CONNECTION=pgsql DB_HOST=127.0.0.1 \
        DB_PORT="$private_postgresql_port" DB_DATABASE=postgres DB_USERNAME=postgres CACHE_DRIVER=redis ;;
    mysql) echo QUEUE_CONNECTION=database DB_CONNECTION=mysql DB_HOST=127.0.0.1 \
        DB_PORT="$private_mariadb_port" DB_DATABASE=queue DB_USERNAME=luaworker \
        DB_PASSWORD="$private_mariadb_password" CACHE_DRIVER=redis ;;
    esac
}

# KIND SQL: the rows of SQL on KIND's database.
db_sql() {
    case $1 in
    sqlite) sqlite3 "$tmp/queue.sqlite" "$2" ;;
    pgsql) private_postgresql_sql "$tmp" "$2" ;;
    mysql) mariadb --no-defaults -S "$private_mariadb_socket" -uroot queue -N -e "$2" ;;
    esac
}

# KIND KEY NPROC WORKER...: the app dispatches DB_JOBS NoOp jobs onto its jobs table,
# then NPROC copies of the worker command run until it is empty; jobs/s, and the
# rows left failed or still in the table.
db_throughput() {
    local kind=$1 key=$2 n=$3; shift 3
    db_sql "$kind" "delete from jobs; delete from failed_jobs"
    # shellcheck disable=SC2046
    env $(db_env "$kind") php examples/laravel/artisan jobs:dispatch NoOp --count="$DB_JOBS" >/dev/null
    # PostgreSQL plans a pop from the table's statistics, which autovacuum gathers
    # about a minute after rows come; without them every pop sorts all the rows of
    # the queue (docs/performance.md). Gathered here, as on a table in use, so that
    # no row depends on whether autovacuum has come by yet (luaworker gathers them
    # as it starts on a table that has none; queue:work does not). SQLite and MariaDB read
    # a queue's rows in id order from its index, no sort: nothing to gather.
    [ "$kind" != pgsql ] || db_sql "$kind" "analyze jobs"
    local t0 t1 pids=()
    t0=$(now_us)
    # shellcheck disable=SC2046
    for _ in $(seq 1 "$n"); do env $(db_env "$kind") "$@" & pids+=($!); done
    wait "${pids[@]}" || true
    t1=$(now_us)
    R[$key.tput]=$(awk "BEGIN{printf \"%.0f\", $DB_JOBS / (($t1 - $t0) / 1e6)}")
    R[$key.failed]=$(db_sql "$kind" "select count(*) from failed_jobs")
    local left
    left=$(db_sql "$kind" "select count(*) from jobs")
    [ "$left" = 0 ] || echo "   !! $key left $left jobs in the table" >&2
    echo "   $key: ${R[$key.tput]} jobs/s, ${R[$key.failed]} failed rows"
}

# KEY WORKER...: the cost of leases on PostgreSQL (docs/operating.md#leases): 200
# Chaos jobs of 3 s (waiting without the CPU), all in flight at once. The jobs
# table's row updates beyond the pops' one a job (PostgreSQL's statistics of the
# table, sent at most once a second) are the renewals: one UPDATE (one commit)
# each, every quarter lease once the job ran that long.
db_leases() {
    local key=$1 u0 u1; shift
    local updates="select n_tup_upd from pg_stat_user_tables where relname = 'jobs'"
    db_sql pgsql "delete from jobs"
    # shellcheck disable=SC2046
    env $(db_env pgsql) php examples/laravel/artisan jobs:dispatch Chaos --count=200 \
        --args='{"kind":"ok","ms":3000}' >/dev/null
    sleep 1.5
    u0=$(db_sql pgsql "$updates")
    # shellcheck disable=SC2046
    env $(db_env pgsql) "$@"
    sleep 1.5
    u1=$(db_sql pgsql "$updates")
    R[$key.renewals]=$(awk "BEGIN{printf \"%.1f\", (${u1:-0} - ${u0:-0} - 200) / 200}")
    echo "   $key: ${R[$key.renewals]} renewals per job of 3 s (one UPDATE each)"
}

# KIND PREFIX: the rows of KIND, keys PREFIX.lw1 ...
db_kind_bench() {
    local kind=$1 k=$2
    # shellcheck disable=SC2046
    env $(db_env "$kind") php examples/laravel/artisan migrate --force >/dev/null
    local lw=(./luaworker work database --handlers="$HANDLERS")
    db_throughput "$kind" "$k.lw1" 1 "${lw[@]}" --processes=1 "${LW_FAST[@]}"
    db_throughput "$kind" "$k.lw4" 1 "${lw[@]}" --processes=4 "${LW_FAST[@]}"
    db_throughput "$kind" "$k.lw32" 1 "${lw[@]}" --processes=1 --concurrency=32 "${LW_FAST[@]}"
    db_throughput "$kind" "$k.php1" 1 php examples/laravel/artisan queue:work database "${PHP_FAST[@]}"
    db_throughput "$kind" "$k.php4" 4 php examples/laravel/artisan queue:work database "${PHP_FAST[@]}"
    [ "$kind" != pgsql ] || db_leases "$k.lease" "${lw[@]}" --processes=1 --concurrency=200 --heartbeat=1 \
        "${LW_FAST[@]}"
    db_sql "$kind" "delete from jobs; delete from failed_jobs"
    # shellcheck disable=SC2046
    export $(db_env "$kind")
    [ "$kind" != pgsql ] || ./luaworker notify install >/dev/null
    latency "$k.lw.lat" "${lw[@]}" --quiet
    latency "$k.php.lat" php examples/laravel/artisan queue:work database --quiet
    [ "$kind" != pgsql ] || ./luaworker notify remove >/dev/null
    unset QUEUE_CONNECTION DB_CONNECTION DB_HOST DB_PORT DB_DATABASE DB_USERNAME DB_PASSWORD CACHE_DRIVER
}

database_queue_bench() {
    : >"$tmp/queue.sqlite"
    db_kind_bench sqlite db
    if private_postgresql_start "$tmp"; then
        db_kind_bench pgsql pg
        private_postgresql_stop "$tmp"
    else
        echo "   !! no private PostgreSQL (see $tmp/pg): no PostgreSQL rows" >&2
    fi
    mariadb --no-defaults -S "$private_mariadb_socket" -uroot -e "
        CREATE DATABASE queue; GRANT ALL ON queue.* TO 'luaworker'@'%';"
    db_kind_bench mysql my
}

database_queue_rows() {
    row "database queue (SQLite): no-op, 1 process (jobs/s)" "${R[db.lw1.tput]}" "${R[db.php1.tput]}"
    row "database queue (SQLite): no-op, 4 processes (jobs/s)" "${R[db.lw4.tput]}" "${R[db.php4.tput]}"
    row "database queue (SQLite): no-op, 1 process, --concurrency=32 (jobs/s)" "${R[db.lw32.tput]}" "${R[db.php1.tput]}"
    row "database queue (SQLite): failed rows, 4 processes" "${R[db.lw4.failed]}" "${R[db.php4.failed]}"
    row "database queue (SQLite): latency p50, sleep 3 (ms)" "${R[db.lw.lat.p50]}" "${R[db.php.lat.p50]}"
    row "database queue (SQLite): latency p99, sleep 3 (ms)" "${R[db.lw.lat.p99]}" "${R[db.php.lat.p99]}"
    row "database queue (PostgreSQL): no-op, 1 process (jobs/s)" "${R[pg.lw1.tput]:--}" "${R[pg.php1.tput]:--}"
    row "database queue (PostgreSQL): no-op, 4 processes (jobs/s)" "${R[pg.lw4.tput]:--}" "${R[pg.php4.tput]:--}"
    row "database queue (PostgreSQL): no-op, 1 process, --concurrency=32 (jobs/s)" "${R[pg.lw32.tput]:--}" "${R[pg.php1.tput]:--}"
    row "database queue (PostgreSQL): failed rows, 4 processes" "${R[pg.lw4.failed]:--}" "${R[pg.php4.failed]:--}"
    row "database queue (PostgreSQL): lease renewals per job of 3 s, --heartbeat=1 (statements)" \
        "${R[pg.lease.renewals]:--}" "-"
    row "database queue (PostgreSQL): latency p50, sleep 3, luaworker listening (ms)" \
        "${R[pg.lw.lat.p50]:--}" "${R[pg.php.lat.p50]:--}"
    row "database queue (PostgreSQL): latency p99, sleep 3, luaworker listening (ms)" \
        "${R[pg.lw.lat.p99]:--}" "${R[pg.php.lat.p99]:--}"
    row "database queue (MariaDB): no-op, 1 process (jobs/s)" "${R[my.lw1.tput]}" "${R[my.php1.tput]}"
    row "database queue (MariaDB): no-op, 4 processes (jobs/s)" "${R[my.lw4.tput]}" "${R[my.php4.tput]}"
    row "database queue (MariaDB): no-op, 1 process, --concurrency=32 (jobs/s)" "${R[my.lw32.tput]}" "${R[my.php1.tput]}"
    row "database queue (MariaDB): failed rows, 4 processes" "${R[my.lw4.failed]}" "${R[my.php4.failed]}"
    row "database queue (MariaDB): latency p50, sleep 3 (ms)" "${R[my.lw.lat.p50]}" "${R[my.php.lat.p50]}"
    row "database queue (MariaDB): latency p99, sleep 3 (ms)" "${R[my.lw.lat.p99]}" "${R[my.php.lat.p99]}"
}
