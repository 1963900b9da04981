-- luaworker.task: runs a function in a coroutine of its own (one per job, per hook
-- call), passing the host's waits (Redis replies, sleeps) up to the main coroutine
-- and their results back down, and catching errors with a traceback.
local host = require "luaworker.host"

local WAIT = host.WAIT
local co_create, co_resume, co_status, co_yield =
    coroutine.create, coroutine.resume, coroutine.status, coroutine.yield
local select, unpack, traceback = select, unpack, debug.traceback

local M = {}

local function pack(...)
    return { n = select("#", ...), ... }
end

-- The text of an error value. A value whose __tostring raises is replaced by a
-- string saying so (returned twice: the new error value and its text), so that
-- nothing that reports the error raises in turn.
local function error_text(err)
    local ok, text = pcall(tostring, err)
    if ok and type(text) == "string" then return err, text end
    local inner = type(text) == "string" and text or "a " .. type(text) .. " value"
    text = "(a " .. type(err) .. " error value whose __tostring raised: " .. inner .. ")"
    return text, text
end

-- Runs fn(...) in a new coroutine until it returns. Returns true, results... or
-- false, error value, traceback (the error is never raised). A yield that is not a
-- host wait (coroutine.yield called by the function itself) is an error. After
-- "not enough memory" a full collection runs, so that what the coroutine held is
-- freed before the error is handled.
function M.run(fn, ...)
    local co = co_create(fn)
    local res = pack(co_resume(co, ...))
    while true do
        if not res[1] then
            local err, text = error_text(res[2])
            local trace = traceback(co, text, 0)
            if err == "not enough memory" then
                co, res = nil, nil
                collectgarbage()
            end
            return false, err, trace
        end
        if co_status(co) == "dead" then
            return unpack(res, 1, res.n)
        end
        if res[2] ~= WAIT then
            local msg = "coroutine.yield() called by a handler outside a coroutine of its own"
            return false, msg, traceback(co, msg, 0)
        end
        res = pack(co_resume(co, co_yield(WAIT)))
    end
end

return M
