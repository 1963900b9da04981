<?php

namespace Database\Seeders;

use App\Models\User;
use Illuminate\Database\Seeder;

/**
 * Idempotent: makes sure users #1 and #2 exist with these names / emails
 * (run by setup.sh: php artisan db:seed --force).
 */
class DatabaseSeeder extends Seeder
{
    const USERS = [
        1 => ['name' => 'Ada', 'email' => 'ada@example.com'],
        2 => ['name' => 'Grace', 'email' => 'grace@example.com'],
    ];

    /**
     * Seed the application's database.
     *
     * @return void
     */
    public function run()
    {
        foreach (self::USERS as $id => $attributes) {
            $user = User::find($id) ?? tap(new User, function ($user) use ($id) {
                $user->id = $id;
            });

            // Only writes (and touches updated_at) when something differs.
            $user->fill($attributes)->save();
        }
    }
}
