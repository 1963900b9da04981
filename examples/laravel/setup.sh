#!/bin/sh
# Idempotent setup of the example Laravel application (works from a fresh clone).
#   - creates the storage/ and bootstrap/cache/ directories
#   - creates the sqlite database file (DB_DATABASE, default database/database.sqlite)
#   - runs the migrations (users, failed_jobs tables)
#   - seeds users #1 "Ada" <ada@example.com> and #2 "Grace" <grace@example.com>
#   - pre-compiles the Blade views used by mail notifications
# Needs Debian's php-cli, php-laravel-framework, php-redis and php-sqlite3.
set -eu

cd "$(dirname "$0")"

PHP=${PHP:-php}

mkdir -p storage/app/public \
         storage/framework/cache/data \
         storage/framework/sessions \
         storage/framework/views \
         storage/logs \
         bootstrap/cache \
         database/migrations \
         resources/views

db=${DB_DATABASE:-database/database.sqlite}
if [ "${DB_CONNECTION:-sqlite}" = sqlite ] && [ ! -e "$db" ]; then
    mkdir -p "$(dirname "$db")"
    : > "$db"
fi

"$PHP" artisan migrate --force
"$PHP" artisan db:seed --force
"$PHP" artisan views:warm
