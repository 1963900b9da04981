-- luaworker.worker.stop_signal: what a stop signal (TERM, INT, QUIT) does as it
-- arrives, as queue:work's signal handler does: WorkerInterrupted, then, for each job
-- in flight whose handler has interrupted(job, command, signal) (Laravel 13.31's
-- Interruptible), JobInterrupted and that method, so that a long job can end early.
-- The worker then stops as before: no new job, the jobs in flight run to their end.
-- A task of its own waits for the signal (a wakeable sleep, which every signal
-- ends); the worker loop, which notices the signal at its next turn, calls
-- M.interrupted too, and whichever comes first acts, once.
local host = require "luaworker.host"
local task = require "luaworker.loop.task"
local events = require "luaworker.base.events"
local settings = require "luaworker.base.settings"
local handlers = require "luaworker.worker.handlers"
local call_queued_handler = require "luaworker.worker.call_queued_handler"
local in_flight = require "luaworker.worker.in_flight"
local output = require "luaworker.worker.output"

local M = {}

local done = false

-- The stop signal arrived (signal: its number): WorkerInterrupted, then each job in
-- flight's interruption, in job order: JobInterrupted, then the handler's
-- interrupted() in a task of its own, so that one that waits or raises is that
-- job's alone (an error is logged; one still waiting when the worker exits is left
-- unfinished). Once per process.
function M.interrupted(signal)
    if done then return end
    done = true
    events.fire_safely("interrupted", nil, nil, { signal = signal, queue = settings.options.queue_list })
    for _, job in ipairs(in_flight.jobs()) do
        local handler = handlers.resolve(job:payload())
        if handler and type(handler.interrupted) == "function" then
            local command = call_queued_handler.command_of(job)
            events.fire_safely("job_interrupted", job, nil, { signal = signal })
            task.spawn(function(_, ok, _, trace)
                if not ok then
                    output.error("error in interrupted() of " .. output.job_name(job) .. ": " .. trace, job)
                end
            end, nil, handler.interrupted, job, command, signal)
        end
    end
end

local WAKE_EVERY = 3600  -- seconds: the sleep a signal ends, started again

-- Starts the task that waits for a stop signal.
function M.watch()
    task.spawn(function(_, ok, err, trace)
        if not ok then output.error("internal error while waiting for signals: " .. tostring(trace or err)) end
    end, nil, function()
        while not done do
            host.sleep(WAKE_EVERY, true)
            local quit = host.signals()
            if quit then M.interrupted(quit) end
        end
    end)
end

return M
