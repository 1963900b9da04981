<?php

namespace App\Jobs;

use App\Support\RunRecorder;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldBeEncrypted;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;
use Illuminate\Queue\SerializesModels;

/**
 * An encrypted job: data.command in the payload is
 * Crypt::encrypt(serialize($job)) with APP_KEY (AES-256-CBC).
 */
class Secret implements ShouldQueue, ShouldBeEncrypted
{
    use Dispatchable, InteractsWithQueue, Queueable, SerializesModels;

    public $n;

    public $secret;

    public function __construct($n = 1, $secret = 'top secret')
    {
        $this->n = $n;
        $this->secret = $secret;
    }

    public function handle()
    {
        RunRecorder::ran(static::class, $this->job, RunRecorder::publicProps($this));
    }
}
