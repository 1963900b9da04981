<?php

namespace App\Jobs;

use App\Support\RunRecorder;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;
use Illuminate\Queue\SerializesModels;

/**
 * Records the run, then releases itself back onto the queue (with
 * $releaseDelay seconds delay) while attempts() <= $releaseTimes; the
 * attempt after that completes normally.
 */
class Releasing implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable, SerializesModels;

    public $tries = 5;

    public $n;

    public $releaseDelay;

    public $releaseTimes;

    public function __construct($n = 1, $releaseDelay = 0, $releaseTimes = 1)
    {
        $this->n = $n;
        $this->releaseDelay = $releaseDelay;
        $this->releaseTimes = $releaseTimes;
    }

    public function handle()
    {
        RunRecorder::ran(static::class, $this->job, RunRecorder::publicProps($this));

        if ($this->attempts() <= $this->releaseTimes) {
            $this->release($this->releaseDelay);
        }
    }
}
