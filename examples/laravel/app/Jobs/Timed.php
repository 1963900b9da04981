<?php

namespace App\Jobs;

use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;
use Illuminate\Support\Facades\Redis;

/**
 * Benchmark job (examples/bench): measures push-to-start latency and the
 * lateness of delayed jobs. Pushed by examples/bench/push_timed.php.
 *
 * handle() reads Redis TIME first thing and RPUSHes onto "bench:timed"
 * (with the connection prefix) the line "<tag> <pushedAt> <dueAt> <startedAt>":
 * microsecond Unix times from the same Redis server's TIME (dueAt in whole
 * seconds, "-" for a job that was not delayed). The Lua handler in
 * examples/bench/handlers/App/Jobs/Timed.lua writes the same line.
 */
class Timed implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable;

    /** @var string which measurement the job belongs to */
    public $tag;

    /** @var int Redis TIME in microseconds just before dispatch */
    public $pushedAt;

    /** @var int|null the second the job is due (its :delayed score), null when not delayed */
    public $dueAt;

    public function __construct($tag = 'x', $pushedAt = 0, $dueAt = null)
    {
        $this->tag = $tag;
        $this->pushedAt = $pushedAt;
        $this->dueAt = $dueAt;
    }

    public function handle()
    {
        [$sec, $usec] = Redis::time();
        $startedAt = (int) $sec * 1000000 + (int) $usec;
        Redis::rpush('bench:timed', sprintf('%s %d %s %d',
            $this->tag, $this->pushedAt, $this->dueAt ?? '-', $startedAt));
    }
}
