-- Handler for App\Jobs\Failing: raises, so the job is released or failed by
-- Laravel's rules (--tries, backoff, maxExceptions) and kept in the failed store.
return {
    handle = function(job, command)
        error(command.message or "this job always fails")
    end,
}
