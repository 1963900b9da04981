-- luaworker.worker.fleet_record: this worker's record for `luaworker status`
-- (queue/fleet_records.lua): who it is (host, pid, its supervisor's pid), what it
-- works (connection, queues, concurrency) and how it does (jobs in flight, jobs
-- done, since when, memory), written at start and every TTL/4, living TTL (its
-- heartbeat's, --heartbeat), removed when it stops. A store that fails is said
-- once; the record then lapses, the worker goes on. None is kept in a cache store
-- that cannot list its keys (the file store).
local host = require "luaworker.host"
local task = require "luaworker.loop.task"
local settings = require "luaworker.base.settings"
local periodic = require "luaworker.base.periodic"
local fleet_records = require "luaworker.queue.fleet_records"
local in_flight = require "luaworker.worker.in_flight"
local output = require "luaworker.worker.output"

local M = {}

local where, ttl, started_at
local id = host.identity()

-- The pid of this process's parent (its supervisor), from /proc.
local function parent_pid()
    local f = io.open("/proc/self/stat")
    local stat = f and f:read("*l")
    if f then f:close() end
    return tonumber(stat and stat:match("%) %S+ (%d+)")) or 0
end

local function record()
    local name, pid = id:match("^(.*):(%d+):[^:]*$")
    return {
        id = id, host = name or id, pid = tonumber(pid) or 0, supervisor = parent_pid(),
        connection = settings.connection_name, queues = settings.options.queue_list,
        concurrency = settings.options.concurrency, in_flight = in_flight.count(),
        done = in_flight.done(), started_at = started_at, rss_mb = host.rss_mb(),
        laravel = string.format("%d.%d", settings.config.laravel_version or 0,
            settings.config.laravel_minor or 0),
    }
end


-- Starts keeping the record (ttl: the heartbeat's, seconds).
function M.start(heartbeat)
    -- a store that cannot list its keys keeps none (`luaworker status` says why)
    where = fleet_records.place()
    if not where then return end
    ttl, started_at = heartbeat, host.now()
    periodic.start(ttl / 4, function() fleet_records.write(where, record(), ttl) end,
        "keep this worker's record for luaworker status")
end

-- Removes the record (the worker stops).
function M.stop()
    if not where then return end
    local ok, _, trace = task.run(fleet_records.remove, where, id)
    if not ok then output.error("cannot remove this worker's record for luaworker status: " .. tostring(trace)) end
    where = nil
end

return M
