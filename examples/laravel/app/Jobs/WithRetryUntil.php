<?php

namespace App\Jobs;

use App\Support\RunRecorder;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;
use Illuminate\Queue\SerializesModels;

/**
 * A time-limited job: the payload carries "retryUntil" (a unix timestamp
 * five minutes after dispatch) and "maxTries": null.
 */
class WithRetryUntil implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable, SerializesModels;

    public $n;

    public function __construct($n = 1)
    {
        $this->n = $n;
    }

    /**
     * Determine the time at which the job should timeout.
     *
     * @return \DateTime
     */
    public function retryUntil()
    {
        return now()->addMinutes(5);
    }

    public function handle()
    {
        RunRecorder::ran(static::class, $this->job, RunRecorder::publicProps($this));
    }
}
