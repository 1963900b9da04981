-- luaworker.worker.database_starts: the starts of jobs held ahead on the database
-- queue (worker/database_reservations.lua holds rows ahead at --concurrency=1 on
-- PostgreSQL and MariaDB). A held row is reserved with its attempt not counted, so
-- that it comes back uncharged whatever dies; its job's start counts the attempt in
-- one statement (with the deletes of jobs that ended, on PostgreSQL), sent whole
-- before the job runs and confirmed later, as the Redis form sends a start and reads
-- its reply later. A worker killed once the statement is sent has it committed by
-- the server all the same; the job then comes back with its attempt counted, by
-- Laravel's rule for a job that ran.
--
-- Starts go out on connections of the queue's pool, up to MOST_SENT unconfirmed at
-- once, so that the server commits them together (one disk sync for several, where
-- one connection's commits each wait for their own). A start that finds no open
-- connection idle, or MOST_SENT under way, is run and waited for in the job's task.
--
-- Until its start is confirmed a job's writes that need its row as the start left
-- it wait (M.settle): its release, its failure. Its delete does not wait: it goes
-- with the next start, which may commit before this one, whose statement then
-- finds the row gone, as it should (M.delete). A start that changed no row finds the
-- row gone after the job's delete, or no longer held (its lease lapsed and another
-- worker took it): the latter is said once, naming the job, which may run twice;
-- its writes then leave the row alone. A start whose connection was lost is settled
-- by reading the row: counted already, or counted now; so is one the server rolled
-- back to end a deadlock.
local db = require "luaworker.db"
local task = require "luaworker.loop.task"
local output = require "luaworker.worker.output"
local database_leases = require "luaworker.worker.database_leases"

local M = {}

-- The most starts sent and not yet confirmed.
local MOST_SENT = 8

local jobs_table      -- the database_queue
local waited_out      -- database_reservations' wait for the database: waited_out(fn(first))
local deletes_of      -- the form's pending deletes: take() -> ids, put_back(ids), add(id)
local sent = 0        -- starts sent, not confirmed
local SETTLED = {}    -- the key M.settle_all waits on

-- Starts over jobs_table; wait is the form's waited_out (a lost connection waited
-- out); pending: { take = fn() -> ids, put_back = fn(ids), add = fn(id) }, the
-- deletes of the jobs that ended, the first two for the statements that carry them.
function M.setup(table, wait, pending)
    jobs_table, waited_out, deletes_of = table, wait, pending
end

-- Whether this worker can send starts without waiting: the pool leaves room for
-- MOST_SENT beside the worker's own connection and a job's.
function M.possible()
    return jobs_table.db.size >= 4
end

local function most_sent()
    return math.min(MOST_SENT, jobs_table.db.size - 2)
end

-- The outcome of job's start: "counted", "lost" or "unknown" (said). Wakes what
-- waits on it.
local function settled(job, outcome)
    local r = job:reserved_body()
    job.starting = nil
    if outcome == "counted" then
        r.held = nil
        database_leases.charge(job, true)
    elseif outcome == "lost" then
        job.start_lost = true
        database_leases.release(job)  -- the row is another worker's: renewed no more
        output.error(string.format("%s (attempt %s) was no longer held by this worker when its start "
            .. "reached the database (its reservation expired, and another worker may have taken it): "
            .. "%s", output.job_name(job), job:attempts(),
            job.sent_ahead and "it may run twice" or "it runs elsewhere, not here"), job)
    else
        -- (its writes go on: a delete is right either way; a release finds the row
        -- only if it was counted, and leaves it to come back once it expires if not)
        output.error(string.format("%s (attempt %s): whether its start counted its attempt could not "
            .. "be read (the database out of reach, or a stop)", output.job_name(job), job:attempts()), job)
    end
    task.wake(job)
    task.wake(SETTLED)
end

-- After a start whose reply was lost with its connection (or that a retry on a
-- new connection found done): the row as it is now tells whether it was counted
-- (while its lease held: once lapsed, another worker's pop counts the same); one
-- still held uncounted is counted now.
local function settle_by_reading(job, sql_without_deletes)
    local r = job:reserved_body()
    return waited_out(function()
        local attempts = jobs_table:reserved_attempts(r.id)
        if job.delete_sent and not attempts then return "counted" end
        if attempts == r.attempts then
            return database_leases.intact(job) and "counted" or "lost"
        end
        if attempts == r.attempts - 1 and jobs_table.db:update(sql_without_deletes) > 0 then
            return "counted"
        end
        return "lost"
    end)
end

-- Runs job's start statement sql (carrying ids, the deletes it took) and settles it,
-- in a task of its own (a job stopped for its timeout meanwhile leaves it be).
local function run_start(job, sql, ids, sql_without_deletes)
    local ok, changed = pcall(jobs_table.db.update, jobs_table.db, sql)
    local outcome = "counted"
    if ok and changed == 0 and job.delete_sent and database_leases.intact(job) then
        -- its delete, sent with a later start, came first: no other worker could
        -- have taken the row while its lease holds
        changed = 1
    end
    if not ok or changed == 0 then
        if not ok then
            deletes_of.put_back(ids)
            if not db.lost_connection(changed) and not db.rolled_back(changed) then
                output.error(output.job_name(job) .. ": could not count its attempt as it started ("
                    .. tostring(changed.message or changed) .. ")", job)
            end
        end
        local read, result = pcall(settle_by_reading, job, sql_without_deletes)
        outcome = read and result or "unknown"
    end
    sent = sent - 1
    settled(job, outcome)
end

local function ended(_, ok, err)
    if not ok then output.error("a job's start: " .. tostring(err)) end
end

-- Counts the attempt of job, held ahead, as it starts (in its task, before its
-- handler runs). Returns true once its statement is sent (or, without room to send
-- it at once, done); false, giving nothing back, when its row's lease has lapsed or
-- is about to (the caller gives back the rows held and pops afresh); nil when the
-- statement, waited for, found the row taken (said): the job is not to run.
function M.start(job)
    local r = job:reserved_body()
    if not database_leases.safe_to_start(r) then return false end
    database_leases.hold(job)
    local reserved_at = database_leases.reserved_at_now()
    local ids = jobs_table:starts_carry_deletes() and deletes_of.take() or {}
    local sql = jobs_table:start_statement(r, reserved_at, ids)
    local sql_without_deletes = #ids > 0 and jobs_table:start_statement(r, reserved_at) or sql
    r.reserved_at = reserved_at
    database_leases.charge(job, false)
    sent = sent + 1
    job.starting = true
    -- with an open connection idle, the statement is sent before spawn returns (it is
    -- the task's first wait); else the job waits for it
    job.sent_ahead = sent <= most_sent() and db.ready(jobs_table.db)
    task.spawn(ended, nil, run_start, job, sql, ids, sql_without_deletes)
    if job.sent_ahead then return true end
    if not M.settle(job) then return nil end
    return true
end

-- Waits until job's start is settled; returns whether its row is still this
-- worker's (false: its start found it taken; the job's writes leave it alone).
function M.settle(job)
    while job.starting do task.suspend(job) end
    return not job.start_lost
end

-- job ended: its delete goes with the next start or pop (one sent before this
-- start's statement runs makes it change no row: settle_by_reading knows why).
function M.delete(job)
    if job.start_lost then return end
    job.delete_sent = true
    deletes_of.add(job:reserved_body().id)
end

-- Waits until every start sent is settled.
function M.settle_all()
    while sent > 0 do task.suspend(SETTLED) end
end

return M
