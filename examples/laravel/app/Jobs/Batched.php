<?php

namespace App\Jobs;

use App\Support\RunRecorder;
use Illuminate\Bus\Batchable;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;

/**
 * A job of a Bus::batch (Batchable): records the run, then throws when $fail. As
 * Laravel 8 runs the jobs of a cancelled batch, the job itself checks.
 */
class Batched implements ShouldQueue
{
    use Batchable, Dispatchable, InteractsWithQueue, Queueable;

    public $n;

    public $fail;

    public function __construct($n = 1, $fail = false)
    {
        $this->n = $n;
        $this->fail = $fail;
    }

    public function handle()
    {
        RunRecorder::ran(static::class, $this->job, RunRecorder::publicProps($this));
        if ($this->fail) {
            throw new \RuntimeException("batched job {$this->n} failed");
        }
    }
}
