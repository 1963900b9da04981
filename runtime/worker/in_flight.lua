-- luaworker.worker.in_flight: the jobs a worker process runs at once (--concurrency), each
-- in a task of its own (luaworker.task): while one waits (Redis, a sleep), the
-- others run.
--
-- Timeouts: a job that waits past its timeout is stopped where it waits (its task
-- abandoned: the timer it waited for stopped, a reply it waited for dropped), then
-- Laravel's timeout rules apply to it (process.handle_timed_out_job) and the
-- process and the other jobs go on. A job that keeps the CPU past its timeout
-- cannot be stopped from inside: the slot names the job that has the CPU, each
-- time one gets it, and the supervisor ends the process (its successor settles
-- what it had in flight, see worker/reservations.lua's recover_predecessor). A job's timeout does not
-- count the time Redis outages held up the process's commands (redis.held_time).
local host = require "luaworker.host"
local redis = require "luaworker.redis"
local task = require "luaworker.loop.task"
local output = require "luaworker.worker.output"
local process = require "luaworker.worker.process"
local settings = require "luaworker.base.settings"

local M = {}

local concurrency = 1
local count = 0               -- jobs in flight
local done = 0                -- jobs whose time in flight ended
-- how often jobs end: the host.clock() of the last end, and the mean time between
-- two ends (a moving average; nil before the second end)
local last_end, between
local FREED = {}              -- the key the worker loop waits on for a job to end
local flying, started = {}, 0 -- the jobs in flight: job -> how many had started before it
local loop_waits = false

-- The job of task t gets the CPU, or leaves it.
local function enter(t)
    host.report_running(t.job.number or 0, t.timeout, t.started + redis.held_time() - t.held_at)
end

local function leave()
    host.report_end()
end

-- Job's time in flight ended (its task ended, or its timeout was handled).
local function ended(job)
    count = count - 1
    done = done + 1
    host.report_in_flight(count)
    flying[job] = nil
    local now = host.clock()
    if last_end then
        local gap = now - last_end
        between = between and between * 0.9 + gap * 0.1 or gap
    end
    last_end = now
    job.form.finished(job)
    if loop_waits then task.wake(FREED) end
end

local function on_end(t, ok, err, trace)
    if t.deadline then task.cancel(t.deadline) end
    if not ok then
        output.error("internal error while running " .. output.job_name(t.job) .. ": "
            .. tostring(trace or err), t.job)
    end
    ended(t.job)
end

local expire

-- Arms t's deadline: seconds from now, moved on by the time outages hold it up.
local function arm(t, seconds)
    t.deadline = task.after(seconds, expire, t)
end

-- t's deadline passed (unless an outage moved it): t is stopped where it waits,
-- and a task of its own applies the timeout rules.
function expire(t)
    t.deadline = nil
    if t.done or t.abandoned then return end
    local left = t.started + t.timeout + redis.held_time() - t.held_at - host.clock()
    if left > 0.001 then return arm(t, left) end
    task.abandon(t)
    task.spawn(function(_, ok, err, trace)
        if not ok then
            output.error("while handling the timeout of " .. output.job_name(t.job) .. ": "
                .. tostring(trace or err), t.job)
        end
        ended(t.job)
    end, nil, process.handle_timed_out_job, t.job, t.timeout, "stopped")
end

function M.configure(n)
    concurrency = n
end

-- How many jobs are in flight.
-- How many jobs ended their time in flight in this process.
function M.done()
    return done
end

function M.count()
    return count
end

-- The jobs in flight, by when they started.
function M.jobs()
    local list = {}
    for job in pairs(flying) do list[#list + 1] = job end
    table.sort(list, function(a, b) return flying[a] < flying[b] end)
    return list
end

-- Whether as many jobs are in flight as --concurrency allows.
function M.full()
    return count >= concurrency
end

-- How many jobs may be reserved now: the free places, and the places expected to
-- free within seconds at the pace jobs have been ending. While jobs are in flight,
-- the time since the last end counts as a gap (none ends: none is expected to);
-- while none is, the worker was idle, and the pace is the last one seen.
function M.room(seconds)
    local free = concurrency - count
    if not between then return free end
    local gap = between
    if count > 0 then gap = math.max(gap, host.clock() - last_end) end
    return free + math.floor(seconds / math.max(gap, 1e-6))
end

-- Starts job (process.process) in a task of its own; it runs until it first waits
-- before run returns.
function M.run(job)
    count = count + 1
    host.report_in_flight(count)
    started = started + 1
    flying[job] = started
    job.form.running(job)
    local timeout = tonumber(job:timeout()) or settings.options.timeout
    -- from the payload: NaN and what is not above 0 mean none; beyond the slot's
    -- 32 bits, as good as none
    if not (timeout > 0) then timeout = 0 end
    timeout = math.min(timeout, 2 ^ 32 - 1)
    -- every field the task gets, so that the table is made at its size once
    local t = { job = job, timeout = timeout, started = host.clock(), held_at = redis.held_time(),
        enter = enter, leave = leave, deadline = false, co = false, on_end = false, key = false,
        held = false, done = false, abandoned = false }
    if timeout > 0 then arm(t, timeout) end
    task.spawn(on_end, t, process.process, job)
end

local wake_at, wake_timer  -- the host.clock() time a timer ends the loop's wait at, and it

local function wake_loop()
    wake_at, wake_timer = nil, nil
    if loop_waits then task.wake(FREED) end
end

-- Waits until a job in flight ends, or, given deadline (a host.clock() time), until
-- then at most; returns at once when none is in flight. For the worker loop's task
-- only. (One timer serves the waits for one deadline: a job ending no sooner costs
-- none.)
function M.wait(deadline)
    if count == 0 then return end
    if deadline and deadline ~= wake_at then
        if wake_timer then task.cancel(wake_timer) end
        wake_at, wake_timer = deadline, task.after(math.max(deadline - host.clock(), 0), wake_loop)
    end
    loop_waits = true
    task.suspend(FREED)
    loop_waits = false
end

-- Waits until no job is in flight.
function M.drain()
    while count > 0 do M.wait() end
end

return M
