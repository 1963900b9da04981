<?php

namespace App\Mail;

use App\Support\RunRecorder;
use Illuminate\Bus\Queueable;
use Illuminate\Mail\Mailable;
use Illuminate\Queue\SerializesModels;

/**
 * A queued mailable: Mail::to('ada@example.com')->queue(new Welcome('Ada'))
 * pushes an Illuminate\Mail\SendQueuedMailable payload. The worker calls
 * build() (which records the run) and sends a plain-text message rendered
 * from resources/views/emails/welcome_plain.php (a plain PHP view).
 */
class Welcome extends Mailable
{
    use Queueable, SerializesModels;

    /** @var string */
    public $name;

    public function __construct($name = 'Ada')
    {
        $this->name = $name;
    }

    /**
     * Build the message.
     *
     * @return $this
     */
    public function build()
    {
        RunRecorder::ran(static::class, RunRecorder::$currentJob, RunRecorder::declaredPublicProps($this));

        return $this->subject('Welcome, '.$this->name)
            ->text('emails.welcome_plain');
    }
}
