-- luaworker.events: the worker's event listeners (Laravel's queue worker events,
-- in snake_case), registered from handlers' init.lua through require "luaworker".
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

-- Calls every listener of name with event, in registration order; errors propagate.
-- Returns false when a listener returned false (what pauses the loop for looping).
function M.fire(name, event)
    local list = listeners[name]
    if not list then return true end
    local result = true
    for i = 1, #list do
        if list[i](event) == false then result = false end
    end
    return result
end

return M
