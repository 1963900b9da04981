<?php

namespace App\Notifications;

use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Notifications\Messages\MailMessage;
use Illuminate\Notifications\Notification;

/**
 * A queued mail notification. Sending it pushes one
 * Illuminate\Notifications\SendQueuedNotifications payload per notifiable
 * and channel; the worker renders toMail() with the framework's markdown
 * mail views and sends it through the default mailer (array/log: no SMTP).
 *
 * The run is recorded by App\Listeners\RecordNotificationSent (NotificationSent).
 */
class InvoicePaid extends Notification implements ShouldQueue
{
    use Queueable;

    /** @var float */
    public $amount;

    /** @var string */
    public $invoice;

    public function __construct($amount = 99.5, $invoice = 'INV-0001')
    {
        $this->amount = (float) $amount;
        $this->invoice = $invoice;
    }

    /**
     * Get the notification's delivery channels.
     *
     * @param  mixed  $notifiable
     * @return array
     */
    public function via($notifiable)
    {
        return ['mail'];
    }

    /**
     * Get the mail representation of the notification.
     *
     * @param  mixed  $notifiable
     * @return \Illuminate\Notifications\Messages\MailMessage
     */
    public function toMail($notifiable)
    {
        return (new MailMessage)
            ->subject('Invoice '.$this->invoice.' paid')
            ->line('Invoice '.$this->invoice.' has been paid.')
            ->line('Amount: '.number_format($this->amount, 2));
    }
}
