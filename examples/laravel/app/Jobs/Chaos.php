<?php

namespace App\Jobs;

use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;
use Illuminate\Support\Facades\Redis;
use RuntimeException;

/**
 * The chaos soak's job (spec/chaos/): luaworker runs it with
 * spec/chaos/handlers/App/Jobs/Chaos.lua, which does what handle() does here
 * and also keeps a trail of each run's start and end (chaos:trail).
 *
 * Every run HINCRBYs chaos:runs <uuid>, then waits $ms milliseconds; then, by $kind:
 *   ok       succeeds: HINCRBY chaos:done <uuid>
 *   release  releases itself $releaseDelay seconds while attempts() <= $releases,
 *            then succeeds
 *   delayed  dispatched $delay seconds late (the constructor calls delay());
 *            succeeds, counting a run before $dueAt in chaos:early
 *   fail     throws on every attempt, so it fails after $tries
 * $tries and $backoff are the payload's maxTries and backoff.
 *
 *   php artisan jobs:dispatch Chaos --count=100 --args='{"n":"{i}","kind":"delayed","delay":3}'
 */
class Chaos implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable;

    public $tries;

    public $backoff;

    public $n;

    public $kind;

    public $ms;

    public $releases;

    public $releaseDelay;

    public $dueAt;

    public function __construct($n = 1, $kind = 'ok', $ms = 0, $tries = 25, $backoff = 1,
        $releases = 1, $releaseDelay = 1, $delay = 0)
    {
        $this->n = $n;
        $this->kind = $kind;
        $this->ms = $ms;
        $this->tries = $tries;
        $this->backoff = $backoff;
        $this->releases = $releases;
        $this->releaseDelay = $releaseDelay;
        $this->dueAt = time() + $delay;
        if ($delay > 0) {
            $this->delay($delay);
        }
    }

    public function handle()
    {
        $uuid = $this->job->uuid();
        Redis::hincrby('chaos:runs', $uuid, 1);
        usleep($this->ms * 1000);

        if ($this->kind === 'fail') {
            throw new RuntimeException('chaos: failing on purpose');
        }
        if ($this->kind === 'release' && $this->attempts() <= $this->releases) {
            $this->release($this->releaseDelay);

            return;
        }
        if ($this->kind === 'delayed' && time() < $this->dueAt) {
            Redis::hincrby('chaos:early', $uuid, 1);
        }
        Redis::hincrby('chaos:done', $uuid, 1);
    }
}
