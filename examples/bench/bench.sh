#!/usr/bin/env bash
# make bench: luaworker against `php artisan queue:work` (the Laravel 8 app in
# examples/laravel) on the same jobs, in one run on a private redis-server.
# Prints a table (metric | luaworker | queue:work | ratio) and writes it, with
# the machine it ran on, to examples/bench/RESULTS.md. It measures; it asserts
# nothing. See examples/bench/README.md for what each row means.
#
# BENCH_JOBS (20000), BENCH_LATENCY_JOBS (200), BENCH_DELAYED_JOBS (50),
# BENCH_CPU_JOBS (500), BENCH_IO_JOBS (20000; queue:work gets a 50th of them) and
# BENCH_DB_JOBS (5000, examples/bench/database.sh) scale the runs down for a quick
# try; BENCH_RESULTS writes the table elsewhere.
set -eu
cd "$(dirname "$0")/../.."

JOBS=${BENCH_JOBS:-20000}
LAT_JOBS=${BENCH_LATENCY_JOBS:-200}
DELAYED_JOBS=${BENCH_DELAYED_JOBS:-50}
CPU_JOBS=${BENCH_CPU_JOBS:-500}
IO_JOBS=${BENCH_IO_JOBS:-20000}
HANDLERS=examples/bench/handlers
RESULTS=${BENCH_RESULTS:-examples/bench/RESULTS.md}
P=laravel_database_              # the app's key prefix (APP_NAME=Laravel)

# shellcheck source=examples/private-redis.sh
. examples/private-redis.sh
# shellcheck source=examples/bench/database.sh
. examples/bench/database.sh
tmp=$(mktemp -d /tmp/luaworker-bench.XXXXXX)
bg_pids=()                       # workers started in the background, by pid
cleanup() {
    for pid in "${bg_pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
    private_redis_stop "$tmp"
    [ -z "${private_mariadb_port:-}" ] || private_mariadb_stop "$tmp"
    private_postgresql_stop "$tmp"
    rm -rf "$tmp"
}
trap cleanup EXIT

# --- a private redis-server (as examples/demo.sh), always: the numbers need a
# Redis nobody else uses. It takes TLS too, with a CA made here, for the TLS rows.
mkdir -p "$tmp/tls"
(
    cd "$tmp/tls" &&
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj "/CN=bench CA" &&
    openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "/CN=localhost" &&
    printf 'subjectAltName=IP:127.0.0.1\n' >server.ext &&
    openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 2 \
        -extfile server.ext
) >/dev/null 2>&1 || echo "bench: openssl could not make the TLS certificates: no TLS rows" >&2
if ! private_redis_start "$tmp"; then
    echo "bench: could not start a private redis-server" >&2
    exit 1
fi
port=$private_redis_port
unset REDIS_URL REDIS_PASSWORD REDIS_USERNAME REDIS_DB REDIS_PREFIX REDIS_QUEUE REDIS_BLOCK_FOR
export REDIS_HOST=127.0.0.1 REDIS_PORT=$port
echo "== private redis-server on 127.0.0.1:$port; work files in $tmp"

examples/laravel/setup.sh >/dev/null

rcli() { redis-cli -p "$port" "$@"; }
artisan() { php examples/laravel/artisan "$@"; }
now_us() { echo $(( $(date +%s%N) / 1000 )); }

# Laravel pushes COUNT jobs of class NAME (quietly: one output line per job).
dispatch() { artisan jobs:dispatch "$@" >/dev/null; }

# "cpu_us calls usec" of the redis-server so far: INFO cpu's used_cpu_sys +
# used_cpu_user in microseconds, and the sums of INFO commandstats calls / usec.
redis_counters() {
    { rcli INFO cpu; rcli INFO commandstats; } | tr -d '\r' | awk -F'[:,=]' '
        /^used_cpu_(sys|user):/ { cpu += $2 }
        /^cmdstat_/ { for (i = 2; i < NF; i += 2) { if ($i == "calls") c += $(i+1); if ($i == "usec") u += $(i+1) } }
        END { printf "%.0f %d %d\n", cpu * 1e6, c, u }'
}

# The queue and the records left empty for the next measurement.
reset_queue() {
    rcli DEL ${P}queues:default ${P}queues:default:notify ${P}queues:default:delayed \
        ${P}queues:default:reserved ${P}bench:timed ${P}bench:memory >/dev/null
}

# A warning when a run left jobs behind (it does not stop the benchmark).
check_empty() {
    local left
    left=$(( $(rcli LLEN ${P}queues:default) + $(rcli ZCARD ${P}queues:default:reserved) \
        + $(rcli ZCARD ${P}queues:default:delayed) ))
    [ "$left" -eq 0 ] && return 0
    echo "   !! $1 left $left jobs in the queue: no figure for it" >&2
    return 1
}

# The worker commands. luaworker is the supervisor; --processes sets its workers.
lw_work() { ./luaworker work --handlers=$HANDLERS "$@"; }
php_work() { artisan queue:work "$@"; }

declare -A R                     # results by key, e.g. R[lw.tput1]

# --- 1, 2, 5: throughput on JOBS no-op jobs, Redis CPU per job, and memory.
# KEY NPROC WORKER... : Laravel pushes JOBS NoOp jobs and, last, one ReportMemory
# job (tag KEY) that records the resident memory of the worker process that runs
# it, i.e. of a worker that has just run its share of the JOBS jobs. Then the
# worker command runs NPROC times in parallel (1 for luaworker, which forks its
# own processes) until the queue is empty; wall time from start to exit.
throughput() {
    local key=$1 n=$2; shift 2
    reset_queue
    dispatch NoOp --count="$JOBS"
    dispatch ReportMemory --args="[\"$key\"]"
    local before after t0 t1 pids=()
    before=$(redis_counters)
    t0=$(now_us)
    for _ in $(seq 1 "$n"); do "$@" & pids+=($!); done
    wait "${pids[@]}"
    t1=$(now_us)
    after=$(redis_counters)
    local ran=1
    check_empty "$key" || ran=
    read -r c0 k0 u0 <<<"$before"
    read -r c1 k1 u1 <<<"$after"
    R[$key.secs]=$(awk "BEGIN{printf \"%.2f\", ($t1 - $t0) / 1e6}")
    R[$key.tput]=$(awk "BEGIN{printf \"%.0f\", $JOBS / (($t1 - $t0) / 1e6)}")
    R[$key.cpu]=$(awk "BEGIN{printf \"%.1f\", ($c1 - $c0) / $JOBS}")
    R[$key.calls]=$(awk "BEGIN{printf \"%.2f\", ($k1 - $k0) / $JOBS}")
    R[$key.usec]=$(awk "BEGIN{printf \"%.1f\", ($u1 - $u0) / $JOBS}")
    [ -n "$ran" ] || R[$key.tput]=-
    read -r _ rss hwm <<<"$(rcli LRANGE ${P}bench:memory 0 -1 | grep "^$key " | head -n 1)"
    R[$key.rss]=$(awk "BEGIN{printf \"%.1f\", ${rss:-0} / 1024}")
    R[$key.hwm]=$(awk "BEGIN{printf \"%.1f\", ${hwm:-0} / 1024}")
    echo "   $key: ${R[$key.secs]} s, ${R[$key.tput]} jobs/s, redis ${R[$key.cpu]} us CPU/job," \
        "${R[$key.calls]} calls/job, worker RSS ${R[$key.rss]} MB"
}

# --- Jobs that wait: KEY COUNT CLASS WORKER...: Laravel pushes COUNT jobs of CLASS
# (IoBound: a 50 ms wait and one INCR; HttpBound: a GET of the bench's HTTP server,
# which answers after 50 ms, and one INCR) and, last, one ReportMemory job (tag KEY:
# its VmHWM is the process's peak with the jobs in flight); the worker command runs
# until the queue is empty. Jobs/s, and the most Redis connections open meanwhile
# beside the sampler's own (INFO clients every 50 ms).
io_bound() {
    local key=$1 count=$2 class=$3; shift 3
    reset_queue
    if [ "$class" = HttpBound ]; then
        dispatch HttpBound --count="$count" --args="[\"http://127.0.0.1:$http_port/delay?ms=50\"]"
    else
        dispatch "$class" --count="$count"
    fi
    dispatch ReportMemory --args="[\"$key\"]"
    local base t0 t1 pid peak=0 n
    base=$(rcli INFO clients | tr -d '\r' | sed -n 's/^connected_clients://p')
    t0=$(now_us)
    "$@" & pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        n=$(rcli INFO clients | tr -d '\r' | sed -n 's/^connected_clients://p')
        [ "${n:-0}" -gt "$peak" ] && peak=$n
        sleep 0.05
    done
    wait "$pid" || true
    t1=$(now_us)
    R[$key.tput]=$(awk "BEGIN{printf \"%.0f\", $count / (($t1 - $t0) / 1e6)}")
    check_empty "$key" || R[$key.tput]=-
    R[$key.conns]=$(( peak > base ? peak - base : 0 ))
    read -r _ rss hwm <<<"$(rcli LRANGE ${P}bench:memory 0 -1 | grep "^$key " | head -n 1)"
    R[$key.hwm]=$(awk "BEGIN{printf \"%.1f\", ${hwm:-0} / 1024}")
    echo "   $key: $count jobs, ${R[$key.tput]} jobs/s, ${R[$key.conns]} Redis connections," \
        "worker VmHWM ${R[$key.hwm]} MB"
}

# p50 and p99 (nearest rank) and the maximum of the numbers on stdin, in ms with
# one decimal: "p50 p99 max".
percentiles() {
    sort -g | awk '{ v[NR] = $1 }
        function rank(q,  r) { r = int(q * NR); if (r < q * NR) r++; if (r < 1) r = 1; return v[r] }
        END { if (NR == 0) { print "- - -"; exit }
              printf "%.1f %.1f %.1f\n", rank(0.50), rank(0.99), v[NR] }'
}

# Waits until COUNT Timed records with tag KEY are in, for at most SECS seconds.
wait_records() {
    local key=$1 count=$2 secs=$3 deadline=$(( $(date +%s) + $3 ))
    while [ "$(rcli LRANGE ${P}bench:timed 0 -1 | grep -c "^$key ")" -lt "$count" ]; do
        if [ "$(date +%s)" -ge "$deadline" ]; then
            echo "   !! $key: not all $count jobs ran within ${secs} s" >&2
            return 0
        fi
        sleep 0.2
    done
}

# Starts the worker command idle in the background, lets it settle, runs the pusher ARGS, waits for the records, then stops the
# worker with TERM (KILL after 15 s).
with_idle_worker() {
    local key=$1 count=$2 pusher_args=$3; shift 3
    reset_queue
    "$@" >"$tmp/$key.log" 2>&1 &
    local pid=$!
    bg_pids+=("$pid")
    # Both are ready well within 2 s. At --sleep=3 the result depends on where in
    # its 3 s cycle the worker is when the pushes start; a random settle time
    # keeps that phase from being the same for both workers in every run.
    sleep "$(awk -v r="$RANDOM" 'BEGIN { printf "%.2f", 2 + 3 * r / 32767 }')"
    # shellcheck disable=SC2086
    php examples/bench/push_timed.php "$key" "$count" $pusher_args
    wait_records "$key" "$count" 30
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    check_empty "$key" || true
}

# --- 3: push-to-start latency with an idle worker, LAT_JOBS jobs pushed one at a
# time with a random 10-100 ms pause. Both timestamps are Redis TIME.
latency() {
    local key=$1; shift
    with_idle_worker "$key" "$LAT_JOBS" "" "$@"
    read -r "R[$key.p50]" "R[$key.p99]" "R[$key.max]" <<<"$(rcli LRANGE ${P}bench:timed 0 -1 |
        awk -v k="$key" '$1 == k { print ($4 - $2) / 1000 }' | percentiles)"
    echo "   $key: latency p50 ${R[$key.p50]} ms, p99 ${R[$key.p99]} ms, max ${R[$key.max]} ms"
}

# --- 4: lateness of delayed jobs: start (Redis TIME) minus the second the job was
# due (its :delayed score), DELAYED_JOBS jobs with delays of 1, 2, 3 s.
lateness() {
    local key=$1; shift
    with_idle_worker "$key" "$DELAYED_JOBS" delayed "$@"
    read -r "R[$key.p50]" "R[$key.p99]" "R[$key.max]" <<<"$(rcli LRANGE ${P}bench:timed 0 -1 |
        awk -v k="$key" '$1 == k { print ($4 / 1000) - ($3 * 1000) }' | percentiles)"
    echo "   $key: lateness p50 ${R[$key.p50]} ms, max ${R[$key.max]} ms"
}

# --- 6: CPU-bound handler, CPU_JOBS jobs, one process.
cpu_bound() {
    local key=$1; shift
    reset_queue
    dispatch CpuBound --count="$CPU_JOBS"
    local t0 t1
    t0=$(now_us)
    "$@"
    t1=$(now_us)
    R[$key.tput]=$(awk "BEGIN{printf \"%.0f\", $CPU_JOBS / (($t1 - $t0) / 1e6)}")
    check_empty "$key" || R[$key.tput]=-
    echo "   $key: $CPU_JOBS CPU-bound jobs, ${R[$key.tput]} jobs/s"
}

# Start-up and exit on an empty queue (part of every wall time above).
startup() {
    local key=$1; shift
    reset_queue
    local t0 t1
    t0=$(now_us)
    "$@"
    t1=$(now_us)
    R[$key.ms]=$(awk "BEGIN{printf \"%.0f\", ($t1 - $t0) / 1000}")
    echo "   $key: start and exit on an empty queue, ${R[$key.ms]} ms"
}

# --- 7: how long the jobs a luaworker process reserved ahead and had not started
# stay held after its whole process group is killed (kill -9, no TERM: a machine
# crash, an OOM kill), at the default --heartbeat: from the kill until another
# luaworker, started at once, has given them back (the dead workers are gone from
# the queue's set of workers). queue:work holds no job beyond the one it runs, which
# comes back after retry_after: there is no such row for it.
recovery() {
    local key=$1
    reset_queue
    dispatch NoOp --count="$JOBS"
    setsid ./luaworker work --handlers=$HANDLERS --quiet >"$tmp/$key.log" 2>&1 &
    local group=$!
    disown "$group"  # its kill -9 is the point: no "Killed" notice from the shell
    bg_pids+=("$group")
    local workers=${P}queues:default:luaworker:workers ids=""
    while [ -z "$ids" ]; do sleep 0.05; ids=$(rcli SMEMBERS "$workers"); done
    sleep 0.05  # it has taken batches, and cannot have run all the jobs
    ids=$(rcli SMEMBERS "$workers")
    kill -KILL -- "-$group"
    local t0 t1 left
    t0=$(now_us)
    # not --quiet: its log names the jobs it gave back
    ./luaworker work --handlers=$HANDLERS >"$tmp/$key.next.log" 2>&1 &
    local next=$!
    bg_pids+=("$next")
    while :; do
        left=$(rcli SMEMBERS "$workers")
        t1=$(now_us)
        local held=0
        for id in $ids; do grep -qxF "$id" <<<"$left" && held=1; done
        [ "$held" -eq 0 ] && break
        [ $(( t1 - t0 )) -gt 60000000 ] && { echo "   !! $key: not given back within 60 s" >&2; break; }
        sleep 0.02
    done
    R[$key.s]=$(awk "BEGIN{printf \"%.1f\", ($t1 - $t0) / 1e6}")
    kill -TERM "$next" 2>/dev/null; wait "$next" 2>/dev/null || true
    echo "   $key: given back ${R[$key.s]} s after the kill ($(grep -o 'stopped beating: [0-9]* jobs' "$tmp/$key.next.log" | head -n 1))"
}

started=$(date +%s)
LW_FAST=(--stop-when-empty --quiet --sleep=0)
PHP_FAST=(--stop-when-empty --quiet --sleep=0)
# Idle workers at their defaults (sleep 3). These run in the background and are
# stopped with TERM, so they are the programs themselves, not shell functions.
LW_IDLE=(./luaworker work "--handlers=$HANDLERS" --quiet)
PHP_IDLE=(php examples/laravel/artisan queue:work --quiet)

echo "== start-up"
startup lw.start lw_work --processes=1 "${LW_FAST[@]}"
startup php.start php_work "${PHP_FAST[@]}"

echo "== throughput: $JOBS no-op jobs pushed by Laravel"
throughput lw1 1 lw_work --processes=1 "${LW_FAST[@]}"
throughput php1 1 php_work "${PHP_FAST[@]}"
throughput lw2 1 lw_work --processes=2 "${LW_FAST[@]}"
throughput php2 2 php_work "${PHP_FAST[@]}"

echo "== the same over the server's unix socket (REDIS_HOST its path, REDIS_PORT 0)"
throughput lw1.unix 1 env REDIS_HOST="$tmp/redis.sock" REDIS_PORT=0 ./luaworker work \
    --handlers="$HANDLERS" --processes=1 "${LW_FAST[@]}"
throughput php1.unix 1 env REDIS_HOST="$tmp/redis.sock" REDIS_PORT=0 php examples/laravel/artisan \
    queue:work "${PHP_FAST[@]}"

if [ -n "${private_redis_tls_port:-}" ]; then
    echo "== the same over TLS (REDIS_SCHEME=tls, the server's TLS port, its CA given)"
    TLS_ENV=(REDIS_PORT="$private_redis_tls_port" REDIS_SCHEME=tls LUAWORKER_REDIS_CA_FILE="$tmp/tls/ca.crt")
    throughput lw1.tls 1 env "${TLS_ENV[@]}" ./luaworker work --handlers="$HANDLERS" --processes=1 "${LW_FAST[@]}"
    throughput php1.tls 1 env "${TLS_ENV[@]}" php examples/laravel/artisan queue:work "${PHP_FAST[@]}"
fi

# The cost of --metrics scraped: the same no-op run, a curl of /metrics every
# 0.1 s beside it (ten times Prometheus's tightest usual scrape_interval, 1s: the
# run lasts about a second, and one scrape in it would measure nothing).
with_scrapes() {
    local mport=$1; shift
    ( while :; do curl -s -o /dev/null "http://127.0.0.1:$mport/metrics"; sleep 0.1; done ) &
    local scraper=$!
    local status=0
    "$@" || status=$?
    kill "$scraper" 2>/dev/null || true
    wait "$scraper" 2>/dev/null || true
    return $status
}
metrics_port=$(( 20000 + RANDOM % 20000 ))
echo "== no-op throughput, 1 process, --metrics scraped 10 times a second"
throughput lw1.metrics 1 with_scrapes "$metrics_port" lw_work --processes=1 \
    --metrics=127.0.0.1:"$metrics_port" "${LW_FAST[@]}"
echo "   --metrics scraped 10 times a second: $(awk "BEGIN{printf \"%.1f\", (1 - ${R[lw1.metrics.tput]:-0} / ${R[lw1.tput]}) * 100}")% fewer jobs/s than without"

echo "== no-op throughput, 1 process, --horizon (Horizon's records of each job)"
throughput lw1.horizon 1 lw_work --processes=1 --horizon "${LW_FAST[@]}"
echo "   --horizon: $(awk "BEGIN{printf \"%.1f\", (1 - ${R[lw1.horizon.tput]:-0} / ${R[lw1.tput]}) * 100}")% fewer jobs/s than without"

# The cost of leases (docs/operating.md#leases): 200 jobs of 3 s (Chaos, waiting
# without the CPU), all in flight at once, at --heartbeat=1. The ZADDs beyond the
# pops' one per job are the renewals: one per job every half heartbeat once it ran
# half a heartbeat. queue:work renews nothing (a job past retry_after runs twice).
zadds() { rcli INFO commandstats | tr -d '\r' | sed -n 's/^cmdstat_zadd:calls=\([0-9]*\),.*/\1/p'; }
leases() {
    local key=$1 z0 z1; shift
    reset_queue
    dispatch Chaos --count=200 --args='{"kind":"ok","ms":3000}'
    z0=$(zadds)
    "$@"
    z1=$(zadds)
    R[$key.renewals]=$(awk "BEGIN{printf \"%.1f\", (${z1:-0} - ${z0:-0} - 200) / 200}")
    echo "   $key: ${R[$key.renewals]} renewals per job of 3 s (one command each)"
}
echo "== leases: 200 jobs of 3 s in flight at once, --heartbeat=1"
leases lw.lease lw_work --processes=1 --concurrency=200 --heartbeat=1 "${LW_FAST[@]}"

echo "== no-op throughput, jobs in flight: --concurrency=32"
throughput lw32 1 lw_work --processes=1 --concurrency=32 "${LW_FAST[@]}"

echo "== I/O-bound jobs (50 ms wait + INCR), 1 process"
io_bound lw.io100 "$IO_JOBS" IoBound lw_work --processes=1 --concurrency=100 "${LW_FAST[@]}"
io_bound lw.io1000 "$IO_JOBS" IoBound lw_work --processes=1 --concurrency=1000 "${LW_FAST[@]}"
io_bound php.io $(( IO_JOBS / 50 )) IoBound php_work "${PHP_FAST[@]}"

echo "== HTTP-bound jobs (a GET answered after 50 ms + INCR), 1 process"
http_port=$(( 20000 + RANDOM % 20000 ))
lua5.2 spec/fixtures/http/server.lua "$http_port" >/dev/null 2>&1 &
bg_pids+=($!)
disown "$!"  # killed at the end: no "Killed" notice from the shell
for _ in $(seq 1 50); do (exec 3<>"/dev/tcp/127.0.0.1/$http_port") 2>/dev/null && break; sleep 0.1; done
io_bound lw.http100 "$IO_JOBS" HttpBound lw_work --processes=1 --concurrency=100 "${LW_FAST[@]}"
io_bound php.http $(( IO_JOBS / 50 )) HttpBound php_work "${PHP_FAST[@]}"

echo "== SQL-bound jobs (insert a row, read it back + INCR), 1 process, a private MariaDB"
# shellcheck source=examples/private-mariadb.sh
. examples/private-mariadb.sh
if ! private_mariadb_start "$tmp"; then
    echo "bench: could not start a private MariaDB" >&2
    exit 1
fi
# the app's tables as its migrations make them: luaworker checks at start that the
# failed-job store (database-uuids, as DB_CONNECTION is set) can be written
mariadb --no-defaults -S "$private_mariadb_socket" -uroot app -e "create table bench_rows
    (id bigint unsigned auto_increment primary key, uuid char(36) not null unique,
     note varchar(100) not null) engine=InnoDB;
    create table failed_jobs (id bigint unsigned auto_increment primary key,
     uuid varchar(255) not null unique, connection text not null, queue text not null,
     payload longtext not null, exception longtext not null,
     failed_at timestamp not null default current_timestamp)"
# both workers on the app's mysql connection (the rest of the bench keeps its sqlite)
sql_env=(env DB_CONNECTION=mysql DB_HOST=127.0.0.1 DB_PORT="$private_mariadb_port"
    DB_DATABASE=app DB_USERNAME=luaworker DB_PASSWORD="$private_mariadb_password")
sql_rows() { # KEY COUNT: warns unless the run left COUNT rows, then empties the table
    local n
    n=$(mariadb --no-defaults -S "$private_mariadb_socket" -uroot app -N -e \
        "select count(*) from bench_rows; truncate bench_rows" | head -n 1)
    [ "$n" = "$2" ] || echo "   !! $1 left $n rows, not $2" >&2
}
io_bound lw.sql100 "$IO_JOBS" SqlBound "${sql_env[@]}" ./luaworker work --handlers=$HANDLERS \
    --processes=1 --concurrency=100 "${LW_FAST[@]}"
sql_rows lw.sql100 "$IO_JOBS"
io_bound php.sql $(( IO_JOBS / 10 )) SqlBound "${sql_env[@]}" php examples/laravel/artisan queue:work \
    "${PHP_FAST[@]}"
sql_rows php.sql $(( IO_JOBS / 10 ))

echo "== the database queue (SQLite, PostgreSQL, MariaDB), $DB_JOBS no-op jobs, and push-to-start latency"
database_queue_bench

echo "== CPU-bound handler: $CPU_JOBS jobs"
cpu_bound lw.cpu lw_work --processes=1 "${LW_FAST[@]}"
cpu_bound php.cpu php_work "${PHP_FAST[@]}"

echo "== jobs reserved ahead, after kill -9 of the whole process group"
recovery lw.recovery

echo "== push-to-start latency, idle worker, $LAT_JOBS jobs"
latency lw.lat "${LW_IDLE[@]}"
latency php.lat "${PHP_IDLE[@]}"
latency lw.latb "${LW_IDLE[@]}" --block-for=5
latency php.latb env REDIS_BLOCK_FOR=5 "${PHP_IDLE[@]}"

echo "== lateness of $DELAYED_JOBS delayed jobs (delay 1-3 s)"
lateness lw.late "${LW_IDLE[@]}"
lateness php.late "${PHP_IDLE[@]}"
lateness lw.lateb "${LW_IDLE[@]}" --block-for=5
lateness php.lateb env REDIS_BLOCK_FOR=5 "${PHP_IDLE[@]}"

# --- the table: ratio = luaworker / queue:work (a throughput ratio above 1 and a
# time, CPU or memory ratio below 1 favour luaworker).
row() { # label lw-value php-value
    local ratio
    ratio=$(awk -v a="$2" -v b="$3" 'BEGIN { if (b + 0 == 0 || a == "-" || b == "-") print "-"; else printf "%.2f", a / b }')
    printf '| %-58s | %10s | %10s | %6s |\n' "$1" "$2" "$3" "$ratio"
}
table() {
    printf '| %-58s | %10s | %10s | %6s |\n' metric luaworker queue:work ratio
    printf '|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..60})" "$(printf -- '-%.0s' {1..12})" \
        "$(printf -- '-%.0s' {1..12})" "$(printf -- '-%.0s' {1..8})"
    row "no-op throughput, 1 process (jobs/s)" "${R[lw1.tput]}" "${R[php1.tput]}"
    row "no-op throughput, 2 processes (jobs/s)" "${R[lw2.tput]}" "${R[php2.tput]}"
    row "no-op throughput, 1 process, unix socket (jobs/s)" "${R[lw1.unix.tput]}" "${R[php1.unix.tput]}"
    row "Redis CPU per job, 1 process, unix socket (us)" "${R[lw1.unix.cpu]}" "${R[php1.unix.cpu]}"
    row "no-op throughput, 1 process, TLS (jobs/s)" "${R[lw1.tls.tput]:--}" "${R[php1.tls.tput]:--}"
    row "Redis CPU per job, 1 process, TLS (us)" "${R[lw1.tls.cpu]:--}" "${R[php1.tls.cpu]:--}"
    row "Redis CPU per job, 1 process (us)" "${R[lw1.cpu]}" "${R[php1.cpu]}"
    row "Redis CPU per job, 2 processes (us)" "${R[lw2.cpu]}" "${R[php2.cpu]}"
    row "Redis commands per job, 1 process" "${R[lw1.calls]}" "${R[php1.calls]}"
    row "Redis command time per job, 1 process (us)" "${R[lw1.usec]}" "${R[php1.usec]}"
    row "latency p50, defaults: sleep 3 (ms)" "${R[lw.lat.p50]}" "${R[php.lat.p50]}"
    row "latency p99, defaults: sleep 3 (ms)" "${R[lw.lat.p99]}" "${R[php.lat.p99]}"
    row "latency p50, block_for 5 (ms)" "${R[lw.latb.p50]}" "${R[php.latb.p50]}"
    row "latency p99, block_for 5 (ms)" "${R[lw.latb.p99]}" "${R[php.latb.p99]}"
    row "delayed job lateness p50, defaults (ms)" "${R[lw.late.p50]}" "${R[php.late.p50]}"
    row "delayed job lateness max, defaults (ms)" "${R[lw.late.max]}" "${R[php.late.max]}"
    row "delayed job lateness p50, block_for 5 (ms)" "${R[lw.lateb.p50]}" "${R[php.lateb.p50]}"
    row "delayed job lateness max, block_for 5 (ms)" "${R[lw.lateb.max]}" "${R[php.lateb.max]}"
    row "worker VmRSS after $JOBS no-op jobs (MB)" "${R[lw1.rss]}" "${R[php1.rss]}"
    row "worker VmHWM after $JOBS no-op jobs (MB)" "${R[lw1.hwm]}" "${R[php1.hwm]}"
    row "CPU-bound handler, 1 process (jobs/s)" "${R[lw.cpu.tput]}" "${R[php.cpu.tput]}"
    row "no-op throughput, 1 process, --metrics scraped 10/s (jobs/s)" "${R[lw1.metrics.tput]}" "${R[php1.tput]}"
    row "no-op throughput, 1 process, --horizon (jobs/s)" "${R[lw1.horizon.tput]}" "${R[php1.tput]}"
    row "lease renewals per job of 3 s, --heartbeat=1 (commands)" "${R[lw.lease.renewals]:--}" "-"
    row "no-op throughput, 1 process, --concurrency=32 (jobs/s)" "${R[lw32.tput]}" "${R[php1.tput]}"
    row "I/O-bound (50 ms), 1 process, --concurrency=100 (jobs/s)" "${R[lw.io100.tput]}" "${R[php.io.tput]}"
    row "I/O-bound (50 ms), 1 process, --concurrency=1000 (jobs/s)" "${R[lw.io1000.tput]}" "${R[php.io.tput]}"
    row "VmHWM, 1 process, 1000 I/O jobs in flight (MB)" "${R[lw.io1000.hwm]}" "${R[php.io.hwm]}"
    row "Redis connections, 1 process, 1000 in flight" "${R[lw.io1000.conns]}" "${R[php.io.conns]}"
    row "HTTP-bound (50 ms), 1 process, --concurrency=100 (jobs/s)" "${R[lw.http100.tput]}" "${R[php.http.tput]}"
    row "SQL-bound (insert + select, MariaDB), 1 process, --concurrency=100 (jobs/s)" "${R[lw.sql100.tput]}" "${R[php.sql.tput]}"
    database_queue_rows
    row "start and exit on an empty queue (ms)" "${R[lw.start.ms]}" "${R[php.start.ms]}"
    row "jobs reserved ahead back after a group kill -9 (s)" "${R[lw.recovery.s]}" "-"
}

echo
echo "== results (ratio = luaworker / queue:work), $(( $(date +%s) - started )) s"
table | tee "$tmp/table"

machine() {
    echo "- date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo "- nproc: $(nproc)"
    echo "- CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
    echo "- Redis: $(rcli INFO server | tr -d '\r' | sed -n 's/^redis_version://p')"
    echo "- PHP: $(php -r 'echo PHP_VERSION;'), Laravel $(php examples/laravel/artisan --version | sed 's/^Laravel Framework //'), opcache.enable_cli=$(php -r 'echo (int) ini_get("opcache.enable_cli");')"
    echo "- luaworker: $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet HEAD -- runtime scripts 2>/dev/null || echo ' (modified)'), $(luajit -v | cut -d' ' -f1-2)"
}
{
    echo "# luaworker vs php artisan queue:work"
    echo
    echo "Written by \`make bench\` (examples/bench/bench.sh); see examples/bench/README.md"
    echo "for what each row measures. ratio = luaworker / queue:work."
    echo
    machine
    echo
    cat "$tmp/table"
} >"$RESULTS"
echo "== written to $RESULTS"
