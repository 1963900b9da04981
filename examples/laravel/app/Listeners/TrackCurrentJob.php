<?php

namespace App\Listeners;

use App\Support\RunRecorder;

/**
 * Keeps RunRecorder::$currentJob pointing at the queue job the worker is
 * processing (synchronous listener, not queued).
 */
class TrackCurrentJob
{
    /**
     * @param  \Illuminate\Queue\Events\JobProcessing  $event
     */
    public function processing($event)
    {
        RunRecorder::$currentJob = $event->job;
    }

    /**
     * @param  \Illuminate\Queue\Events\JobProcessed|\Illuminate\Queue\Events\JobFailed|\Illuminate\Queue\Events\JobExceptionOccurred  $event
     */
    public function done($event)
    {
        RunRecorder::$currentJob = null;
    }
}
