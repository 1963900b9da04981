-- luaworker.worker.job: a job popped from a queue, as Laravel's RedisJob and DatabaseJob:
-- the payload as popped (raw body) and its reservation (reserved body) that
-- delete/release/fail must use, handed to the form of the connection that took it
-- (worker/reservations.lua, worker/database_reservations.lua).
local host = require "luaworker.host"
local horizon = require "luaworker.queue.horizon"
local payload_values = require "luaworker.base.values"
local settings = require "luaworker.base.settings"
local failing = require "luaworker.worker.fail"
local log_context = require "luaworker.queue.context"
local batch = require "luaworker.bus.batch"
local call_queued_handler = require "luaworker.worker.call_queued_handler"

local value = payload_values.value

-- The longest release delay: its score stays a whole number of seconds Redis and
-- PHP read back (68 years).
local MAX_DELAY = 2147483647

local Job = {}
Job.__index = Job
Job.__name = "luaworker.worker.job"

local M = {}

-- A job of queue q: raw, the payload as popped; reserved, its reservation (the
-- reserved copy on Redis, the row's record on a database); payload, raw decoded (a
-- table); form, the connection's form that took it: form.delete(job),
-- form.release(job, delay), form.attempts(job), form.id(job), and what process.lua and
-- in_flight.lua ask of it (start, running, finished).
function M.new(q, raw, reserved, payload, form)
    return setmetatable({
        form = form,
        _queue = q,
        _raw = raw,
        _reserved = reserved,
        _payload = payload,
        _deleted = false,
        _released = false,
        _failed = false,
        _context = false,
    }, Job)
end

Job.__tostring = function(job)
    return "luaworker.job(" .. tostring(job:name()) .. ", id " .. tostring(job:id()) .. ")"
end

function Job:payload() return self._payload end
function Job:raw_body() return self._raw end
function Job:reserved_body() return self._reserved end
function Job:queue() return self._queue end
function Job:connection_name() return settings.connection_name end
-- The job's id: the payload's on Redis, the row's on a database.
function Job:id() return self.form.id(self) end
function Job:uuid() return value(self._payload.uuid) end
function Job:display_name() return value(self._payload.displayName) end
function Job:max_tries() return value(self._payload.maxTries) end
function Job:max_exceptions() return value(self._payload.maxExceptions) end
function Job:timeout() return value(self._payload.timeout) end
function Job:should_fail_on_timeout() return value(self._payload.failOnTimeout) or false end

-- The job's backoff (payload backoff, else the 12.11+ dispatch delay), or nil.
function Job:backoff()
    local b = value(self._payload.backoff)
    if b == nil then b = value(self._payload.delay) end
    return b
end

-- Unix seconds after which the job may not be attempted again, or nil. A
-- Laravel 8.83 payload may carry the older name timeoutAt.
function Job:retry_until()
    local r = value(self._payload.retryUntil)
    if r == nil then r = value(self._payload.timeoutAt) end
    return r
end

-- 1 on the first run: on Redis the popped payload's attempts + 1 (what the reserved
-- copy holds), on a database the row's attempts (counted by the pop).
function Job:attempts()
    return self.form.attempts(self)
end

-- displayName when set, else the payload's job (Laravel's JobName::resolve).
function Job:name()
    local d = value(self._payload.displayName)
    if type(d) == "string" and d ~= "" then return d end
    return value(self._payload.job)
end

-- The batch of a Batchable job (its command's batchId): {id, name, total_jobs,
-- pending_jobs, failed_jobs, failed_job_ids, created_at, cancelled_at, finished_at,
-- cancelled, finished, allows_failures, options}, read from the app's job_batches
-- table; nil when the job has no batch or the batch no row.
function Job:batch()
    local command = call_queued_handler.command_of(self)
    local id = batch.id_of(command)
    return id and batch.find(id) or nil
end

-- Laravel 11+'s Context as the payload brought it (luaworker.log_context), with
-- what the handler added since: what the jobs it dispatches carry on.
function Job:log_context()
    local context = self._context
    if not context then
        context = log_context.of(self._payload)
        self._context = context
    end
    return context
end

-- The value of a Context key (Context::get), unserialized; without a key, every
-- value by key (Context::all).
function Job:context(key)
    if key == nil then return log_context.all(self:log_context(), "data") end
    return log_context.get(self:log_context(), "data", key)
end

-- The value of a hidden Context key (Context::getHidden); without a key, all.
function Job:hidden_context(key)
    if key == nil then return log_context.all(self:log_context(), "hidden") end
    return log_context.get(self:log_context(), "hidden", key)
end

-- Context::add / addHidden for the jobs this one dispatches from now on.
function Job:add_context(key, v)
    log_context.set(self:log_context(), "data", key, v)
end

function Job:add_hidden_context(key, v)
    log_context.set(self:log_context(), "hidden", key, v)
end

function Job:is_deleted() return self._deleted end
function Job:is_released() return self._released end
function Job:has_failed() return self._failed end
function Job:is_deleted_or_released() return self._deleted or self._released end

-- Removes the job from the queue (on Redis written when the job's run ends, or with
-- the worker's next Redis command, without a round trip).
function Job:delete()
    self._deleted = true
    self.form.delete(self)
    horizon.record("completed", self, false)
end

-- Puts the job back, available after delay seconds (default 0); the next run counts
-- as another attempt, unless opts.keep_attempts: then the attempt this run used is
-- given back (a job a limit held back: it waited, it did not run).
function Job:release(delay, opts)
    if delay == nil then delay = 0 end
    if type(delay) ~= "number" or not (delay >= 0 and delay <= MAX_DELAY) then
        error("job:release(delay): expected a number of seconds from 0 to " .. MAX_DELAY .. ", got "
            .. tostring(delay), 2)
    end
    if opts ~= nil and type(opts) ~= "table" then
        error("job:release(delay, opts): expected a table { keep_attempts = true }, got " .. type(opts), 2)
    end
    self._released = true
    self.form.release(self, math.floor(delay), opts and opts.keep_attempts and true or false)
    host.count_job(self._queue, self:name(), "released")
    horizon.record("released", self)
end

-- Fails the job for good: it is recorded in the failed store, the handler's failed()
-- and the failing hooks run. err: any error value (default: "manually failed").
function Job:fail(err)
    failing.fail(self, err)
end

-- The models the job's command names are gone (a handler's equivalent of
-- Laravel failing to restore them): the job is deleted when it deletes when
-- models are missing, else failed with ModelNotFoundException ("No query results
-- for model [class] ids"). The handler returns after.
function Job:model_not_found(class, ids)
    if type(class) ~= "string" or class == "" then
        error("job:model_not_found(class, ids): expected the model's class name, got " .. tostring(class), 2)
    end
    call_queued_handler.handle_model_not_found(self, class, ids)
end

-- Marks the job failed without side effects (the worker's fail does the rest).
function Job:mark_as_failed()
    self._failed = true
end

function Job:mark_as_deleted()
    self._deleted = true
end

return M
