# shellcheck shell=bash
# Sourced by examples/bench/bench.sh: the database queue's rows (Laravel's jobs table
# in a SQLite file of the bench's own, migrated by the Laravel 8 app), luaworker
# against `php artisan queue:work database`: no-op throughput with 1 and 4
# processes (and the failed rows a run left: PHP's workers on one SQLite file lose
# deletes to "database is locked", see docs/database-queue.md), and push-to-start
# latency with the defaults (--sleep=3: both poll). Both keep the cache in the app's
# Redis (its .env's CACHE_DRIVER). BENCH_DB_JOBS (5000) scales the throughput runs.
# Uses bench.sh's tmp, HANDLERS, LW_FAST, PHP_FAST, R, now_us, latency.

DB_JOBS=${BENCH_DB_JOBS:-5000}

# The environment of both workers and of the app's dispatch on the database queue.
db_env() {
    echo QUEUE_CONNECTION=database DB_CONNECTION=sqlite DB_DATABASE="$tmp/queue.sqlite" CACHE_DRIVER=redis
}

db_sql() { sqlite3 "$tmp/queue.sqlite" "$@"; }

# KEY NPROC WORKER...: the app dispatches DB_JOBS NoOp jobs onto its jobs table, then
# NPROC copies of the worker command run until it is empty; jobs/s, and the rows
# left failed or still in the table.
db_throughput() {
    local key=$1 n=$2; shift 2
    db_sql "delete from jobs; delete from failed_jobs"
    # shellcheck disable=SC2046
    env $(db_env) php examples/laravel/artisan jobs:dispatch NoOp --count="$DB_JOBS" >/dev/null
    local t0 t1 pids=()
    t0=$(now_us)
    # shellcheck disable=SC2046
    for _ in $(seq 1 "$n"); do env $(db_env) "$@" & pids+=($!); done
    wait "${pids[@]}" || true
    t1=$(now_us)
    R[$key.tput]=$(awk "BEGIN{printf \"%.0f\", $DB_JOBS / (($t1 - $t0) / 1e6)}")
    R[$key.failed]=$(db_sql "select count(*) from failed_jobs")
    local left
    left=$(db_sql "select count(*) from jobs")
    [ "$left" = 0 ] || echo "   !! $key left $left jobs in the table" >&2
    echo "   $key: ${R[$key.tput]} jobs/s, ${R[$key.failed]} failed rows"
}

database_queue_bench() {
    : >"$tmp/queue.sqlite"
    # shellcheck disable=SC2046
    env $(db_env) php examples/laravel/artisan migrate --force >/dev/null
    local lw=(./luaworker work database --handlers="$HANDLERS")
    db_throughput db.lw1 1 "${lw[@]}" --processes=1 "${LW_FAST[@]}"
    db_throughput db.lw4 1 "${lw[@]}" --processes=4 "${LW_FAST[@]}"
    db_throughput db.php1 1 php examples/laravel/artisan queue:work database "${PHP_FAST[@]}"
    db_throughput db.php4 4 php examples/laravel/artisan queue:work database "${PHP_FAST[@]}"
    db_sql "delete from jobs; delete from failed_jobs"
    # shellcheck disable=SC2046
    export $(db_env)
    latency db.lw.lat "${lw[@]}" --quiet
    latency db.php.lat php examples/laravel/artisan queue:work database --quiet
    unset QUEUE_CONNECTION DB_CONNECTION DB_DATABASE CACHE_DRIVER
}

database_queue_rows() {
    row "database queue (SQLite): no-op, 1 process (jobs/s)" "${R[db.lw1.tput]}" "${R[db.php1.tput]}"
    row "database queue (SQLite): no-op, 4 processes (jobs/s)" "${R[db.lw4.tput]}" "${R[db.php4.tput]}"
    row "database queue (SQLite): failed rows, 4 processes" "${R[db.lw4.failed]}" "${R[db.php4.failed]}"
    row "database queue (SQLite): latency p50, sleep 3 (ms)" "${R[db.lw.lat.p50]}" "${R[db.php.lat.p50]}"
    row "database queue (SQLite): latency p99, sleep 3 (ms)" "${R[db.lw.lat.p99]}" "${R[db.php.lat.p99]}"
}
