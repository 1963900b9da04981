<?php

return [

    /*
    |--------------------------------------------------------------------------
    | View Storage Paths
    |--------------------------------------------------------------------------
    |
    | resources/views holds the plain-text view of App\Mail\Welcome
    | (emails/welcome_plain.php, a plain PHP view: no Blade compilation).
    |
    */

    'paths' => [
        resource_path('views'),
    ],

    /*
    |--------------------------------------------------------------------------
    | Compiled View Path
    |--------------------------------------------------------------------------
    |
    | Blade views (the framework's notification / markdown mail views) are
    | compiled into storage/framework/views. setup.sh pre-compiles them
    | (php artisan views:warm) so that concurrent workers do not race to
    | compile them on their first notification.
    |
    */

    'compiled' => env('VIEW_COMPILED_PATH', storage_path('framework/views')),

];
