<?php

namespace App\Models;

use Illuminate\Database\Eloquent\Model;
use Illuminate\Notifications\Notifiable;

/**
 * A minimal user (table "users": id, name, email, timestamps).
 *
 * setup.sh seeds #1 "Ada" <ada@example.com> and #2 "Grace" <grace@example.com>
 * (Database\Seeders\DatabaseSeeder). Notifiable: User::find(1)->notify(...)
 * routes mail to $user->email.
 */
class User extends Model
{
    use Notifiable;

    /**
     * The attributes that are mass assignable.
     *
     * @var array
     */
    protected $fillable = [
        'name',
        'email',
    ];
}
