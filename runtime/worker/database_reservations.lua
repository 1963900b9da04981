-- luaworker.worker.database_reservations: taking jobs from Laravel's database queue
-- (queue/database_queue.lua), the worker's form for a connection named "database",
-- beside worker/reservations.lua's for Redis; worker.lua asks the same of both.
--
-- A pop reserves rows and charges their attempts in the database (the rows'
-- attempts), so the worker pops jobs only when it can start them at once: up to one
-- per free slot of --concurrency, in one pop (one commit), started in the same turn
-- of the loop; no heartbeat. The few a stop, a pause or maintenance finds popped and
-- not started are given back, their attempts uncounted.
--
-- A worker that runs one job at a time on PostgreSQL or MariaDB holds rows ahead
-- instead: a pop reserves as many as it can start within BATCH_BUDGET (at most
-- HOLD_MOST) without counting their attempts, their leases renewed while they wait
-- (worker/database_leases.lua); each job's start counts its attempt, sent without
-- waiting (worker/database_starts.lua). Rows held and not started come back
-- uncharged whatever happens: given back by a stop, a pause or maintenance, once they
-- waited HOLD seconds behind a job still running, or when a lease lapses; their
-- reservation expires within a lease once the worker is gone.
--
-- A job in flight keeps its reservation, renewed while it runs by a thread of the
-- worker (worker/database_leases.lua). A job whose worker died comes back within a
-- lease (two heartbeats, or retry_after when less): the next pop takes it, its attempt
-- counted, by Laravel's own rules. The one that had the CPU when its process was
-- killed for its timeout, or crashed, first gets Laravel's rules for that from the
-- worker that replaces it (the supervisor names its row), and so does a job
-- stopped past its timeout: one not failed comes back at once (M.abandon).
--
-- An idle worker looks again every --sleep seconds, as queue:work does; on
-- PostgreSQL with the notify trigger installed (queue/database_notifications.lua,
-- found when the worker starts) a job pushed to one of its queues ends that wait at
-- once.
--
-- The delete of a job that ended rides on the next pop, in its transaction (one
-- commit a job, not two: each commit is a sync of the database's disk), only where
-- that pop follows at once: in the same turn of the event loop as the job's end, or
-- of the end of a pop under way then. Otherwise (the worker rests, sleeps, waits for
-- a job, a slot, a hook or a cache read, holds or stops) it is written in the next
-- turn, in a task of its own: a finished job's row never outlives its reservation
-- while its worker lives. A worker that dies in between leaves such a job reserved,
-- to run again once its reservation expires (retry_after after its pop, or a lease
-- after its last renewal), as a Redis worker that dies before its delete is
-- written.
--
-- A database that cannot be reached (luaworker.db's lost connection: down, restarting)
-- is waited out, said once when it starts and once when it ends: a pop, a delete or
-- a release is tried again, 1, 2, 4... up to 30 s apart, the job's row left as it
-- is meanwhile (reserved, or available to the next pop). A stop signal ends the
-- wait: a job it held stays reserved and runs again once its reservation expires.
local cjson = require "cjson"
local host = require "luaworker.host"
local db = require "luaworker.db"
local queue = require "luaworker.queue"
local database_queue = require "luaworker.queue.database_queue"
local database_notifications = require "luaworker.queue.database_notifications"
local failed_jobs_kept = require "luaworker.queue.failed_jobs_kept"
local events = require "luaworker.base.events"
local output = require "luaworker.worker.output"
local jobs = require "luaworker.worker.job"
local database_leases = require "luaworker.worker.database_leases"
local database_starts = require "luaworker.worker.database_starts"
local task = require "luaworker.loop.task"
local settings = require "luaworker.base.settings"
local paused = require("luaworker.worker.queue_paused").paused

local decode = cjson.new().decode

local M = {}

-- As reservations.BATCH_BUDGET (in_flight.room): none, so that a pop takes no more
-- jobs than there are free slots (a job popped has its attempt counted); rows held
-- ahead (uncounted) as many as can start within 0.05 s, at most HOLD_MOST.
M.BATCH_BUDGET = 0
local HOLD_BUDGET, HOLD_MOST = 0.05, 32
-- Seconds a row held ahead may wait for its turn (as reservations' HOLD).
local HOLD = 1

local options
local waited_out, pending_deletes, give_back_popped  -- (defined below)
local jobs_table     -- the database_queue over the connection's settings
local listener       -- the jobs table's notifications (PostgreSQL, the trigger installed), or nil
local unreachable_since    -- host.clock() since the database cannot be reached (said), or nil
local gives_up             -- the worker's rule for a run meant to end (see M.setup)
local holding = false      -- pops hold rows ahead (see the header)

-- The connection's settings (DB_QUEUE_* and the app's database connection), with
-- --retry-after over DB_QUEUE_RETRY_AFTER when it is given. Raises for a bad setting.
function M.settings(cli_options, given)
    local s = database_queue.settings()
    if given.retry_after then s.retry_after = cli_options.retry_after end
    return s
end

-- Raises when the jobs table cannot be used for a lasting reason (no table, a
-- column missing); a database that cannot be reached now is waited out by the
-- first pop. one_shot (a run meant to end: --once, --stop-when-empty): {seconds =,
-- now = a function saying whether the rule applies now}: an outage is waited out
-- that long at most, then the wait raises.
function M.setup(one_shot)
    gives_up = one_shot
    options = settings.options
    jobs_table = database_queue.new(M.settings(options, settings.given or {}))
    local ok, err = pcall(jobs_table.check, jobs_table)
    if not ok and not db.lost_connection(err) then
        error("the database queue's table " .. jobs_table.table .. ": " .. tostring(err), 0)
    end
    -- (statistics are an optimisation: a refusal or an outage leaves them to autovacuum)
    if ok then pcall(jobs_table.gather_statistics, jobs_table) end
    -- (a database that cannot be reached now: the worker polls, as without the trigger)
    local found, installed = pcall(database_notifications.installed, jobs_table)
    if found and installed then listener = database_notifications.listener(jobs_table) end
    database_leases.start(jobs_table)
    database_starts.setup(jobs_table, waited_out, pending_deletes)
    holding = options.concurrency == 1 and not options.once and options.rest <= 0
        and jobs_table.db.driver_name ~= "sqlite" and database_leases.kept() and database_starts.possible()
    M.BATCH_BUDGET = holding and HOLD_BUDGET or 0
end

local function say_unreachable(err)
    if unreachable_since then return end
    unreachable_since = host.clock()
    output.error("cannot reach the database of the queue (" .. tostring(err.message or err) .. "); "
        .. "its jobs stay as they are, tried again every "
        .. (gives_up and string.format("second for up to %ds", gives_up.seconds) or "30 s at most"))
end

local function say_back()
    if not unreachable_since then return end
    unreachable_since = nil
    output.error("the database of the queue can be reached again")
end

-- Whether a wait for the database goes on after err: a lost connection, unless a
-- run meant to end has waited gives_up.seconds (then at most the rest of it).
local function retry(err)
    if not db.lost_connection(err) then return false end
    if not gives_up or not gives_up.now() then return true end
    local left = gives_up.seconds - (host.clock() - (unreachable_since or host.clock()))
    return left > 0 and math.min(left, 1)
end

-- fn(first) until it returns, a lost connection waited out; first is false on the
-- tries after one whose connection was lost (it may have committed). A statement or
-- transaction the server rolled back to end a deadlock (the worker's own
-- connections, a pop beside deletes and starts, or other workers') is run again at
-- once, up to ROLLED_BACK_TRIES times in all.
local ROLLED_BACK_TRIES = 5
function waited_out(fn)
    local first = true
    return db.wait_out(function()
        local was_first = first
        first = false
        for _ = 2, ROLLED_BACK_TRIES do
            local results = { pcall(fn, was_first) }
            if results[1] then return unpack(results, 2, table.maxn(results)) end
            if not db.rolled_back(results[2]) then error(results[2], 0) end
        end
        return fn(was_first)
    end, retry, say_unreachable, say_back)
end

-- What a run meant to end waits for before it gives up (worker.lua).
M.UNREACHABLE = "reaching the database of the queue"

-- Whether the database of the queue cannot be reached now (an outage said, not yet
-- over).
function M.in_outage()
    return unreachable_since ~= nil
end

-- A job of this form (worker/job.lua): the row's id and attempts (counted by the
-- pop); delete and release act on its row.
function M.id(job) return job:reserved_body().id end
function M.attempts(job) return job:reserved_body().attempts end

local deletes = {}  -- ids of the jobs that ended, whose rows go with the next pop

pending_deletes = {
    take = function()
        local ids = deletes
        deletes = {}
        return ids
    end,
    put_back = function(ids)
        for _, id in ipairs(ids) do deletes[#deletes + 1] = id end
    end,
}

function M.delete(job)
    if job:reserved_body().held or job.start_lost then return database_starts.delete(job) end
    deletes[#deletes + 1] = job:reserved_body().id
end

local popping = false       -- a pop is under way (it took the deletes it found)
local flush_armed = false   -- a turn's-end flush (arm_flush) is due

local writing = 0          -- flush_deletes under way (in any task)
local WRITTEN = {}         -- the key settle_deletes waits on for them to end

-- Writes the deletes not yet written.
local function flush_deletes()
    if #deletes == 0 then return end
    local ids = deletes
    deletes = {}
    writing = writing + 1
    local ok, err = pcall(waited_out, function() jobs_table:delete_many(ids) end)
    writing = writing - 1
    if writing == 0 then task.wake(WRITTEN) end
    if not ok then
        for _, id in ipairs(ids) do deletes[#deletes + 1] = id end
        error(err, 0)
    end
end

-- Writes the deletes not yet written and waits for those another task is writing
-- (before the worker holds or stops: none may be lost with the process).
local function settle_deletes()
    flush_deletes()
    while writing > 0 do task.suspend(WRITTEN) end
    flush_deletes()  -- (one that failed put its ids back)
end

function M.release(job, delay, keep_attempts)
    if not database_starts.settle(job) then return end
    waited_out(function()
        jobs_table:release(job:queue(), job:reserved_body(), delay, keep_attempts)
    end)
end
-- A job that no longer runs (its worker died, or it was stopped past its timeout)
-- and was not failed: its lease ends and so does its reservation, now, so that the
-- next pop takes it again with the attempt it used counted.
function M.abandon(job)
    if not database_starts.settle(job) then return database_leases.release(job) end
    database_leases.release(job)
    waited_out(function() jobs_table:expire_reservation(job:reserved_body(), host.now()) end)
end
function M.start(job)
    if job:reserved_body().held then
        local started = database_starts.start(job)
        if started ~= false then return started == true end
        output.error(output.job_name(job) .. ": its row's reservation came near its end while it "
            .. "waited its turn (the database out of reach, or a handler that held the loop): the "
            .. "rows held ahead go back, uncharged, and the worker takes them again", job)
        give_back_popped(job)
        return false
    end
    database_leases.hold(job)
    return true
end
function M.running() end

local function flushed(_, ok, err)
    if not ok then output.error("cannot delete the jobs that ended: " .. tostring(err.message or err)) end
end

-- The turn's end: the deletes no pop took in this turn are written now, in a task of
-- their own (an error is logged; they are tried again with the next pop), unless a
-- pop is under way (its end arms this again).
local function flush_at_turn_end()
    flush_armed = false
    if popping or #deletes == 0 then return end
    task.spawn(flushed, nil, flush_deletes)
end

-- Makes sure the deletes waiting for a pop are written at the end of this turn of
-- the event loop, unless a pop takes them first.
local function arm_flush()
    if flush_armed or #deletes == 0 then return end
    flush_armed = true
    task.after(0, flush_at_turn_end)
end

-- A held job's delete (database_starts.delete): as M.delete's.
function pending_deletes.add(id)
    deletes[#deletes + 1] = id
    arm_flush()
end

-- A job in flight ended: its delete waits for a pop in this turn, else is written
-- at the turn's end (arm_flush).
function M.finished(job)
    database_leases.release(job)
    arm_flush()
end

-- What a failed-job store calls to remove a job of this form: the row goes; for
-- luaworker's Redis store, its record is written first (no reservation there). A
-- job the app's store refuses for good is kept in the jobs table, its row become
-- the kept one in one statement (failed_jobs_kept): an app of the database queue
-- may have no Redis.
-- (A job held ahead waits for its start to be settled: database_starts.settle.)
local job_of_record = setmetatable({}, { __mode = "kv" })  -- record -> its job (held ahead)
local function ours(record)
    local job = job_of_record[record]
    return not job or database_starts.settle(job)
end
M.removal = {
    delete_reserved = function(q, record)
        if not ours(record) then return end
        waited_out(function() jobs_table:delete_reserved(q, record.id) end)
    end,
    fail = function(q, record, failed)
        queue.fail(q, "", failed)
        if not ours(record) then return end
        waited_out(function() jobs_table:delete_reserved(q, record.id) end)
    end,
    keep_kept = function(q, record, failed)
        if not ours(record) then return end
        waited_out(function() failed_jobs_kept.keep(jobs_table, record.id, q, failed) end)
    end,
}
function M.removal.keeper()
    return { keep = M.removal.keep_kept, where = failed_jobs_kept.where(jobs_table),
        driver = "luaworker-database" }
end

-- A job of queue q from its row's record; a payload that cannot be decoded is run
-- as a job that fails at once (job.undecodable says why), its row kept in the
-- failed store.
local function job_of(q, record)
    local decoded, payload = pcall(decode, record.payload)
    local problem
    if not decoded or type(payload) ~= "table" then
        problem = decoded and "not a JSON object" or tostring(payload)
        payload = {}
    end
    local job = jobs.new(q, record.payload, record, payload, M)
    if record.held then job_of_record[record] = job end
    job.undecodable = problem
    job.number = tonumber(record.id)  -- what the supervisor is told of the job that has the CPU
    return job
end

local popped = {}  -- records popped, not started yet (each a job of the loop's next turns)
local popped_at    -- host.clock() when the pop of those records was sent

-- The next job popped and not started, or nil.
local function take_popped()
    local record = table.remove(popped, 1)
    if not record then return nil end
    local job = job_of(record.queue, record)
    events.fire("popped", job)
    return job
end

-- A row a pop leaves for its payload's length (see M.next_job) is said once, when a
-- pop of its queue finds nothing, looked for at most every OVERSIZED_EVERY seconds.
local OVERSIZED_EVERY = 60
local oversized_said = {}    -- row id -> true
local oversized_looked = {}  -- queue -> host.clock() of the last look

local function say_oversized(q, max_bytes)
    local clock = host.clock()
    if oversized_looked[q] and clock - oversized_looked[q] < OVERSIZED_EVERY then return end
    oversized_looked[q] = clock
    local ok, rows = pcall(jobs_table.oversized, jobs_table, q, max_bytes)
    if not ok then return end  -- (the next pop says what is wrong with the database)
    for _, row in ipairs(rows) do
        local id = tostring(row.id)
        if not oversized_said[id] then
            oversized_said[id] = true
            output.error(string.format("queue %s: job %s has a payload of %d bytes, longer than the %d "
                .. "bytes a pop may take under --memory-limit=%d (a quarter of it): it stays in table %s, "
                .. "not popped, for a worker that can hold it (a larger --memory-limit, or PHP's "
                .. "queue:work)", output.text(q), id, row.bytes, max_bytes, options.memory_limit,
                jobs_table.table))
        end
    end
end

-- Worker::getNextJob: the first queue in --queue order that is not paused and has
-- an available job wins; up to limit jobs of it (the free slots), in one pop, whose
-- payloads together fit in a quarter of --memory-limit (settings.max_pop_bytes: the
-- first always). A row whose payload alone is longer is never popped: it stays as
-- it is, attempts uncounted, for a worker that can hold it, and the jobs behind it
-- run (said once: say_oversized). Returns one (the others come with the next calls)
-- or nil; raises what the database raises.
function M.next_job(queues, limit)
    events.fire("popping", nil, nil, { queue = options.queue_list })
    if #popped > 0 then return take_popped() end
    local max_bytes = settings.max_pop_bytes()
    if holding then limit = math.min(limit, HOLD_MOST) end
    for _, q in ipairs(queues) do
        if not paused(q) then
            local ids = deletes
            deletes = {}
            popping = true
            local sent_at = host.clock()
            local ok, list = pcall(waited_out, function()
                return jobs_table:pop(q, ids, limit, max_bytes, database_leases.reserved_at_now(), holding)
            end)
            popping = false
            if ok then
                for _, record in ipairs(list) do
                    if record.held then database_leases.hold_record(record) end
                end
            end
            if not ok then
                for _, id in ipairs(ids) do deletes[#deletes + 1] = id end
            end
            -- the deletes of the jobs that ended during the pop (or that it failed to
            -- write) ride on a pop in this turn, or are written at its end
            arm_flush()
            if not ok then error(list, 0) end
            if #list > 0 then
                popped, popped_at = list, sent_at
                return take_popped()
            end
            if max_bytes then say_oversized(q, max_bytes) end
        end
    end
    return nil
end

-- Gives back the jobs popped and not started (a stop, a pause, maintenance, a wait
-- past HOLD), and job's (one taken whose start found its lease near its end, said),
-- if given. A row held ahead whose lease ran out meanwhile may be another worker's
-- now: it is left as it is (its reservation over, the next pop of any worker takes
-- it, uncounted), and said once.
function give_back_popped(job)
    local list = popped
    popped = {}
    if job then table.insert(list, 1, job:reserved_body()) end
    if #list == 0 then return end
    local ours, lapsed = {}, nil
    for _, record in ipairs(list) do
        if record.held and database_leases.expires(record) == 0 then
            lapsed = lapsed or record
        else
            ours[#ours + 1] = record
        end
        database_leases.release_record(record)
    end
    if lapsed and not job then
        local first = job_of(lapsed.queue, lapsed)
        output.error(output.job_name(first) .. ": its row's reservation ran out while it waited its "
            .. "turn (the database out of reach, or a handler that held the loop): the rows held ahead "
            .. "go back, uncharged, and the worker takes them again", first)
    end
    waited_out(function() jobs_table:unreserve(ours) end)
end

-- Waits until a job is pushed to one of queues (the listener's notifications) or
-- seconds pass, a signal ends the wait, or the listener's connection fails (then
-- the rest of the time is slept; the next wait makes a new connection).
local function listen(queues, seconds)
    local ours = {}
    for _, q in ipairs(queues) do ours[q] = true end
    local deadline = host.microtime() + seconds
    while true do
        local left = deadline - host.microtime()
        if left <= 0 then return end
        local pushed = listener:wait(left)
        if not pushed then
            host.sleep(left, true)
            return
        end
        if #pushed == 0 then return end  -- the time passed, a signal, or a new connection
        for _, q in ipairs(pushed) do
            if ours[q] then return end
        end
    end
end

-- No job: wait --sleep seconds (a stop signal ends it), as queue:work sleeps; with
-- the listener, a job pushed to one of queues ends the wait. --sleep=0 looks again
-- at once, as queue:work's sleep(0), after a turn of the event loop (the timers,
-- the signals and the jobs in flight go on: a SQLite pop does not yield).
function M.wait(queues)
    flush_deletes()
    local seconds = options.sleep
    if seconds <= 0 then
        host.sleep(0.001, true)
        return
    end
    if listener then
        listen(queues or settings.queues, seconds)
    else
        host.sleep(seconds, true)
    end
end

-- The host.clock() time past which the rows held ahead and not started should go
-- back rather than wait on for their turn behind a job still running (HOLD after
-- their pop), or nil when none is held.
function M.held_until()
    if holding and #popped > 0 then return popped_at + HOLD end
    return nil
end

-- What the worker says when give_back_held or retire raised (the jobs whose deletes
-- or give-backs were not written run again once their reservations expire).
M.GIVE_BACK_FAILED = "could not delete the jobs that ended (or give back those popped and not "
    .. "started), which run again once their reservations expire"

-- The jobs popped and not started go back, and the deletes not yet written are
-- written; no other worker's jobs need recovering (an expired reservation is popped
-- again).
function M.give_back_held()
    give_back_popped()
    database_starts.settle_all()
    settle_deletes()
end
function M.retire()
    if listener then listener:close() end
    M.give_back_held()
end
-- What the worker this one replaces left (worker.lua's recover_predecessor): the
-- job that had the CPU when it was killed for running past its timeout, or when
-- it crashed (the supervisor names its row id), if its row is still reserved, for
-- Laravel's rules on a timeout or a crash; the other jobs it had in flight come
-- back when their leases run out (no record names them).
function M.recover_predecessor()
    local predecessor, number, timeout, death = host.predecessor()
    if not predecessor or not number or number == 0 then return {} end
    local record = waited_out(function() return jobs_table:reserved(number) end)
    if not record then return {} end
    local job = job_of(record.queue, record)
    if timeout > 0 then return { { job = job, timeout = timeout } } end
    if death ~= "" then return { { job = job, timeout = 0, death = death } } end
    return {}
end
function M.recover_dead_workers() end
function M.report_send_errors() end

return M
