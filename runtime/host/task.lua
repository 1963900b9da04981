-- luaworker.task: runs a function in a coroutine of its own (one per job, per hook
-- call), passing the host's waits (Redis replies, sleeps) up to the main coroutine
-- and their results back down, and catching errors with a traceback.
local host = require "luaworker.host"

local WAIT = host.WAIT
local allow_waits = host.allow_waits
local co_create, co_resume, co_yield = coroutine.create, coroutine.resume, coroutine.yield
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

-- Coroutines are reused: each runs functions one after the other, yielding DONE
-- and the results after each (a tail call, so its stack does not grow). One that
-- raised, or was left waiting on a yield of its own, is dropped.
local DONE = {}
local pool, pooled = {}, 0

local function loop(fn, ...)
    return loop(co_yield(DONE, fn(...)))
end

-- Runs fn(...) in a coroutine of its own until it returns. Returns true, results...
-- or false, error value, traceback (the error is never raised). A yield that is not
-- a host wait (coroutine.yield called by the function itself) is an error. After
-- "not enough memory" a full collection runs, so that what the coroutine held is
-- freed before the error is handled.
function M.run(fn, ...)
    local co
    if pooled > 0 then
        co, pool[pooled] = pool[pooled], nil
        pooled = pooled - 1
    else
        co = co_create(loop)
        allow_waits(co)
    end
    local res = pack(co_resume(co, fn, ...))
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
        if res[2] == DONE then
            pooled = pooled + 1
            pool[pooled] = co
            return true, unpack(res, 3, res.n)
        end
        if res[2] ~= WAIT then
            local msg = "coroutine.yield() called by a handler outside a coroutine of its own"
            return false, msg, traceback(co, msg, 0)
        end
        res = pack(co_resume(co, co_yield(WAIT)))
    end
end

return M
