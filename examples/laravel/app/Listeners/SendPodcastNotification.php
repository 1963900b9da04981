<?php

namespace App\Listeners;

use App\Events\PodcastPublished;
use App\Support\RunRecorder;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Queue\InteractsWithQueue;

/**
 * A queued event listener: the payload's data.commandName is
 * Illuminate\Events\CallQueuedListener, wrapping the PodcastPublished event.
 */
class SendPodcastNotification implements ShouldQueue
{
    use InteractsWithQueue;

    /**
     * Handle the event.
     *
     * @param  \App\Events\PodcastPublished  $event
     * @return void
     */
    public function handle(PodcastPublished $event)
    {
        RunRecorder::ran(static::class, $this->job, RunRecorder::publicProps($event));
    }
}
