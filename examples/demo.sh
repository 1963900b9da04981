#!/usr/bin/env bash
# make demo: the Laravel 8 app in examples/laravel dispatches a few jobs, then
# luaworker runs them with the sample handlers in handlers/ until the queue is
# empty. Without REDIS_URL, REDIS_HOST or REDIS_PORT in the environment it starts
# a private redis-server (stopped at the end); with one, it uses that Redis and
# the queue "luaworker-demo" there.
set -eu
cd "$(dirname "$0")/.."

queue=luaworker-demo
tmp=$(mktemp -d /tmp/luaworker-demo.XXXXXX)
# shellcheck source=examples/private-redis.sh
. examples/private-redis.sh
cleanup() {
    private_redis_stop "$tmp"
    rm -rf "$tmp"
}
trap cleanup EXIT

if [ -z "${REDIS_URL:-}${REDIS_HOST:-}${REDIS_PORT:-}" ]; then
    if ! private_redis_start "$tmp"; then
        echo "demo: could not start a private redis-server" >&2
        exit 1
    fi
    export REDIS_PORT=$private_redis_port
    echo "== started a private redis-server on 127.0.0.1:$REDIS_PORT"
else
    echo "== using the configured Redis (queue $queue)"
fi

examples/laravel/setup.sh >/dev/null
artisan() { php examples/laravel/artisan "$@" >/dev/null; }

echo "== Laravel dispatches jobs to the [$queue] queue"
artisan jobs:dispatch ProcessPodcast --queue=$queue
artisan jobs:dispatch Simple --count=3 --args='["{i}"]' --queue=$queue
artisan jobs:dispatch 'App\Handlers\StringHandler@handle' --args='{"greeting":"hello from PHP"}' --queue=$queue
artisan jobs:dispatch Failing --queue=$queue
./luaworker push 'App\Jobs\Simple' '{"n": 42}' --queue=$queue >/dev/null
./luaworker size --queue=$queue

echo "== luaworker works the queue until it is empty"
./luaworker work --queue=$queue --handlers=handlers --stop-when-empty --sleep=0

echo "== the failed job is kept (luaworker failed), as queue:failed lists it"
./luaworker failed

# (the private redis-server goes with the demo: the retry is shown here, not suggested)
echo "== luaworker retry puts it back on its queue, as queue:retry does"
./luaworker retry all --queue=$queue
./luaworker size --queue=$queue
