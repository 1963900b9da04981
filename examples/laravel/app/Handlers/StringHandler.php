<?php

namespace App\Handlers;

use App\Support\RunRecorder;
use RuntimeException;

/**
 * Handler for "string" jobs: Queue::push('App\Handlers\StringHandler@handle', $data).
 * Laravel calls handle($job, $data) directly; such handlers must delete
 * (or release) the job themselves.
 *
 * If $data is an array with a truthy "fail" key, it throws instead of deleting.
 */
class StringHandler
{
    public function handle($job, $data)
    {
        RunRecorder::ran(static::class, $job, is_array($data) ? $data : ['data' => $data]);

        if (is_array($data) && ! empty($data['fail'])) {
            throw new RuntimeException('StringHandler asked to fail');
        }

        $job->delete();
    }
}
