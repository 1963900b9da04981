-- luaworker.base.events: the worker's event listeners (Laravel's queue worker events,
-- in snake_case), registered from handlers' init.lua through require "luaworker",
-- and fired by the worker with the job they concern.
local settings = require "luaworker.base.settings"
local task = require "luaworker.loop.task"
local output = require "luaworker.base.log"

local M = {}

-- Laravel event each name stands for.
M.NAMES = {
    starting = "WorkerStarting",
    looping = "Looping",
    popping = "JobPopping",
    popped = "JobPopped",
    before = "JobProcessing",
    after = "JobProcessed",
    exception_occurred = "JobExceptionOccurred",
    released_after_exception = "JobReleasedAfterException",
    failing = "JobFailed",
    attempted = "JobAttempted",
    timed_out = "JobTimedOut",
    stopping = "WorkerStopping",
    released = "JobReleased",
    idle = "WorkerIdle",
    interrupted = "WorkerInterrupted",
    job_interrupted = "JobInterrupted",
    pausing = "WorkerPausing",
    resuming = "WorkerResuming",
    queue_paused = "WorkerQueuePaused",
    queue_resumed = "WorkerQueueResumed",
}

local listeners = {}

function M.listen(name, fn)
    if not M.NAMES[name] then
        error("unknown event '" .. tostring(name) .. "'", 3)
    end
    if type(fn) ~= "function" then
        error("luaworker." .. name .. "(fn): expected a function, got " .. type(fn), 3)
    end
    local list = listeners[name]
    if not list then
        list = {}
        listeners[name] = list
    end
    list[#list + 1] = fn
end

function M.has(name)
    return listeners[name] ~= nil
end

-- Calls every listener of name with an event table {connection_name, job,
-- exception (exc.value), and extra's fields}, in registration order; errors
-- propagate. Returns false when a listener returned false (what pauses the loop for
-- looping). Builds nothing when name has no listener.
function M.fire(name, job, exc, extra)
    local list = listeners[name]
    if not list then return true end
    local event = { connection_name = settings.connection_name, job = job,
        exception = exc and exc.value or nil }
    if extra then
        for k, v in pairs(extra) do event[k] = v end
    end
    local result = true
    for i = 1, #list do
        if list[i](event) == false then result = false end
    end
    return result
end

-- As fire, in a coroutine of its own, for events whose listeners' errors must not
-- stop the caller: they are logged.
function M.fire_safely(name, job, exc, extra)
    if not listeners[name] then return true end
    local ok, result, trace = task.run(M.fire, name, job, exc, extra)
    if not ok then
        output.error("error in the " .. name .. " hook: " .. trace, job)
        return true
    end
    return result
end

return M
