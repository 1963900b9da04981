-- luaworker.worker.idle: the wait of a worker that found no job, in place of queue:work's
-- sleep and block_for: a BLPOP on the notify lists of the queues (a push wakes it at
-- once), ended by the host's timer when the next delayed job is due or reservation
-- expires (moved within milliseconds of its second), by a change of a delayed set,
-- and at the latest after --sleep (plus --block-for), or when it is time to look for
-- dead workers. What Redis sees is what a queue:work with block_for does.
local host = require "luaworker.host"
local redis = require "luaworker.redis"
local queue = require "luaworker.queue"
local output = require "luaworker.worker.output"
local reservations = require "luaworker.worker.reservations"
local queue_paused = require("luaworker.worker.queue_paused").paused
local settings = require "luaworker.base.settings"

local M = {}

-- Changes of the delayed sets wake an idle worker at most this often a second.
local INVALIDATION_RATE = 20

-- How long an idle worker waits for a job: --sleep, as queue:work sleeps; with
-- --block-for, that long first (0: without limit), as queue:work blocks.
local function idle_bound()
    local options = settings.options
    if options.block_for == nil then return options.sleep end
    if options.block_for == 0 then return math.huge end
    return options.block_for + options.sleep
end

-- Changes of the delayed sets while idle (queue.track_delayed: Laravel's later()
-- adds a job without a notify token), each ending the idle wait. Set up again after
-- either connection involved reconnected.
local tracked = { connects = -1, unavailable = false }
local invalidated_at = -1

local function track_delayed_sets(queues)
    if tracked.unavailable then return end
    if host.subscribed() and tracked.connects == host.connects("block") then return end
    local done, err = pcall(queue.track_delayed, queues)
    if not done then
        if not (redis.is_error(err) and err.kind == "reply") then error(err, 0) end
        tracked.unavailable = true
        output.error("Redis cannot report changes of the delayed sets (" .. err.message
            .. "): a job delayed while the worker is idle is moved when the wait ends, "
            .. "after --sleep at most")
        return
    end
    tracked.connects = host.connects("block")
end

-- Waits for a job on queues (see above); not at all after a stop or reload signal,
-- which ends a wait under way too. Raises what Redis raises.
function M.wait(queues)
    local quit, _, reload = host.signals()
    if quit or reload then return end
    local bound = idle_bound()
    -- a wait longer than the time between two looks for dead workers ends for the next
    if bound > reservations.scan_interval() then
        bound = math.max(reservations.until_next_scan(), 0.1)
    end
    if bound <= 0 then return end
    local open = {}
    for _, q in ipairs(queues) do
        if not queue_paused(q) then open[#open + 1] = q end
    end
    if #open == 0 then
        local sleep = settings.options.sleep
        host.sleep(math.min(bound, sleep > 0 and sleep or 1), true)
        return
    end
    local wait, exact = bound, false
    host.take_invalidated()
    local due = queue.next_due(open)
    -- after a first command: a Redis still loading its data refuses it
    track_delayed_sets(queues)
    for i, q in ipairs(open) do
        if due[i] then
            -- due jobs are moved once per second per queue (see reservations)
            local at = math.max(due[i], (reservations.migrated_at(q) or 0) + 1)
            local until_due = at - host.microtime() + 0.002
            if until_due < wait then wait, exact = until_due, true end
        end
    end
    if wait <= 0 then return end
    -- a change of a delayed set ends the wait, and the next starts with a read:
    -- at most INVALIDATION_RATE of those a second, however busy the sets are
    local since = host.clock() - invalidated_at
    if since < 1 / INVALIDATION_RATE then host.sleep(1 / INVALIDATION_RATE - since, true) end
    queue.wait_for_push(open, wait == math.huge and -1 or wait, exact)
    if host.take_invalidated() then invalidated_at = host.clock() end
end

return M
