<?php
/*
 * Pushes App\Jobs\Timed jobs one at a time, as the Laravel app in
 * examples/laravel does (dispatch()), for examples/bench/bench.sh:
 *
 *   php examples/bench/push_timed.php TAG COUNT [delayed]
 *
 * Before each push it pauses a random 10-100 ms. Each job carries TAG and
 * pushedAt, Redis TIME in microseconds read just before dispatch (the same
 * clock the handlers read). With "delayed", job i is dispatched with a delay
 * of 1 + (i-1) mod 3 seconds and carries dueAt, the second Laravel scores it
 * with in :delayed (time() + delay: Laravel's availableAt()); pushes are kept
 * away from the end of a second so that time() cannot change during dispatch.
 */

require __DIR__.'/../laravel/bootstrap/autoload.php';
$app = require __DIR__.'/../laravel/bootstrap/app.php';
$app->make(Illuminate\Contracts\Console\Kernel::class)->bootstrap();

use App\Jobs\Timed;
use Illuminate\Support\Facades\Redis;

[$tag, $count] = [$argv[1] ?? 'x', (int) ($argv[2] ?? 1)];
$delayed = ($argv[3] ?? '') === 'delayed';

for ($i = 1; $i <= $count; $i++) {
    usleep(random_int(10000, 100000));

    $delay = null;
    $dueAt = null;
    if ($delayed) {
        $delay = 1 + ($i - 1) % 3;
        $frac = microtime(true) - time();
        if ($frac > 0.9) {
            usleep((int) ((1.0 - $frac) * 1e6) + 2000);
        }
        $second = time();
        $dueAt = $second + $delay;
    }

    [$sec, $usec] = Redis::time();
    $job = new Timed($tag, (int) $sec * 1000000 + (int) $usec, $dueAt);
    if ($delay !== null) {
        $job->delay($delay);
    }
    dispatch($job);

    if ($delayed && time() !== $second) {
        fwrite(STDERR, "push_timed: job $i crossed a second boundary; its dueAt may be off by 1 s\n");
    }
}
