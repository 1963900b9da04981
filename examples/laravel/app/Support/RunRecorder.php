<?php

namespace App\Support;

use Illuminate\Support\Facades\Redis;
use ReflectionClass;
use ReflectionProperty;

/**
 * Records that a handler ran, so tests can compare PHP and Lua runs.
 *
 * Each run RPUSHes one JSON string onto the Redis list "luaworker:ran"
 * through the Redis facade, i.e. on the 'default' redis connection and with
 * its prefix applied (by default the real key is "laravel_database_luaworker:ran"
 * in REDIS_DB). See README.md for the exact format.
 */
class RunRecorder
{
    /** Redis list (before the connection prefix) that receives run records. */
    const RAN_KEY = 'luaworker:ran';

    /** Redis list (before the connection prefix) that receives failed() records. */
    const FAILED_KEY = 'luaworker:failed';

    const JSON_FLAGS = JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE
        | JSON_PRESERVE_ZERO_FRACTION | JSON_THROW_ON_ERROR;

    /**
     * Queue-control properties that are not part of a job's "data".
     */
    const CONTROL_PROPERTIES = [
        'tries', 'maxExceptions', 'timeout', 'backoff', 'retryAfter',
        'failOnTimeout', 'deleteWhenMissingModels', 'uniqueFor',
        'shouldBeEncrypted', 'afterCommit',
    ];

    /**
     * The queue job being processed by this worker (set on JobProcessing,
     * cleared on JobProcessed / JobFailed / JobExceptionOccurred by
     * App\Listeners\TrackCurrentJob). Lets handlers that have no $this->job
     * (a notification's channel, a mailable's build()) record the run.
     *
     * @var \Illuminate\Contracts\Queue\Job|null
     */
    public static $currentJob = null;

    /**
     * Record a run.
     *
     * @param  string  $class  the handler class (job class, listener class, string-job class)
     * @param  \Illuminate\Contracts\Queue\Job|null  $job  the queue job being processed
     * @param  array  $props  the values to record under "props"
     * @return string  the JSON that was pushed
     */
    public static function ran(string $class, $job, array $props): string
    {
        $record = [
            'runner' => 'php',
            'class' => $class,
            'uuid' => $job ? $job->uuid() : null,
            'id' => $job ? $job->getJobId() : null,
            'queue' => $job ? $job->getQueue() : null,
            'attempts' => $job ? $job->attempts() : null,
            'props' => (object) $props,
        ];

        $json = json_encode($record, self::JSON_FLAGS);

        Redis::rpush(self::RAN_KEY, $json);

        return $json;
    }

    /**
     * Record a failed() callback.
     */
    public static function failed(string $class, array $props, $e): string
    {
        $json = json_encode([
            'runner' => 'php',
            'class' => $class,
            'exception' => $e ? get_class($e) : null,
            'message' => $e ? $e->getMessage() : null,
            'props' => (object) $props,
        ], self::JSON_FLAGS);

        Redis::rpush(self::FAILED_KEY, $json);

        return $json;
    }

    /**
     * The public, non-static properties declared by the object's own class
     * (and its parents), in declaration order, excluding properties that come
     * from traits (job, connection, queue, delay, chained, ...) and the
     * queue-control properties listed in CONTROL_PROPERTIES.
     */
    public static function publicProps($object): array
    {
        $ref = new ReflectionClass($object);

        $fromTraits = [];
        foreach (self::allTraits($ref) as $trait) {
            foreach ($trait->getProperties() as $p) {
                $fromTraits[$p->getName()] = true;
            }
        }

        $props = [];
        foreach ($ref->getProperties(ReflectionProperty::IS_PUBLIC) as $p) {
            $name = $p->getName();

            if ($p->isStatic() || isset($fromTraits[$name])
                || in_array($name, self::CONTROL_PROPERTIES, true)
                || ! $p->isInitialized($object)) {
                continue;
            }

            $props[$name] = $p->getValue($object);
        }

        return $props;
    }

    /**
     * Like publicProps(), but only the properties declared by the object's
     * own class (not by its parents): for classes extending a framework base
     * class with public properties of its own (Notification: id, locale;
     * Mailable: to, from, subject, view, ...).
     */
    public static function declaredPublicProps($object): array
    {
        $class = get_class($object);

        return array_filter(self::publicProps($object), function ($name) use ($class) {
            return (new ReflectionProperty($class, $name))->getDeclaringClass()->getName() === $class;
        }, ARRAY_FILTER_USE_KEY);
    }

    private static function allTraits(ReflectionClass $ref): array
    {
        $traits = [];

        for ($c = $ref; $c; $c = $c->getParentClass()) {
            foreach ($c->getTraits() as $t) {
                $traits[] = $t;
                foreach (self::allTraits($t) as $tt) {
                    $traits[] = $tt;
                }
            }
        }

        return $traits;
    }
}
