<?php

return [

    /*
    |--------------------------------------------------------------------------
    | Default Mailer
    |--------------------------------------------------------------------------
    |
    | The skeleton defaults to 'smtp'; this example defaults to 'array' so
    | that queued mail (App\Mail\Welcome) and mail notifications
    | (App\Notifications\InvoicePaid) run without any SMTP server: the
    | message is built, rendered and "sent" to an in-memory transport.
    | MAIL_MAILER=log writes the messages to the log channel instead.
    |
    | Note: Mail::to(...)->queue($mailable) stores the mailer's name in the
    | queued mailable ($mailable->mailer), so the worker uses the mailer that
    | was the default at dispatch time.
    |
    */

    'default' => env('MAIL_MAILER', 'array'),

    /*
    |--------------------------------------------------------------------------
    | Mailer Configurations
    |--------------------------------------------------------------------------
    */

    'mailers' => [
        'smtp' => [
            'transport' => 'smtp',
            'host' => env('MAIL_HOST', 'smtp.mailgun.org'),
            'port' => env('MAIL_PORT', 587),
            'encryption' => env('MAIL_ENCRYPTION', 'tls'),
            'username' => env('MAIL_USERNAME'),
            'password' => env('MAIL_PASSWORD'),
            'timeout' => null,
            'auth_mode' => null,
        ],

        'sendmail' => [
            'transport' => 'sendmail',
            'path' => '/usr/sbin/sendmail -bs',
        ],

        'log' => [
            'transport' => 'log',
            'channel' => env('MAIL_LOG_CHANNEL'),
        ],

        'array' => [
            'transport' => 'array',
        ],
    ],

    /*
    |--------------------------------------------------------------------------
    | Global "From" Address
    |--------------------------------------------------------------------------
    */

    'from' => [
        'address' => env('MAIL_FROM_ADDRESS', 'hello@example.com'),
        'name' => env('MAIL_FROM_NAME', env('APP_NAME', 'Laravel')),
    ],

    /*
    |--------------------------------------------------------------------------
    | Markdown Mail Settings
    |--------------------------------------------------------------------------
    |
    | MailMessage notifications are rendered with the framework's markdown
    | mail components (Illuminate/Mail/resources/views); there are no
    | published copies under resources/views/vendor/mail.
    |
    */

    'markdown' => [
        'theme' => 'default',

        'paths' => [
            resource_path('views/vendor/mail'),
        ],
    ],

];
