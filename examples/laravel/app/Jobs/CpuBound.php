<?php

namespace App\Jobs;

use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;

/**
 * Benchmark job (examples/bench): a small fixed computation, the same as
 * examples/bench/handlers/App/Jobs/CpuBound.lua: the sum of i*i mod 7 for
 * i = 1..200000 (= 685714). The result is kept in a static so the loop
 * cannot be optimised away.
 */
class CpuBound implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable;

    const N = 200000;

    /** @var int the last sum computed */
    public static $last = 0;

    public function handle()
    {
        $s = 0;
        for ($i = 1; $i <= self::N; $i++) {
            $s += ($i * $i) % 7;
        }
        static::$last = $s;
    }
}
