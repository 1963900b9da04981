<?php

namespace App\Events;

use Illuminate\Foundation\Events\Dispatchable;
use Illuminate\Queue\SerializesModels;

class PodcastPublished
{
    use Dispatchable, SerializesModels;

    public $title;

    public $episode;

    public function __construct($title = 'My Podcast', $episode = 1)
    {
        $this->title = $title;
        $this->episode = $episode;
    }
}
