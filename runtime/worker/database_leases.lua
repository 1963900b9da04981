-- luaworker.worker.database_leases: the leases of the jobs in flight on the database
-- queue, kept by a thread of the worker with a connection of its own
-- (worker/database_lease_keeper.h): while a job runs, its row's reserved_at is
-- renewed every quarter lease so that, by Laravel's rule, it expires a lease later
-- (two heartbeats, or retry_after when less). No worker, PHP's or luaworker's,
-- takes it again while this one lives, however long it runs and whether or not its
-- handler yields; once the process is gone, the job comes back within a lease, its
-- attempt counted. A job shorter than a quarter lease costs nothing. A lease that
-- ran out before a renewal was confirmed (the database out of reach that long) is
-- said once, naming the job: it may run twice.
local host = require "luaworker.host"
local output = require "luaworker.worker.output"
local periodic = require "luaworker.base.periodic"
local settings = require "luaworker.base.settings"

local M = {}

-- Seconds between two looks for leases that lapsed.
local LAPSE_LOOK = 1

local retry_after
local held = {}   -- handle -> the job in flight whose lease it is

-- Says once that job's lease ran out while it ran.
local function say_lapse(job)
    local why = host.database_lease_error()
    output.lease_lapsed(job, "the database out of reach" .. (why and ": " .. why or ""))
end

-- Starts the renewals of the reservations of jobs_table (a database_queue), over a
-- connection to its database; raises what keeps the thread from starting. None at
-- a retry_after of 0, by which a reservation expires as it is made.
function M.start(jobs_table)
    if jobs_table.retry_after <= 0 then return end
    retry_after = jobs_table.retry_after
    local d = jobs_table.db
    local ok, err = host.database_leases(d.driver_name, d.settings, jobs_table:lease_statement(),
        math.min(2 * settings.options.heartbeat, retry_after), retry_after)
    if not ok then error("the leases of the jobs in flight: " .. tostring(err), 0) end
    periodic.start(LAPSE_LOOK, M.say_lapses, "look for jobs whose lease lapsed")
end

-- job starts: its reservation is renewed while it runs.
function M.hold(job)
    if not retry_after then return end
    local r = job:reserved_body()
    job.lease = host.database_lease(r.id, r.attempts, r.reserved_at + retry_after)
    if job.lease then held[job.lease] = job end
end

-- job ended: no more renewals; says so when its lease had run out.
function M.release(job)
    local handle = job.lease
    if not handle then return end
    held[handle], job.lease = nil, nil
    if host.database_lease_end(handle) then say_lapse(job) end
end

-- Says which jobs in flight lost their lease since the last look.
function M.say_lapses()
    for _, handle in ipairs(host.database_lease_lapses()) do
        if held[handle] then say_lapse(held[handle]) end
    end
end

return M
