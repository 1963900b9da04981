<?php

namespace App\Jobs;

use App\Support\RunRecorder;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldBeUnique;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;
use Illuminate\Queue\SerializesModels;

/**
 * A unique job: dispatching takes the cache lock
 * "laravel_unique_job:App\Jobs\Uniq{uniqueId}" for $uniqueFor seconds; the
 * worker releases it when the job completes (or fails).
 */
class Uniq implements ShouldQueue, ShouldBeUnique
{
    use Dispatchable, InteractsWithQueue, Queueable, SerializesModels;

    /** The number of seconds after which the job's unique lock will be released. */
    public $uniqueFor = 3600;

    /** The unique ID of the job (read as a property by Laravel). */
    public $uniqueId;

    public $n;

    public function __construct($n = 1, $uniqueId = 'uniq-1')
    {
        $this->n = $n;
        $this->uniqueId = $uniqueId;
    }

    public function handle()
    {
        RunRecorder::ran(static::class, $this->job, RunRecorder::publicProps($this));
    }
}
