-- luaworker.worker.process: Laravel's Worker::process for one job: the "already exceeds"
-- check, the handler (through call_queued_handler), and on an error
-- handleJobException: the maxTries / retryUntil / maxExceptions rules, then the
-- release with the backoff. And the timeout rules for a job that ran past its
-- timeout. Laravel's source: Illuminate/Queue/Worker.php (process, handleJobException).
local host = require "luaworker.host"
local redis = require "luaworker.redis"
local cache = require "luaworker.queue.cache"
local task = require "luaworker.loop.task"
local events = require "luaworker.base.events"
local output = require "luaworker.worker.output"
local failing = require "luaworker.worker.fail"
local call_queued_handler = require "luaworker.worker.call_queued_handler"
local settings = require "luaworker.base.settings"
local horizon = require "luaworker.queue.horizon"
local values = require "luaworker.base.values"

local M = {}

local function to_integer(v)
    -- PHP's (int) cast of a backoff entry: leading digits, else 0.
    local n = tostring(v):match("^%s*([+-]?%d+)")
    return n and tonumber(n) or 0
end

local function split(s, sep)
    local parts = {}
    for part in (s .. sep):gmatch("(.-)" .. sep) do parts[#parts + 1] = part end
    return parts
end
M.split = split

local function max_tries_of(job)
    local t = job:max_tries()
    if t == nil then return settings.options.tries end
    return tonumber(t) or settings.options.tries
end

-- retryUntil as Laravel tests it (null and 0 are "none").
local function retry_until_of(job)
    local r = tonumber(job:retry_until())
    if r == 0 then return nil end
    return r
end

-- Before running: fail the job if it already used up its attempts or its time.
local function fail_if_already_exceeds(job)
    local max_tries, retry_until = max_tries_of(job), retry_until_of(job)
    if retry_until and host.now() <= retry_until then return end
    if not retry_until and (max_tries == 0 or job:attempts() <= max_tries) then return end
    local e = failing.max_attempts_exception(job)
    failing.fail(job, e, "")
    error(e, 0)
end

-- After an error: fail the job when this was its last attempt.
local function fail_if_will_exceed_max_attempts(job, exc)
    local max_tries, retry_until = max_tries_of(job), retry_until_of(job)
    if retry_until and retry_until <= host.now() then
        failing.fail(job, exc.value, exc.text)
    end
    if not retry_until and max_tries > 0 and job:attempts() >= max_tries then
        failing.fail(job, exc.value, exc.text)
    end
end

-- After an error: count it in the cache store (key job-exceptions:<uuid>, shared
-- with PHP workers; a fake job's form counts its own) and fail the job when it
-- reaches maxExceptions. The counter's commands are not sent twice: a lost
-- connection leaves the job to retry_after.
local function fail_if_will_exceed_max_exceptions(job, exc)
    local uuid, max_exceptions = job:uuid(), tonumber(job:max_exceptions())
    if uuid == nil or max_exceptions == nil then return end
    local store = job.form.cache or cache
    if max_exceptions <= store.count_exception(uuid) then
        store.forget_exceptions(uuid)
        failing.fail(job, exc.value, exc.text)
    end
end

-- Seconds until the released job is due. A negative backoff is due at once (as
-- Laravel's release with a past time).
local function backoff_for(job)
    local source = job:backoff()
    if source == nil then source = settings.options.effective_backoff end
    local list = split(tostring(source), ",")
    return math.max(0, to_integer(list[job:attempts()] or list[#list]))
end

-- Worker::handleJobException: the fail checks, then the automatic release.
-- Raises what Redis raises (the caller logs it; the job then stays reserved and
-- comes back after retry_after, as with PHP).
local function handle_job_exception(job, exc, started)
    if not job:has_failed() then
        fail_if_will_exceed_max_attempts(job, exc)
        fail_if_will_exceed_max_exceptions(job, exc)
    end
    events.fire_safely("exception_occurred", job, exc)
    if not job:is_deleted() and not job:is_released() and not job:has_failed() then
        local delay = backoff_for(job)
        job:release(delay)
        events.fire_safely("released_after_exception", job, exc, { backoff = delay })
        output.job("released_after_exception", job, exc, host.clock() - started)
        output.error(string.format("%s (attempt %s) raised; released, available again in %ds: %s",
            output.job_name(job), job:attempts(), delay, exc.text), job)
    else
        output.error(string.format("%s (attempt %s) %s: %s", output.job_name(job), job:attempts(),
            (exc.class == failing.MAX_ATTEMPTS_EXCEPTION or exc.class == failing.TIMEOUT_EXCEEDED_EXCEPTION)
                and "failed" or "raised", exc.text), job)
    end
end

-- The part of Worker::process that raises what the job raises.
local function run_job(job, started)
    output.job("starting", job)
    events.fire("before", job)
    fail_if_already_exceeds(job)
    if not job:is_deleted() then call_queued_handler.call(job) end
    events.fire("after", job)
    host.count_job(job:queue(), job:name(), "processed")
    output.job("success", job, nil, host.clock() - started)
    if job:is_released() and not job:is_deleted() then events.fire("released", job) end
end

-- Worker::process for one job, in a task of its own (luaworker.in_flight keeps its
-- timeout). Its start is recorded in Redis first (a job killed from here on is one
-- that ran: it stays reserved, by Laravel's rules). Once the job's code has
-- returned or raised, job.settling is set: what is left writes its outcome.
-- Returns true when the job's code returned, false and the error's
-- exception_info when it raised; nothing when the job did not start.
function M.process(job)
    local started = host.clock()
    if not job.form.start(job) then return end
    horizon.record("reserved", job)
    -- started first: a worker that stops meanwhile (past --memory, say) must not
    -- give back a job whose failure is on its way
    if job.undecodable then
        local exc = values.exception("JsonException", "payload cannot be decoded: " .. job.undecodable)
        failing.fail(job, exc, "")
        return false, failing.exception_info(exc, "")
    end
    local ok, err, trace = task.run(run_job, job, started)
    job.settling = true
    host.count_attempt(job:queue(), job:name(), host.clock() - started)
    local exc = not ok and failing.exception_info(err, trace) or nil
    if not ok then
        local handled, herr, htrace = task.run(handle_job_exception, job, exc, started)
        if not handled and settings.giving_up() then
            -- a stop ended a wait for the failed-job store (or Redis): the job stays
            -- reserved, its outcome unrecorded
            output.error(output.job_name(job) .. ": the worker stopped before its outcome was "
                .. "recorded (" .. output.text(failing.exception_info(herr).message) .. "); the job "
                .. "stays reserved and comes back after retry_after", job)
        elseif not handled then
            output.error("while handling the error of " .. output.job_name(job) .. ": "
                .. tostring(redis.is_error(herr) and herr.message or htrace), job)
        end
    end
    events.fire_safely("attempted", job, nil, { exception_occurred = not ok })
    return ok, exc
end

-- A job that no longer runs stays reserved, its attempt used: its reservation ends
-- now (the form's abandon), so that the next migrate (on Redis) or pop (on the
-- database queue) takes it again; a form without one leaves it to retry_after.
-- Says which.
local function abandon(job)
    if not job.form.abandon then return "it stays reserved until retry_after, by Laravel's rules" end
    local ok, err = pcall(job.form.abandon, job)
    if ok then return "it goes back to its queue with the attempt counted" end
    return string.format("it stays reserved until its lease runs out (%s)",
        redis.is_error(err) and err.message or tostring(err))
end

-- Worker::registerTimeoutHandler's decisions, for a job that ran past its timeout
-- (seconds): fail it when that was its last attempt, when maxExceptions is reached
-- (a timeout counts as an exception) or when it has failOnTimeout; otherwise it
-- comes back with the attempt counted (abandon). how: "process" when its process was
-- ended for it, "stopped" when it was stopped where it waited (the process goes
-- on). A stopped job whose code had ended, or had deleted, released or failed it,
-- keeps that outcome: the rules are not applied again.
function M.handle_timed_out_job(job, timeout, how)
    local exc = failing.exception_info(failing.timeout_exception(job), "")
    if how == "process" then output.started(job, host.clock() - timeout) end
    local decided = how == "stopped"
        and (job.settling or job:is_deleted_or_released() or job:has_failed())
    local ok, err, trace = true, nil, nil
    if not decided then
        ok, err, trace = task.run(function()
            fail_if_will_exceed_max_attempts(job, exc)
            fail_if_will_exceed_max_exceptions(job, exc)
            if job:should_fail_on_timeout() then failing.fail(job, exc.value, exc.text) end
        end)
    end
    events.fire_safely("timed_out", job, exc, { timeout = timeout })
    if not ok then
        output.error("while handling the timeout of " .. output.job_name(job) .. ": "
            .. tostring(redis.is_error(err) and err.message or trace), job)
    end
    local outcome
    if decided then
        outcome = ", after its outcome was decided, which stands"
    elseif job:has_failed() then
        outcome = "; failed"
    else
        outcome = ", and " .. abandon(job)
    end
    output.error(string.format("%s (attempt %s) ran past its timeout of %ds; %s%s",
        output.job_name(job), job:attempts(), timeout,
        how == "process" and "its process was ended" or "it was stopped where it waited",
        outcome), job)
end

-- A job whose process died while it ran (a crash, os.exit in its handler, a kill
-- that was not for its timeout). Laravel's worker would find it reserved and pop it
-- again after retry_after, failing it then when its attempts are used up: that is
-- done now (when this was its last attempt, or its retryUntil passed); otherwise it
-- comes back now, its attempt counted (abandon). death: how the process ended.
function M.handle_crashed_job(job, death)
    local exc = failing.exception_info(failing.max_attempts_exception(job), "")
    local ok, err, trace = task.run(fail_if_will_exceed_max_attempts, job, exc)
    if not ok then
        output.error("while handling the death of the worker running " .. output.job_name(job)
            .. ": " .. tostring(redis.is_error(err) and err.message or trace), job)
    end
    output.error(string.format("%s (attempt %s) was running when its worker died (%s)%s",
        output.job_name(job), job:attempts(), death,
        job:has_failed() and "; its last attempt: failed" or "; " .. abandon(job)), job)
end

return M
