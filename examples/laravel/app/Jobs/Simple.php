<?php

namespace App\Jobs;

use App\Support\RunRecorder;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;

/**
 * One public property; no SerializesModels, so PHP's plain native
 * serialization is used (no __serialize()).
 */
class Simple implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable;

    public $n;

    public function __construct($n = 1)
    {
        $this->n = $n;
    }

    public function handle()
    {
        RunRecorder::ran(static::class, $this->job, RunRecorder::publicProps($this));
    }
}
