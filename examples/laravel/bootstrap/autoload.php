<?php

/*
|--------------------------------------------------------------------------
| Autoloader (replaces Composer's vendor/autoload.php)
|--------------------------------------------------------------------------
|
| The framework and its dependencies come from Debian's packages
| (php-laravel-framework & friends), which install their own autoload.php
| files under /usr/share/php. Illuminate/autoload.php pulls in every
| dependency autoloader (Symfony, Carbon, Monolog, Dotenv, ...) and the
| helper function files. The application itself is loaded with a tiny
| PSR-4 loader mapping App\ to app/ (and Database\ to database/).
|
*/

$debianShare = getenv('LARAVEL_DEBIAN_PHP_DIR') ?: '/usr/share/php';

if (! is_file($debianShare.'/Illuminate/autoload.php')) {
    fwrite(STDERR, "Laravel framework not found at {$debianShare}/Illuminate/autoload.php\n"
        ."Install Debian's php-laravel-framework package (apt-get install php-laravel-framework).\n");
    exit(1);
}

// The Debian autoloaders use include-path relative require_once's.
if (strpos(get_include_path(), $debianShare) === false) {
    set_include_path(get_include_path().PATH_SEPARATOR.$debianShare);
}

require_once $debianShare.'/Illuminate/autoload.php';
// Guzzle, for the Http client (php-guzzlehttp-guzzle: Laravel only suggests it)
if (is_file($debianShare.'/GuzzleHttp/autoload.php')) {
    require_once $debianShare.'/GuzzleHttp/autoload.php';
}

spl_autoload_register(function ($class) {
    static $map = null;

    if ($map === null) {
        $base = dirname(__DIR__);
        $map = [
            'App\\' => $base.'/app/',
            'Database\\Factories\\' => $base.'/database/factories/',
            'Database\\Seeders\\' => $base.'/database/seeders/',
        ];
    }

    foreach ($map as $prefix => $dir) {
        if (strncmp($class, $prefix, strlen($prefix)) === 0) {
            $file = $dir.str_replace('\\', '/', substr($class, strlen($prefix))).'.php';

            if (is_file($file)) {
                require $file;
            }

            return;
        }
    }
});
