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

local retry_after, lease
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
    lease = math.min(2 * settings.options.heartbeat, retry_after)
    local d = jobs_table.db
    local ok, err = host.database_leases(d.driver_name, d.settings, jobs_table:lease_statement(),
        lease, retry_after)
    if not ok then error("the leases of the jobs in flight: " .. tostring(err), 0) end
    periodic.start(LAPSE_LOOK, M.say_lapses, "look for jobs whose lease lapsed")
end

-- Whether leases are kept (none at a retry_after of 0).
function M.kept()
    return retry_after ~= nil
end

-- The reserved_at of a reservation made now that expires a lease from now, by
-- Laravel's rule (reserved_at <= now - retry_after); now when no leases are kept.
function M.reserved_at_now()
    if not retry_after then return host.now() end
    return math.ceil(host.microtime() + lease) - retry_after
end

-- A row held ahead (the record of a pop's hold: its attempts one more than its
-- row's): its reservation is renewed from now on, until its job starts (M.hold)
-- or it is given back (M.release_record).
function M.hold_record(record)
    if not retry_after then return end
    record.lease = host.database_lease(record.id, record.attempts - 1, record.reserved_at + retry_after)
end

-- A row held ahead goes back, or was not this worker's any more: no more renewals.
function M.release_record(record)
    if not record.lease then return end
    host.database_lease_end(record.lease)
    record.lease = nil
end

-- job starts: its reservation is renewed while it runs (a job held ahead keeps
-- its row's lease).
function M.hold(job)
    if not retry_after then return end
    local r = job:reserved_body()
    if r.lease then
        job.lease, r.lease = r.lease, nil
    else
        job.lease = host.database_lease(r.id, r.attempts, r.reserved_at + retry_after)
    end
    if job.lease then held[job.lease] = job end
end

-- A held job's start, which counts its attempt in its row: sent (confirmed
-- false; its renewals match the row counted or not), then confirmed (true).
function M.charge(job, confirmed)
    if job.lease then host.database_lease_charge(job.lease, confirmed) end
end

-- When the reservation of a row held ahead (a record), or of a job in flight,
-- expires, as its last renewal (or its pop) set it (a Unix second); 0 when its
-- lease lapsed or the row is no longer held. math.huge when no leases are kept.
function M.expires(holder)
    if not holder.lease then return retry_after and 0 or math.huge end
    return host.database_lease_expires(holder.lease)
end

-- Whether a row held ahead may start now: its reservation expires later than the
-- start's statement could land (a quarter lease from now, a second at most).
function M.safe_to_start(record)
    if not retry_after then return true end
    return M.expires(record) >= host.microtime() + math.min(1, lease / 4)
end

-- Whether job's lease has held so far: while it runs, and after (as it was when
-- it ended).
function M.intact(job)
    if job.lease then return M.expires(job) > 0 end
    return not job.lease_lapsed
end

-- job ended: no more renewals; says so when its lease had run out.
function M.release(job)
    local handle = job.lease
    if not handle then return end
    held[handle], job.lease = nil, nil
    if host.database_lease_expires(handle) == 0 then job.lease_lapsed = true end
    if host.database_lease_end(handle) then say_lapse(job) end
end

-- Says which jobs in flight lost their lease since the last look.
function M.say_lapses()
    for _, handle in ipairs(host.database_lease_lapses()) do
        if held[handle] then say_lapse(held[handle]) end
    end
end

return M
