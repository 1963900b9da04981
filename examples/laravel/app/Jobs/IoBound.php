<?php

namespace App\Jobs;

use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;
use Illuminate\Support\Facades\Redis;

/**
 * Benchmark job (examples/bench): waits 50 ms, as for a slow API or query, then
 * INCRs "bench:io" (with the connection prefix). What a job that mostly waits
 * on I/O costs a worker.
 */
class IoBound implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable;

    public function handle()
    {
        usleep(50000);
        Redis::incr('bench:io');
    }
}
