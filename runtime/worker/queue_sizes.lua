-- luaworker.worker.queue_sizes: the sizes of the worker's queues, as Laravel's
-- size() counts them (pending, delayed, reserved), written to its slot every
-- second for the supervisor's metrics (luaworker_queue_size), by the one worker
-- of a fleet whose slot reports them (host.reports_queue_sizes: --metrics). A
-- read that fails (an outage) is said once and tried again the next second.
local cjson = require "cjson"
local host = require "luaworker.host"
local values = require "luaworker.base.values"
local queue = require "luaworker.queue"
local database_queue = require "luaworker.queue.database_queue"
local settings = require "luaworker.base.settings"
local periodic = require "luaworker.base.periodic"

local M = {}

local EVERY = 1  -- seconds between two reports

local decode = cjson.new().decode

-- Since when the job of payload text has been due: its createdAt (Laravel
-- 12.11+) and its dispatch delay; nil when the payload does not say.
local function due_at(text)
    local ok, payload = pcall(decode, text)
    if not ok or type(payload) ~= "table" then return nil end
    local created = tonumber(values.value(payload.createdAt))
    if not created then return nil end
    return created + (tonumber(values.value(payload.delay)) or 0)
end

-- The sizes of queues now: { {queue, pending, delayed, reserved, oldest_wait}, ... }
-- (oldest_wait: seconds its oldest waiting job has been due, nil when unknown).
local function sizes(queues)
    local list = {}
    local jobs = settings.connection_name == "database" and database_queue.default() or nil
    local now = host.now()
    for i, q in ipairs(queues) do
        local _, pending, delayed, reserved, due
        if jobs then
            _, pending, delayed, reserved = jobs:size(q)
            due = pending > 0 and jobs:oldest_pending_at(q, now) or nil
        else
            _, pending, delayed, reserved = queue.size(q)
            local oldest = pending > 0 and queue.oldest_pending(q)
            due = oldest and due_at(oldest) or nil
        end
        list[i] = { q, pending, delayed, reserved, due and math.max(0, now - due) or nil }
    end
    return list
end

-- Starts the reports, when this worker makes them.
function M.start(queues)
    if not host.reports_queue_sizes() then return end
    periodic.start(EVERY, function() host.report_queue_sizes(sizes(queues)) end,
        "read the queues' sizes for the metrics")
end

return M
