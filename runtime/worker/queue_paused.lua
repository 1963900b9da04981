-- luaworker.worker.queue_paused: whether a queue is paused by Laravel's `queue:pause`
-- (12.40+), for every connection's form of taking jobs.
local cache = require "luaworker.queue.cache"
local events = require "luaworker.base.events"
local output = require "luaworker.worker.output"
local settings = require "luaworker.base.settings"

local M = {}

local was_paused = {}  -- queue -> whether it was paused when last looked at

-- Laravel 12.40+'s `queue:pause`: the cache key illuminate:queue:paused:<connection>:<queue>
-- holds a true value (PHP-serialized) while the queue is paused; from 13.25 on,
-- illuminate:queues:paused (`queue:pause --all`) pauses every queue. A queue found
-- paused, or no longer, is announced (WorkerQueuePaused / WorkerQueueResumed).
function M.paused(q)
    local paused = cache.queue_paused(settings.connection_name, q)
    if paused ~= (was_paused[q] or false) then
        was_paused[q] = paused
        output.queue_status(q, paused and "paused" or "resumed")
        events.fire_safely(paused and "queue_paused" or "queue_resumed", nil, nil, { queue = q })
    end
    return paused
end

return M
