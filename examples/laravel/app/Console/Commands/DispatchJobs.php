<?php

namespace App\Console\Commands;

use App\Models\User;
use Illuminate\Console\Command;
use Illuminate\Queue\Events\JobQueued;
use Illuminate\Queue\Queue as BaseQueue;
use Illuminate\Support\Facades\Bus;
use Illuminate\Support\Facades\Event;
use Illuminate\Support\Facades\Mail;
use Illuminate\Support\Facades\Notification;
use Illuminate\Support\Facades\Queue;
use InvalidArgumentException;

/**
 * Dispatch test jobs.
 *
 *   php artisan jobs:dispatch ProcessPodcast --count=3 --args='{"podcast":"x"}'
 *
 * Prints one line per dispatched payload: "<payload id> <payload uuid>"
 * ("- -" when nothing was pushed, e.g. a unique job whose lock is held).
 */
class DispatchJobs extends Command
{
    protected $signature = 'jobs:dispatch
        {job : Job class under App\Jobs (e.g. Simple), a class name, "chain", "batch", "batch-allow-failures", "batch-callbacks", "event:<Name>", "notification:<Name>", "notification-user:<Name>", "mail:<Name>" or a string job "Class@method"}
        {--count=1 : How many jobs to dispatch}
        {--queue= : Queue name (default: the connection\'s default queue)}
        {--delay= : Delay in seconds}
        {--connection= : Queue connection (default: QUEUE_CONNECTION)}
        {--args= : JSON: constructor arguments (list = positional, object = named), string-job data, or the chain list}';

    protected $description = 'Dispatch test jobs onto the queue, printing "<id> <uuid>" per pushed payload';

    /** @var array uuids of payloads created since the last flush */
    protected $uuids = [];

    /** @var array ids of payloads pushed since the last flush */
    protected $ids = [];

    public function handle()
    {
        $name = $this->argument('job');
        $count = (int) $this->option('count');
        $queue = $this->option('queue');
        $delay = $this->option('delay');
        $delay = ($delay === null || $delay === '') ? null : (int) $delay;
        $connection = $this->option('connection');

        $args = $this->option('args');
        if ($args === null || $args === '') {
            $args = null;
        } else {
            // PHP ints are 64-bit: 9007199254740993 decodes exactly.
            $args = json_decode($args, true, 512, JSON_BIGINT_AS_STRING);
            if (json_last_error() !== JSON_ERROR_NONE) {
                $this->error('--args is not valid JSON: '.json_last_error_msg());

                return 2;
            }
        }

        BaseQueue::createPayloadUsing(function ($connectionName, $queue, $payload) {
            $this->uuids[] = $payload['uuid'] ?? '-';

            return [];
        });

        Event::listen(JobQueued::class, function (JobQueued $event) {
            $this->ids[] = $event->id;
        });

        try {
            $dispatch = $this->dispatcherFor($name, $queue, $delay, $connection);
        } catch (InvalidArgumentException $e) {
            $this->error($e->getMessage());

            return 2;
        }

        $out = fopen('php://stdout', 'w');

        for ($i = 1; $i <= $count; $i++) {
            $this->uuids = $this->ids = [];

            $dispatch($this->substituteIndex($args, $i));

            if (! $this->ids) {
                fwrite($out, "- -\n");
            }
            foreach ($this->ids as $k => $id) {
                fwrite($out, $id.' '.($this->uuids[$k] ?? '-')."\n");
            }
        }

        fclose($out);

        BaseQueue::createPayloadUsing(null);

        return 0;
    }

    /**
     * Build a closure that dispatches one job given the decoded --args.
     */
    protected function dispatcherFor($name, $queue, $delay, $connection)
    {
        // String job: Queue::push('Class@method', $data)
        if (strpos($name, '@') !== false) {
            return function ($data) use ($name, $queue, $delay, $connection) {
                $q = Queue::connection($connection);

                return $delay === null
                    ? $q->push($name, $data ?? '', $queue)
                    : $q->later($delay, $name, $data ?? '', $queue);
            };
        }

        // A chain: --args is a list; each item is a scalar n (=> Simple(n)) or
        // {"job": "<Name>", "args": <args>}. Default: Simple(1), Simple(2), Simple(3).
        if (strtolower($name) === 'chain') {
            return function ($args) use ($queue, $delay, $connection) {
                $jobs = [];
                foreach ($args ?? [1, 2, 3] as $item) {
                    $jobs[] = is_array($item) && isset($item['job'])
                        ? $this->makeJob($this->jobClass($item['job']), $item['args'] ?? null)
                        : $this->makeJob($this->jobClass('Simple'), [$item]);
                }

                $chain = Bus::chain($jobs);
                if ($connection !== null) {
                    $chain->onConnection($connection);
                }
                if ($queue !== null) {
                    $chain->onQueue($queue);
                }
                if ($delay !== null) {
                    $chain->delay($delay);
                }

                $chain->dispatch();
            };
        }

        // A batch (Bus::batch, its row in job_batches): --args is a list of
        // {"job": "<Name>", "args": <args>}; "batch-allow-failures" allows failures,
        // "batch-callbacks" adds then/catch/finally closures. Default: Batched(1..3).
        if (in_array(strtolower($name), ['batch', 'batch-allow-failures', 'batch-callbacks'], true)) {
            $kind = strtolower($name);

            return function ($args) use ($kind, $queue, $connection) {
                $jobs = [];
                foreach ($args ?? [['job' => 'Batched', 'args' => [1]], ['job' => 'Batched', 'args' => [2]],
                    ['job' => 'Batched', 'args' => [3]]] as $item) {
                    $jobs[] = $this->makeJob($this->jobClass($item['job']), $item['args'] ?? null);
                }

                $batch = Bus::batch($jobs)->name('jobs:dispatch');
                if ($kind === 'batch-allow-failures') {
                    $batch->allowFailures();
                }
                if ($kind === 'batch-callbacks') {
                    $batch->then(function () {
                    })->catch(function () {
                    })->finally(function () {
                    });
                }
                if ($connection !== null) {
                    $batch->onConnection($connection);
                }
                if ($queue !== null) {
                    $batch->onQueue($queue);
                }
                $batch->dispatch();
            };
        }

        // An event whose queued listeners get pushed: event:<Name> => App\Events\<Name>
        if (strncmp($name, 'event:', 6) === 0) {
            $class = substr($name, 6);
            $class = class_exists($class) ? $class : 'App\\Events\\'.$class;
            if (! class_exists($class)) {
                throw new InvalidArgumentException("Event class [{$class}] not found.");
            }

            return function ($args) use ($class) {
                event($this->makeJob($class, $args));
            };
        }

        // A queued notification: notification:<Name> => App\Notifications\<Name>,
        // sent to the anonymous mail route ada@example.com;
        // notification-user:<Name> sends it to User #1 (Notifiable).
        // Each (notifiable, channel) pushes one SendQueuedNotifications payload.
        foreach (['notification:' => false, 'notification-user:' => true] as $prefix => $toUser) {
            if (strncmp($name, $prefix, strlen($prefix)) === 0) {
                $class = $this->prefixedClass(substr($name, strlen($prefix)), 'App\\Notifications\\', 'Notification');

                return function ($args) use ($class, $toUser, $queue, $delay, $connection) {
                    $notification = $this->applyQueueOptions($this->makeJob($class, $args), $queue, $delay, $connection);

                    $notifiable = $toUser
                        ? User::findOrFail(1)
                        : Notification::route('mail', 'ada@example.com');

                    $notifiable->notify($notification);
                };
            }
        }

        // A queued mailable: mail:<Name> => App\Mail\<Name>, sent with
        // Mail::to('ada@example.com')->queue(...) (later(...) with --delay):
        // one SendQueuedMailable payload.
        if (strncmp($name, 'mail:', 5) === 0) {
            $class = $this->prefixedClass(substr($name, 5), 'App\\Mail\\', 'Mailable');

            return function ($args) use ($class, $queue, $delay, $connection) {
                $mailable = $this->applyQueueOptions($this->makeJob($class, $args), $queue, null, $connection);
                $pending = Mail::to('ada@example.com');

                $delay === null ? $pending->queue($mailable) : $pending->later($delay, $mailable);
            };
        }

        $class = $this->jobClass($name);

        return function ($args) use ($class, $queue, $delay, $connection) {
            $job = $this->makeJob($class, $args);

            if ($connection !== null) {
                $job->onConnection($connection);
            }
            if ($queue !== null) {
                $job->onQueue($queue);
            }
            if ($delay !== null) {
                $job->delay($delay);
            }

            // The dispatch() helper, exactly as an application would do it:
            // PendingDispatch takes the unique lock for ShouldBeUnique jobs
            // and dispatches from its destructor.
            dispatch($job);
        };
    }

    /**
     * Resolve "<Name>" of a prefixed form (notification:, mail:) to a class:
     * the name itself if it is a class, else $namespace.<Name>.
     */
    protected function prefixedClass($name, $namespace, $what)
    {
        foreach ([$name, $namespace.$name] as $class) {
            if ($name !== '' && class_exists($class)) {
                return $class;
            }
        }

        throw new InvalidArgumentException("{$what} class [{$name}] not found (looked for {$name} and {$namespace}{$name}).");
    }

    /**
     * --connection / --queue / --delay on a Queueable (notification, mailable).
     */
    protected function applyQueueOptions($queueable, $queue, $delay, $connection)
    {
        if ($connection !== null) {
            $queueable->onConnection($connection);
        }
        if ($queue !== null) {
            $queueable->onQueue($queue);
        }
        if ($delay !== null) {
            $queueable->delay($delay);
        }

        return $queueable;
    }

    protected function jobClass($name)
    {
        foreach ([$name, 'App\\Jobs\\'.$name] as $class) {
            if (class_exists($class)) {
                return $class;
            }
        }

        throw new InvalidArgumentException("Job class [{$name}] not found (looked for {$name} and App\\Jobs\\{$name}).");
    }

    protected function makeJob($class, $args)
    {
        if ($args === null) {
            return new $class;
        }

        // A list spreads as positional arguments, a JSON object as named
        // arguments (PHP 8.1+). A scalar is the single first argument.
        return is_array($args) ? new $class(...$args) : new $class($args);
    }

    /**
     * Replace every string value "{i}" in $args by the 1-based job index.
     */
    protected function substituteIndex($args, $i)
    {
        if ($args === '{i}') {
            return $i;
        }

        if (is_array($args)) {
            foreach ($args as $k => $v) {
                $args[$k] = $this->substituteIndex($v, $i);
            }
        }

        return $args;
    }
}
