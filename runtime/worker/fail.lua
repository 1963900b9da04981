-- luaworker.worker.fail: failing a job for good, as Laravel's Job::fail does: the
-- failed record written and the reservation removed (luaworker.failed_jobs: in one
-- step in Redis, the record first in the app's database), the unique lock
-- released, the failure counted in its batch, then the handler's failed() and the
-- failing hooks. And the error values
-- as the worker reports them.
local host = require "luaworker.host"
local redis = require "luaworker.redis"
local failed_jobs = require "luaworker.queue.failed_jobs"
local batch = require "luaworker.bus.batch"
local task = require "luaworker.loop.task"
local events = require "luaworker.base.events"
local handlers = require "luaworker.worker.handlers"
local output = require "luaworker.worker.output"
local call_queued_handler = require "luaworker.worker.call_queued_handler"
local settings = require "luaworker.base.settings"
local values = require "luaworker.base.values"
local db = require "luaworker.db"
local horizon = require "luaworker.queue.horizon"

local M = {}

M.MAX_ATTEMPTS_EXCEPTION = "Illuminate\\Queue\\MaxAttemptsExceededException"

-- An error as the worker reports it: class, message and the text stored in the
-- failed-job record (message and traceback).
function M.exception_info(err, trace)
    local class, message
    if values.is_exception(err) then
        class, message = err.class, err.message
    elseif redis.is_error(err) then
        class, message = "RedisError", err.message
    else
        class, message = "LuaError", tostring(err)
    end
    local text = tostring(err)
    if trace then
        -- the frames below the handler are luaworker's own; a trace left with C frames
        -- alone (an error luaworker raised, not a handler) says nothing
        trace = trace:gsub('\n\t%[string "luaworker[^\n]*', "")
        if not trace:gsub("\n\t%[C%][^\n]*", ""):find("\n\t") then
            trace = trace:gsub("\nstack traceback:.*$", ""):gsub("^stack traceback:.*$", "")
        end
    end
    if trace and trace ~= "" then
        text = trace:find(text, 1, true) == 1 and trace or (text .. "\n" .. trace)
    end
    return { value = err, class = class, message = message, text = text }
end

M.TIMEOUT_EXCEEDED_EXCEPTION = "Illuminate\\Queue\\TimeoutExceededException"

-- Worker::maxAttemptsExceededException, worded as the version luaworker speaks
-- words it (10.10 dropped "or run too long...", which timeouts got their own for).
function M.max_attempts_exception(job)
    if settings.laravel_at_least(10, 10) then
        return values.exception(M.MAX_ATTEMPTS_EXCEPTION, tostring(job:name())
            .. " has been attempted too many times.")
    end
    return values.exception(M.MAX_ATTEMPTS_EXCEPTION, tostring(job:name())
        .. " has been attempted too many times or run too long. The job may have previously timed out.")
end

-- The exception of a job that ran past its timeout: 10.10+ TimeoutExceededException
-- (a MaxAttemptsExceededException), before it the max-attempts one.
function M.timeout_exception(job)
    if settings.laravel_at_least(10, 10) then
        return values.exception(M.TIMEOUT_EXCEEDED_EXCEPTION, tostring(job:name()) .. " has timed out.")
    end
    return M.max_attempts_exception(job)
end

local record

-- Job::fail: record, remove the reservation, then the handler's failed() and the
-- failing hooks. A job already deleted is only marked failed (as Laravel does). A
-- job failed inside a transaction of its handler is marked failed at once and
-- recorded once its transactions end: a record written on the transaction's
-- connection would be rolled back with it, the job in no store.
function M.fail(job, err, trace)
    job:mark_as_failed()
    if job:is_deleted() then return end
    if err == nil then
        err = values.exception("Illuminate\\Queue\\ManuallyFailedException",
            "This job was manually failed.")
    end
    trace = trace or debug.traceback("job:fail() called", 2)
    db.after_transactions(function() record(job, err, trace) end)
end

function record(job, err, trace)
    local exc = M.exception_info(err, trace)
    local payload = job:payload()
    local uuid = payload.uuid
    if type(uuid) ~= "string" or uuid == "" then uuid = host.uuid() end
    local now = host.now()
    -- a fake job's form has a store of its own (worker/fake_job.lua), which is also
    -- given the exception's info
    local store = job.form.failed_store or failed_jobs.store()
    store.log(job:queue(), job:reserved_body(), {
        uuid = uuid, connection = settings.connection_name, payload = job:raw_body(),
        exception = exc.text, now = now, failed_at = os.date("%Y-%m-%d %H:%M:%S", now),
    }, job.form.removal, exc)
    job:mark_as_deleted()
    -- Horizon: the delete's JobDeleted (failed), then JobFailed
    horizon.record("completed", job, true)
    horizon.record("failed", job, exc.text)
    host.count_job(job:queue(), job:name(), "failed")
    host.record_failure(job:queue(), job:name(), exc.class .. ": " .. (tostring(exc.message):match("^[^\n]*")))

    local handler = handlers.resolve(payload)
    local command = handler and call_queued_handler.command_of(job)
    if command ~= nil and not handlers.is_string_job(payload) then
        local mode = call_queued_handler.unique_mode(handler, command)
        if mode and mode ~= "until_processing" then
            local ok, _, utrace = task.run(call_queued_handler.release_unique_lock, handler, command,
                job)
            if not ok then output.error("cannot release the unique lock: " .. utrace, job) end
        end
    end
    local batch_id = batch.id_of(command)
    if batch_id then
        local ok, _, btrace = task.run((job.form.batch or batch).record_failed_job, batch_id,
            type(payload.uuid) == "string" and payload.uuid or "", job)
        if not ok then output.error("cannot record the failure in batch " .. batch_id .. ": " .. btrace, job) end
    end
    if handler and type(handler.failed) == "function" then
        local ok, _, ftrace = task.run(handler.failed, job, command, exc.value)
        if not ok then
            output.error("error in failed() of " .. output.job_name(job) .. ": " .. ftrace, job)
        end
    end
    events.fire_safely("failing", job, exc)
    output.job("failed", job, exc)
end

return M
