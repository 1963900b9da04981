<?php

namespace App\Jobs;

use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;
use Illuminate\Queue\Middleware\ThrottlesExceptions;
use Illuminate\Queue\Middleware\ThrottlesExceptionsWithRedis;
use Illuminate\Support\Facades\Redis;
use RuntimeException;

/**
 * spec/middleware_spec.lua: a job that always throws, under ThrottlesExceptions(2, 1)
 * by "flaky" (ThrottlesExceptionsWithRedis when $redis): after 2 exceptions within a
 * minute, jobs of that key are held back. Its Lua twin is
 * spec/fixtures/middleware_handlers/App/Jobs/Flaky.lua. Each run RPUSHes "<n> php"
 * onto flaky:runs before it throws.
 */
class Flaky implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable;

    public $tries = 100;

    public $n;

    public $redis;

    public function __construct($n = 1, $redis = false)
    {
        $this->n = $n;
        $this->redis = $redis;
    }

    public function middleware()
    {
        return [$this->redis ? (new ThrottlesExceptionsWithRedis(2, 1))->by('flaky')
            : (new ThrottlesExceptions(2, 1))->by('flaky')];
    }

    public function handle()
    {
        Redis::rpush('flaky:runs', "{$this->n} php");
        throw new RuntimeException('flaky');
    }
}
