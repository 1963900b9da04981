<?php

namespace App\Jobs;

use App\Support\RunRecorder;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;
use Illuminate\Queue\SerializesModels;
use RuntimeException;
use Throwable;

/**
 * Records the run, then throws RuntimeException($message). No $tries, so the
 * worker's --tries (default 1) decides when it is failed; failed() records
 * onto the "luaworker:failed" list.
 */
class Failing implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable, SerializesModels;

    public $n;

    public $message;

    public function __construct($n = 1, $message = 'Failing job failed')
    {
        $this->n = $n;
        $this->message = $message;
    }

    public function handle()
    {
        RunRecorder::ran(static::class, $this->job, RunRecorder::publicProps($this));

        throw new RuntimeException($this->message);
    }

    /**
     * Handle a job failure.
     *
     * @param  \Throwable  $exception
     * @return void
     */
    public function failed(Throwable $exception)
    {
        RunRecorder::failed(static::class, RunRecorder::publicProps($this), $exception);
    }
}
