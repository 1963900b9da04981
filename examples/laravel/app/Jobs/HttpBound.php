<?php

namespace App\Jobs;

use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;
use Illuminate\Support\Facades\Http;
use Illuminate\Support\Facades\Redis;

/**
 * Benchmark job (examples/bench): fetches $url with Laravel's Http client (the
 * bench's server answers after 50 ms), then INCRs "bench:http" (with the
 * connection prefix). A job that waits on an HTTP API.
 */
class HttpBound implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable;

    /** @var string the URL to fetch */
    public $url;

    public function __construct($url = 'http://127.0.0.1/')
    {
        $this->url = $url;
    }

    public function handle()
    {
        Http::get($this->url)->throw();
        Redis::incr('bench:http');
    }
}
