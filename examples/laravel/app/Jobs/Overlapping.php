<?php

namespace App\Jobs;

use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;
use Illuminate\Queue\Middleware\WithoutOverlapping;
use Illuminate\Support\Facades\Redis;

/**
 * spec/middleware_spec.lua: a job that must never run beside another of its class
 * with the same key, whichever runtime runs it. Its Lua twin is
 * spec/fixtures/middleware_handlers/App/Jobs/Overlapping.lua, with the same
 * middleware. Each run RPUSHes "s <n> php" onto overlap:trail as it starts and
 * "e <n> php" as it ends, $ms milliseconds later.
 *
 *   php artisan jobs:dispatch Overlapping --count=10 --args='{"n":"{i}","ms":200}'
 */
class Overlapping implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable;

    public $tries = 100;

    public $n;

    public $ms;

    public $key;

    public function __construct($n = 1, $ms = 200, $key = 'shared')
    {
        $this->n = $n;
        $this->ms = $ms;
        $this->key = $key;
    }

    public function middleware()
    {
        return [(new WithoutOverlapping($this->key))->releaseAfter(1)->expireAfter(60)];
    }

    public function handle()
    {
        Redis::rpush('overlap:trail', "s {$this->n} php");
        usleep($this->ms * 1000);
        Redis::rpush('overlap:trail', "e {$this->n} php");
    }
}
