<?php

namespace App\Jobs;

use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;
use Illuminate\Support\Facades\Redis;

/**
 * Benchmark job (examples/bench): reports the resident memory of the worker
 * process running it. RPUSHes "<tag> <VmRSS kB> <VmHWM kB>" (from
 * /proc/self/status) onto "bench:memory" (with the connection prefix).
 */
class ReportMemory implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable;

    /** @var string which measurement the record belongs to */
    public $tag;

    public function __construct($tag = 'x')
    {
        $this->tag = $tag;
    }

    public function handle()
    {
        $status = file_get_contents('/proc/self/status');
        preg_match('/^VmRSS:\s+(\d+)/m', $status, $rss);
        preg_match('/^VmHWM:\s+(\d+)/m', $status, $hwm);
        Redis::rpush('bench:memory', sprintf('%s %d %d', $this->tag, $rss[1] ?? 0, $hwm[1] ?? 0));
    }
}
