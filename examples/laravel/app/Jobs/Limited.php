<?php

namespace App\Jobs;

use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;
use Illuminate\Queue\Middleware\RateLimited;
use Illuminate\Queue\Middleware\RateLimitedWithRedis;
use Illuminate\Support\Facades\Redis;

/**
 * spec/middleware_spec.lua: a job under the named limiter "payments" (3 a minute for
 * "acme", AppServiceProvider), through RateLimitedWithRedis when $redis, else
 * RateLimited (the cache store's RateLimiter); or, with $throttle, under
 * Redis::throttle('api') (2 every 10 s, block 0: released for 1 s when held back).
 * Its Lua twin is spec/fixtures/middleware_handlers/App/Jobs/Limited.lua. Each run
 * RPUSHes "<n> php <Redis TIME in ms>" onto limited:runs.
 *
 *   php artisan jobs:dispatch Limited --count=8 --args='{"n":"{i}","redis":true}'
 */
class Limited implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable;

    public $tries = 100;

    public $n;

    public $redis;

    public $throttle;

    public function __construct($n = 1, $redis = true, $throttle = false)
    {
        $this->n = $n;
        $this->redis = $redis;
        $this->throttle = $throttle;
    }

    public function middleware()
    {
        if ($this->throttle) {
            return [];
        }

        return [$this->redis ? new RateLimitedWithRedis('payments') : new RateLimited('payments')];
    }

    public function handle()
    {
        if (! $this->throttle) {
            return $this->record();
        }
        Redis::throttle('api')->allow(2)->every(10)->block(0)->then(function () {
            $this->record();
        }, function () {
            $this->release(1);
        });
    }

    private function record()
    {
        [$sec, $usec] = Redis::time();
        Redis::rpush('limited:runs', sprintf('%s php %d', $this->n, $sec * 1000 + intdiv($usec, 1000)));
    }
}
