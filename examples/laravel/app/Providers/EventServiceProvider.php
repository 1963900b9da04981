<?php

namespace App\Providers;

use App\Events\PodcastPublished;
use App\Listeners\RecordNotificationSent;
use App\Listeners\SendPodcastNotification;
use App\Listeners\TrackCurrentJob;
use Illuminate\Foundation\Support\Providers\EventServiceProvider as ServiceProvider;
use Illuminate\Notifications\Events\NotificationSent;
use Illuminate\Queue\Events\JobExceptionOccurred;
use Illuminate\Queue\Events\JobFailed;
use Illuminate\Queue\Events\JobProcessed;
use Illuminate\Queue\Events\JobProcessing;

class EventServiceProvider extends ServiceProvider
{
    /**
     * The event listener mappings for the application.
     *
     * @var array
     */
    protected $listen = [
        PodcastPublished::class => [
            SendPodcastNotification::class,
        ],
        NotificationSent::class => [
            RecordNotificationSent::class,
        ],
        JobProcessing::class => [
            TrackCurrentJob::class.'@processing',
        ],
        JobProcessed::class => [
            TrackCurrentJob::class.'@done',
        ],
        JobFailed::class => [
            TrackCurrentJob::class.'@done',
        ],
        JobExceptionOccurred::class => [
            TrackCurrentJob::class.'@done',
        ],
    ];

    /**
     * Register any events for your application.
     *
     * @return void
     */
    public function boot()
    {
        //
    }

    /**
     * Determine if events and listeners should be automatically discovered.
     *
     * @return bool
     */
    public function shouldDiscoverEvents()
    {
        return false;
    }
}
