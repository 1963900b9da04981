<?php

namespace App\Jobs;

use App\Support\RunRecorder;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;
use Illuminate\Queue\SerializesModels;

/**
 * The "kitchen sink" job: queue options plus properties of every
 * visibility and of every scalar / array type PHP serializes.
 */
class ProcessPodcast implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable, SerializesModels;

    /** The number of times the job may be attempted. */
    public $tries = 3;

    /** The maximum number of unhandled exceptions to allow before failing. */
    public $maxExceptions = 2;

    /** The number of seconds the job can run before timing out. */
    public $timeout = 30;

    /** Seconds to wait before retrying: after the 1st, 2nd, 3rd failure. */
    public $backoff = [1, 5, 10];

    /** A public property (string). */
    public $podcast;

    /** A protected property (int) - serialized as "\0*\0episode". */
    protected $episode;

    /** A private property (string) - serialized as "\0App\Jobs\ProcessPodcast\0secret". */
    private $secret;

    /** A nested array: lists and maps. */
    public $meta;

    /** Always null by default. */
    public $nothing;

    /** A bool. */
    public $published;

    /** A float. */
    public $rating;

    /** An integer beyond 2^53 (not representable as a double). */
    public $bigId;

    /** A UTF-8 string with '/' and non-ASCII characters. */
    public $title;

    public function __construct(
        $podcast = 'My Podcast',
        $episode = 42,
        $secret = 's3cr3t',
        $meta = null,
        $nothing = null,
        $published = true,
        $rating = 4.75,
        $bigId = 9007199254740993,
        $title = 'Café/Crème — 日本語 🎙'
    ) {
        $this->podcast = $podcast;
        $this->episode = $episode;
        $this->secret = $secret;
        $this->meta = $meta ?? [
            'tags' => ['php', 'lua', 'redis'],
            'stats' => ['plays' => 1200, 'ratio' => 0.5, 'live' => false],
            'nested' => ['list' => [1, 'two', 3.0, null], 'map' => ['a' => ['b' => 'c']]],
            'empty' => [],
        ];
        $this->nothing = $nothing;
        $this->published = $published;
        $this->rating = $rating;
        $this->bigId = $bigId;
        $this->title = $title;
    }

    public function getEpisode()
    {
        return $this->episode;
    }

    public function getSecret()
    {
        return $this->secret;
    }

    /**
     * Execute the job.
     *
     * @return void
     */
    public function handle()
    {
        RunRecorder::ran(static::class, $this->job, RunRecorder::publicProps($this));
    }
}
