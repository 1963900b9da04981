<?php

namespace App\Listeners;

use App\Notifications\InvoicePaid;
use App\Support\RunRecorder;
use Illuminate\Notifications\Events\NotificationSent;

/**
 * Records a run when App\Notifications\InvoicePaid has been sent on a
 * channel (synchronous listener, not queued): class = the notification
 * class, props = its own public properties (amount, invoice); uuid / id /
 * queue / attempts come from the SendQueuedNotifications queue job being
 * processed (RunRecorder::$currentJob).
 */
class RecordNotificationSent
{
    public function handle(NotificationSent $event)
    {
        if (! $event->notification instanceof InvoicePaid) {
            return;
        }

        RunRecorder::ran(
            get_class($event->notification),
            RunRecorder::$currentJob,
            RunRecorder::declaredPublicProps($event->notification)
        );
    }
}
