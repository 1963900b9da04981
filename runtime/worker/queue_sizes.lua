-- luaworker.worker.queue_sizes: the sizes of the worker's queues, as Laravel's
-- size() counts them (pending, delayed, reserved), written to its slot every
-- second for the supervisor's metrics (luaworker_queue_size), by the one worker
-- of a fleet whose slot reports them (host.reports_queue_sizes: --metrics). A
-- read that fails (an outage) is said once and tried again the next second.
local host = require "luaworker.host"
local task = require "luaworker.loop.task"
local queue = require "luaworker.queue"
local database_queue = require "luaworker.queue.database_queue"
local settings = require "luaworker.base.settings"
local output = require "luaworker.worker.output"

local M = {}

local EVERY = 1  -- seconds between two reports

-- The sizes of queues now: { {queue, pending, delayed, reserved}, ... }.
local function sizes(queues)
    local list = {}
    local jobs = settings.connection_name == "database" and database_queue.default() or nil
    for i, q in ipairs(queues) do
        local _, pending, delayed, reserved
        if jobs then
            _, pending, delayed, reserved = jobs:size(q)
        else
            _, pending, delayed, reserved = queue.size(q)
        end
        list[i] = { q, pending, delayed, reserved }
    end
    return list
end

-- Starts the reports, when this worker makes them.
function M.start(queues)
    if not host.reports_queue_sizes() then return end
    local said = false
    task.spawn(function(_, ok, err, trace)
        if not ok then output.error("internal error while reading the queues' sizes: " .. tostring(trace or err)) end
    end, nil, function()
        while true do
            local ok, list, trace = task.run(sizes, queues)
            if ok then
                host.report_queue_sizes(list)
                said = false
            elseif not said then
                said = true
                output.error("cannot read the queues' sizes for the metrics (tried again every second): "
                    .. tostring(trace or list))
            end
            host.sleep(EVERY, true)
            if settings.giving_up() then return end
        end
    end)
end

return M
