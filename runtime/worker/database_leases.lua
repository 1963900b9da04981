-- luaworker.worker.database_leases: the leases of the jobs in flight on the database
-- queue. A job whose reservation is a third of retry_after old has its row's
-- reserved_at renewed to now, and so again every third of retry_after while it runs
-- (queue/database_queue.lua's renew: one UPDATE, one commit, a job), so that it
-- expires retry_after after its last renewal, not after its pop: no worker, PHP's or
-- luaworker's, takes it again while it runs, however long. A job shorter than that
-- costs nothing. The renewals are the worker loop's: a handler that computes without
-- yielding holds them up, and then its job is as safe as Laravel makes it (until
-- retry_after after the last renewal). A lease that ran out (the database out of
-- reach that long) is said once, naming the job: it may run twice. A worker that
-- dies leaves its jobs to retry_after, as Laravel's does.
local host = require "luaworker.host"
local output = require "luaworker.worker.output"
local periodic = require "luaworker.base.periodic"

local M = {}

local jobs_table, every, retry_after
local held = {}   -- job -> true: the jobs in flight

-- Starts the renewals of jobs_table's reservations (a database_queue).
function M.start(table_)
    jobs_table, retry_after = table_, table_.retry_after
    every = retry_after / 3
    periodic.start(every, M.renew_due, "renew the reservations of the jobs in flight")
end

function M.hold(job)
    if jobs_table then held[job] = true end
end

-- job ended: no more renewals; says so when its lease had run out.
function M.release(job)
    if not held[job] then return end
    held[job] = nil
    M.check_lapse(job)
end

-- Says once that job's reservation expired while it ran.
function M.check_lapse(job)
    local record = job:reserved_body()
    if job.lease_lapsed or host.now() - record.reserved_at < retry_after then return end
    job.lease_lapsed = true
    output.error(string.format("could not renew the reservation of %s (attempt %s) before it "
        .. "expired (the database out of reach): another worker may run it too",
        output.job_name(job), job:attempts()), job)
end

-- Renews the reservations of the jobs in flight that are due (see above).
function M.renew_due()
    local now = host.now()
    local due = {}
    for job in pairs(held) do
        if now - job:reserved_body().reserved_at >= every then due[#due + 1] = job end
    end
    for _, job in ipairs(due) do
        if held[job] then
            M.check_lapse(job)
            jobs_table:renew(job:reserved_body(), host.now())
        end
    end
end

return M
