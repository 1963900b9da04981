<?php

namespace App\Jobs;

use App\Models\User;
use App\Support\RunRecorder;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Database\Eloquent\Collection;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;
use Illuminate\Queue\SerializesModels;

/**
 * A job carrying Eloquent models: SerializesModels stores $user and $users
 * as Illuminate\Contracts\Database\ModelIdentifier objects (class, id,
 * relations, connection) and the worker re-loads them from the database.
 */
class WithModel implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable, SerializesModels;

    /** @var \App\Models\User  a single model (default: User #1) */
    public $user;

    /** @var \Illuminate\Database\Eloquent\Collection  users (default: #1 and #2) */
    public $users;

    /** @var string */
    public $note;

    /**
     * @param  \App\Models\User|int|null  $user  a model or an id (default 1)
     * @param  \Illuminate\Database\Eloquent\Collection|array|null  $users  a collection or a list of ids (default [1, 2])
     * @param  string  $note
     */
    public function __construct($user = null, $users = null, $note = 'with models')
    {
        $this->user = $user instanceof User ? $user : User::findOrFail($user ?? 1);
        $this->users = $users instanceof Collection
            ? $users
            : User::whereIn('id', $users ?? [1, 2])->orderBy('id')->get();
        $this->note = $note;
    }

    public function handle()
    {
        RunRecorder::ran(static::class, $this->job, [
            'user' => $this->user->getKey(),
            'users' => $this->users->modelKeys(),
            'note' => $this->note,
        ]);
    }
}
