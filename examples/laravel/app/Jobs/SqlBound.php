<?php

namespace App\Jobs;

use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;
use Illuminate\Support\Facades\DB;
use Illuminate\Support\Facades\Redis;

/**
 * Benchmark job (examples/bench): inserts a row into bench_rows (the job's uuid
 * and a note) on the default database connection, reads it back by its uuid,
 * then INCRs "bench:sql" (with the connection prefix). A job that works on the
 * application's database.
 */
class SqlBound implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable;

    public function handle()
    {
        $uuid = $this->job->uuid();
        DB::insert('insert into bench_rows (uuid, note) values (?, ?)', [$uuid, 'written by a job']);
        $row = DB::select('select id, uuid, note from bench_rows where uuid = ?', [$uuid])[0] ?? null;
        if ($row === null || $row->note !== 'written by a job') {
            throw new \RuntimeException("row of job $uuid not read back");
        }
        Redis::incr('bench:sql');
    }
}
