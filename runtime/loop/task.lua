-- luaworker.loop.task: tasks, the coroutines luaworker runs (the program, each job in
-- flight), and the scheduler that resumes them.
--
-- A host function that waits (a Redis command, a sleep) yields host.WAIT and a
-- ticket up to the task's top coroutine; the scheduler, which runs in the host's
-- main coroutine, notes which task waits for which ticket and yields to the event
-- loop, which resumes it with a ticket and the results when they arrive; the
-- scheduler then resumes the task that waits for that ticket with them. A task may
-- also wait for a key of its own (suspend), which another task wakes. run() runs a
-- function in a coroutine of its own inside the current task (to catch its errors
-- with a traceback), passing its waits up.
local host = require "luaworker.host"

local WAIT = host.WAIT
local allow_waits = host.allow_waits
local check_wait = host.check_wait
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
-- raised, was abandoned, or was left waiting on a yield of its own, is dropped.
local DONE = {}
local pool, pooled = {}, 0

local function loop(fn, ...)
    return loop(co_yield(DONE, fn(...)))
end

local function take_coroutine()
    if pooled > 0 then
        local co = pool[pooled]
        pool[pooled] = nil
        pooled = pooled - 1
        return co
    end
    local co = co_create(loop)
    allow_waits(co)
    return co
end

local function give_coroutine(co)
    pooled = pooled + 1
    pool[pooled] = co
end

local FOREIGN_YIELD = "coroutine.yield() called by a handler outside a coroutine of its own"

-- The error of a coroutine that raised (ok false, a the error value) or yielded
-- something that is not a host wait: the error value and its traceback.
local function failure(co, ok, a)
    if ok then return FOREIGN_YIELD, traceback(co, FOREIGN_YIELD, 0) end
    local err, text = error_text(a)
    local trace = traceback(co, text, 0)
    if err == "not enough memory" then collectgarbage() end
    return err, trace
end

-- What a resume of the coroutine co of run() returned: it ended (its results), it
-- waits (passed up, and its results passed down: a tail call, so waiting does not
-- grow the stack), or it raised.
local function ran(co, ok, a, b, ...)
    if ok and a == DONE then
        give_coroutine(co)
        return true, b, ...
    end
    if ok and a == WAIT then return ran(co, co_resume(co, co_yield(WAIT, b))) end
    return false, failure(co, ok, a)
end

-- Runs fn(...) in a coroutine of its own until it returns, passing its waits up to
-- the task that calls run. Returns true, results... or false, error value,
-- traceback (the error is never raised). A yield that is not a host wait
-- (coroutine.yield called by the function itself) is an error.
function M.run(fn, ...)
    local co = take_coroutine()
    return ran(co, co_resume(co, fn, ...))
end

-- Tasks ---------------------------------------------------------------------
-- A task: {co =, key = the key or ticket it waits for, done =, abandoned =,
-- on_end =, enter =, leave = (optional, called around each of its resumes),
-- held = (what it holds: see M.hold)}.

local waiting = {}            -- key or ticket -> the task waiting for it
local timers = {}             -- ticket of a host.timer -> the function to call
local timer_args = {}         -- ... its argument
local timer_handles = {}      -- ... and its host handle (for host.cancel)
local ready, ready_first, ready_last = {}, 1, 0   -- tasks woken, with their values
local current                 -- the task running, or nil

-- Lets go of what task t still holds (M.hold): each release is called once.
local function let_go_all(t)
    local held = t.held
    if not held then return end
    t.held = false
    for handle in pairs(held) do
        local ok, err = pcall(handle.release, t)
        if not ok then io.stderr:write("luaworker: internal error on letting go of what a task held: ",
            tostring(err), "\n") end
    end
end

-- Ends task t: on_end(t, ok, results... | error, traceback).
local function finish(t, ...)
    t.done = true
    let_go_all(t)
    if t.on_end then t.on_end(t, ...) end
end

-- What a resume of task t returned: it waits, or it ended.
local function settle(t, ok, a, b, ...)
    local co = t.co
    if ok and a == WAIT then
        t.key = b
        waiting[b] = t
        return
    end
    t.co = nil
    if ok and a == DONE then
        give_coroutine(co)
        return finish(t, true, b, ...)
    end
    return finish(t, false, failure(co, ok, a))
end

local function resumed(t, outer, ...)
    current = outer
    if t.leave then t.leave(t) end
    return settle(t, ...)
end

-- Resumes task t with ... until it waits or ends.
local function step(t, ...)
    local outer = current
    current = t
    if t.enter then t.enter(t) end
    return resumed(t, outer, co_resume(t.co, ...))
end

-- Starts fn(...) as a task of its own, at once: it runs until it first waits (or
-- ends) before spawn returns. on_end(task, true, results...) or on_end(task,
-- false, error, traceback) is called when it ends; it must not wait. t: the table
-- that becomes the task (nil for a new one), with the caller's fields and
-- optionally enter(t) and leave(t), called around each of its resumes. Returns the
-- task.
function M.spawn(on_end, t, fn, ...)
    t = t or {}
    t.co, t.on_end = take_coroutine(), on_end
    step(t, fn, ...)
    return t
end

-- The task running (the top one, whichever coroutine of it runs), or nil.
function M.current()
    return current
end

-- Abandons task t where it waits: it is never resumed again, and its on_end is
-- not called. A timer it waits for is stopped; a Redis reply it waits for comes
-- for nobody; then what it holds is let go (M.hold). Returns false when t already
-- ended or was abandoned.
function M.abandon(t)
    if t.done or t.abandoned then return false end
    t.abandoned = true
    if t.key ~= nil and waiting[t.key] == t then
        waiting[t.key] = nil
        if type(t.key) == "number" then host.cancel(t.key) end
    end
    t.co = nil
    let_go_all(t)
    return true
end

-- The current task holds something (a connection taken from a pool, a statement
-- a server runs for it): release(t) lets it go (it must not wait), and is called
-- once if the task is abandoned, or ends, still holding it. Returns a handle for
-- M.let_go, or nil outside a task.
function M.hold(release)
    local t = current
    if not t then return nil end
    local handle = { release = release }
    if not t.held then t.held = {} end
    t.held[handle] = true
    return handle
end

-- The current task let go of what handle (from M.hold) held itself: release is
-- not called for it.
function M.let_go(handle)
    local t = current
    if handle and t and t.held then t.held[handle] = nil end
end

-- Waits (in a task) until wake(key, ...) is called; returns wake's values. key:
-- any value that is not a number (numbers are the host's tickets).
function M.suspend(key)
    check_wait()  -- raises in a coroutine a handler made, as every wait does
    return co_yield(WAIT, key)
end

-- Resumes the task waiting in suspend(key) with ..., once the current step ends.
-- Returns whether a task waited for key.
function M.wake(key, ...)
    local t = waiting[key]
    if not t then return false end
    waiting[key] = nil
    ready_last = ready_last + 1
    ready[ready_last] = { t, pack(...) }
    return true
end

-- Calls fn(arg) (it must not wait) after seconds, unless cancelled. Returns a
-- handle for cancel.
function M.after(seconds, fn, arg)
    local ticket, handle = host.timer(seconds)
    timers[ticket] = fn
    timer_args[ticket] = arg
    timer_handles[ticket] = handle
    return ticket
end

function M.cancel(ticket)
    if timers[ticket] then
        host.cancel(ticket, timer_handles[ticket])
        timers[ticket], timer_args[ticket], timer_handles[ticket] = nil, nil, nil
    end
end

local function run_ready()
    while ready_first <= ready_last do
        local entry = ready[ready_first]
        ready[ready_first] = nil
        ready_first = ready_first + 1
        local t, values = entry[1], entry[2]
        if not t.abandoned then step(t, unpack(values, 1, values.n)) end
    end
    ready_first, ready_last = 1, 0
end

-- What the loop brought the scheduler: a ticket and its results, for the task
-- waiting for it or the function of a timer (a ticket nobody waits for any more,
-- an abandoned task's, is dropped).
local function arrive(ticket, ...)
    local t = waiting[ticket]
    if t then
        waiting[ticket] = nil
        return step(t, ...)
    end
    local fire, arg = timers[ticket], timer_args[ticket]
    if fire then
        timers[ticket], timer_args[ticket], timer_handles[ticket] = nil, nil, nil
        local ok, err = pcall(fire, arg)
        if not ok then io.stderr:write("luaworker: internal error in a timer: ", tostring(err), "\n") end
    end
end

-- The scheduler: runs fn(...) as the program's task, and every task it starts,
-- until the program's task ends. Runs in the host's main coroutine. Returns fn's
-- results; raises its error with its traceback.
function M.main(fn, ...)
    local ended
    M.spawn(function(_, ...) ended = pack(...) end, nil, fn, ...)
    while true do
        run_ready()
        if ended then break end
        arrive(co_yield())
    end
    if not ended[1] then error(ended[3], 0) end
    return unpack(ended, 2, ended.n)
end

return M
