<?php

use Illuminate\Support\Str;

// A Redis Cluster, when REDIS_CLUSTER_NODES (luaworker's variable) lists its seeds as
// host:port,host:port: Laravel then reaches the 'default' and 'cache' connections
// through the cluster (phpredis' RedisCluster), database 0.
$clusterNodes = array_map(function ($node) {
    [$host, $port] = explode(':', $node);
    return ['host' => $host, 'port' => $port, 'password' => env('REDIS_PASSWORD', null)];
}, array_filter(explode(',', (string) env('REDIS_CLUSTER_NODES', ''))));

return [

    /*
    |--------------------------------------------------------------------------
    | Default Database Connection Name
    |--------------------------------------------------------------------------
    |
    | Used for the failed_jobs table (and by the bench's SqlBound job). The
    | skeleton defaults to mysql; this example defaults to sqlite at
    | database/database.sqlite.
    |
    */

    'default' => env('DB_CONNECTION', 'sqlite'),

    /*
    |--------------------------------------------------------------------------
    | Database Connections
    |--------------------------------------------------------------------------
    */

    'connections' => [

        'sqlite' => [
            'driver' => 'sqlite',
            'url' => env('DATABASE_URL'),
            'database' => env('DB_DATABASE', database_path('database.sqlite')),
            'prefix' => '',
            'foreign_key_constraints' => env('DB_FOREIGN_KEYS', true),
        ],

        // as the Laravel 8 skeleton has it (make bench's SQL-bound jobs use it)
        'mysql' => [
            'driver' => 'mysql',
            'url' => env('DATABASE_URL'),
            'host' => env('DB_HOST', '127.0.0.1'),
            'port' => env('DB_PORT', '3306'),
            'database' => env('DB_DATABASE', 'forge'),
            'username' => env('DB_USERNAME', 'forge'),
            'password' => env('DB_PASSWORD', ''),
            'unix_socket' => env('DB_SOCKET', ''),
            'charset' => 'utf8mb4',
            'collation' => 'utf8mb4_unicode_ci',
            'prefix' => '',
            'prefix_indexes' => true,
            'strict' => true,
            'engine' => null,
            'options' => extension_loaded('pdo_mysql') ? array_filter([
                PDO::MYSQL_ATTR_SSL_CA => env('MYSQL_ATTR_SSL_CA'),
            ]) : [],
        ],

        // as the Laravel 8 skeleton has it (the database queue's specs use it)
        'pgsql' => [
            'driver' => 'pgsql',
            'url' => env('DATABASE_URL'),
            'host' => env('DB_HOST', '127.0.0.1'),
            'port' => env('DB_PORT', '5432'),
            'database' => env('DB_DATABASE', 'forge'),
            'username' => env('DB_USERNAME', 'forge'),
            'password' => env('DB_PASSWORD', ''),
            'charset' => 'utf8',
            'prefix' => '',
            'prefix_indexes' => true,
            'schema' => 'public',
            'sslmode' => 'prefer',
        ],

    ],

    /*
    |--------------------------------------------------------------------------
    | Migration Repository Table
    |--------------------------------------------------------------------------
    */

    'migrations' => 'migrations',

    /*
    |--------------------------------------------------------------------------
    | Redis Databases
    |--------------------------------------------------------------------------
    */

    'redis' => [

        'client' => env('REDIS_CLIENT', 'phpredis'),

        'options' => [
            'cluster' => env('REDIS_CLUSTER', 'redis'),
            'prefix' => env('REDIS_PREFIX', Str::slug(env('APP_NAME', 'laravel'), '_').'_database_'),
        ],

    ] + ($clusterNodes ? [
        'clusters' => ['default' => $clusterNodes, 'cache' => $clusterNodes],
    ] : [
        'default' => [
            'url' => env('REDIS_URL'),
            'host' => env('REDIS_HOST', '127.0.0.1'),
            'password' => env('REDIS_PASSWORD', null),
            'port' => env('REDIS_PORT', '6379'),
            'database' => env('REDIS_DB', '0'),
            // TLS (REDIS_SCHEME=tls), and the CA that luaworker's variable names: phpredis
            // takes it as a stream context; without one, PHP's default CA paths
            'scheme' => env('REDIS_SCHEME'),
            'context' => env('LUAWORKER_REDIS_CA_FILE')
                ? ['stream' => ['cafile' => env('LUAWORKER_REDIS_CA_FILE')]] : null,
        ],

        'cache' => [
            'url' => env('REDIS_URL'),
            'host' => env('REDIS_HOST', '127.0.0.1'),
            'password' => env('REDIS_PASSWORD', null),
            'port' => env('REDIS_PORT', '6379'),
            'database' => env('REDIS_CACHE_DB', '1'),
            // TLS (REDIS_SCHEME=tls), and the CA that luaworker's variable names: phpredis
            // takes it as a stream context; without one, PHP's default CA paths
            'scheme' => env('REDIS_SCHEME'),
            'context' => env('LUAWORKER_REDIS_CA_FILE')
                ? ['stream' => ['cafile' => env('LUAWORKER_REDIS_CA_FILE')]] : null,
        ],

    ]),

];
