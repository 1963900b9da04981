-- luaworker.worker.reservations: taking jobs (Laravel's Worker::getNextJob), and the jobs a
-- worker process holds, accounted for in Redis so that whatever dies, each job is
-- run to its end under Laravel's rules or given back with no attempt charged.
--
-- A pop reserves up to BATCH_MAX jobs, each as by its own Laravel pop, and records
-- them against this process's id in the same script (scripts/pop.lua: its record
-- queues:Q:luaworker:<id>, the set queues:Q:luaworker:workers, its heartbeat
-- queues:Q:luaworker:<id>:alive). They start in number order (up to --concurrency
-- of them run at once); while a full batch is taken, the pop of the next one is
-- under way. A job's start is recorded (the record's field `started`) and written
-- to Redis, with whatever else is queued (the deletes of jobs that ended), before
-- its handler runs; the next pop drops the record's entries of the jobs that ended
-- since the last one. Jobs numbered above `started` were not started, and go back
-- to the head of their queue as they were, attempts uncharged
-- (scripts/give_back.lua):
--   - when this worker held them over HOLD seconds (behind a slow job: then,
--     while it runs on, so that another worker runs them meanwhile), pauses,
--     stops, lost a pop's reply, or outlived its lease (below); held time counts by
--     the wall clock too, by which their reservations expire: a machine paused
--     (a virtual machine stopped or snapshotted, a laptop asleep) finds its
--     monotonic clock stood still while the reservations ran out;
--   - when this worker died: at once by the worker its supervisor starts in its
--     place ("killed", told by host.predecessor), else by any luaworker on the queue
--     that finds its heartbeat gone ("dead"), within 1.5 heartbeat periods.
-- A started job stays reserved while it runs, its lease renewed by the host
-- (worker/lease_keeper.h); when its worker dies Laravel's rules apply to it: it
-- comes back with its attempt counted (at once when the successor knows, else when
-- its lease runs out), or gets the timeout rules when it was killed for running past
-- its timeout.
--
-- The heartbeat lives --heartbeat seconds (TTL); the host sets it every TTL/4 while
-- the loop runs, and so does each pop. A confirmed heartbeat holds the lease for
-- TTL/2 (runtime/worker/heartbeat_binding.h). This worker starts a job reserved ahead
-- only when the lease has been held without a break since its pop: after a break
-- (an outage, a handler computing that long without yielding), another process may
-- have taken it for dead and given the job back, so it gives back what is left and
-- pops afresh. The job running meanwhile is unaffected.
local cjson = require "cjson"
local host = require "luaworker.host"
local redis = require "luaworker.redis"
local queue = require "luaworker.queue"
local events = require "luaworker.base.events"
local output = require "luaworker.worker.output"
local jobs = require "luaworker.worker.job"
local settings = require "luaworker.base.settings"
local failed_jobs = require "luaworker.queue.failed_jobs"
local values = require "luaworker.base.values"
local periodic = require "luaworker.base.periodic"
local paused = require("luaworker.worker.queue_paused").paused

local decode = cjson.new().decode

local M = {}

-- Seconds a job reserved ahead may wait for its turn.
local HOLD = 1
-- The most jobs one pop takes, and the time a batch should take to run (the
-- worker reserves no more than it can start within that time: M.next_job's limit).
local BATCH_MAX, BATCH_BUDGET = 32, 0.05
M.BATCH_BUDGET = BATCH_BUDGET
-- Shares of the heartbeat's TTL: between two heartbeats, of the lease, between two
-- looks for dead workers.
local BEAT, LEASE, SCAN = 0.25, 0.5, 0.5
-- Seconds a worker's record outlives the reservations of its last pop.
local RECORD_MARGIN = 60
-- Seconds a stopping worker waits for Redis to give its jobs back; past that they
-- come back once another luaworker finds its heartbeat gone.
local RETIRE_WAIT = 5
-- Seconds between two looks for jobs in flight whose lease lapsed.
local LAPSE_LOOK = 1

local options                  -- settings.options
local id                       -- this process's id (host.identity)
local ttl                      -- the heartbeat's TTL, seconds
local next_number = 1          -- the number the next job taken gets
local touched = {}             -- queue -> true: those this worker may have a record of
                               -- (a pop of theirs reached Redis)
local unsure = false           -- a pop's reply was lost: its jobs may be recorded
local next_scan = 0            -- host.clock() of the next look for dead workers
local migrated_at = {}         -- queue -> the Unix second its due jobs were last moved
-- the batch being run: queue, {payload, reserved} pairs, the next to run, when its
-- pop was sent (host.clock() and host.microtime()), when its first job started, the
-- number of its first job
local ahead = { q = nil, jobs = {}, next = 1, at = 0, wall = 0, started = 0, first = 0 }
local pending                  -- the pop of the next batch under way: {q, handle, at, wall, number}
local batch_size = 1
-- The jobs handed over to run (M.running), in number order: running[first..last]
-- their numbers, ended[number] = true once finished; newest: the last one's.
local running = { first = 1, last = 0, newest = nil }
local ended = {}
-- The jobs in flight whose lease the host renews: handle -> job.
local leased = {}
local reserved_keys = {}   -- queue -> its reserved set's key
local hold, report_lapse

-- What the worker says when give_back_held or retire raised.
M.GIVE_BACK_FAILED = "could not give back the jobs reserved ahead, which come back once this "
    .. "worker's heartbeat is gone"

-- What a run meant to end waits for before it gives up (worker.lua).
M.UNREACHABLE = "Redis running the queue's commands"

-- Whether Redis cannot run the queue's commands now (an outage under way).
function M.in_outage()
    return redis.in_outage()
end

-- Raises what would make the queue's commands fail for good (redis.is_refusal): a
-- user or password Redis refuses, an ACL without SCRIPT LOAD, EVALSHA or the
-- queue's keys, a database Redis does not have; found by a script that only reads
-- (scripts/size.lua on each queue's keys), tried once. An outage is no such thing:
-- the first pop waits it out.
local function check_access()
    for _, q in ipairs(settings.queues) do
        local problem = queue.cluster_problem(q)
        if problem then error(problem, 0) end
    end
    for _, q in ipairs(settings.queues) do
        local list, delayed, reserved = queue.keys(q)
        local ok, value, kind = host.script("queue", "size", 3, list, delayed, reserved)
        if not ok and redis.is_refusal(value, kind) then
            error(string.format("Redis refuses the commands of queue %s: %s", q, value), 0)
        end
        if not ok then return end
    end
    for _, q in ipairs(settings.queues) do queue.note_failed_queue(q) end
end

-- Checks that Redis lets this worker use its queues (check_access), then starts the
-- heartbeat of this process on each of them. (A Redis outage's wait is the
-- worker's: redis.wait_out_failures.)
function M.setup()
    check_access()
    options = settings.options
    id = host.identity()
    ttl = options.heartbeat
    local keys = {}
    for i, q in ipairs(settings.queues) do keys[i] = select(3, queue.worker_keys(q, id)) end
    host.heartbeat(ttl * BEAT, math.floor(ttl * 1000), ttl * LEASE, options.queue_list, unpack(keys))
    periodic.start(LAPSE_LOOK, M.report_lapses, "look for jobs whose lease lapsed")
end

-- Whether the jobs of a pop sent at host.clock() time `sent` are still this
-- worker's: its lease has been held without a break since then.
local function still_ours(sent)
    local since = host.lease()
    return since ~= nil and since <= sent
end

-- Whether jobs of a pop sent at host.clock() time `at` (host.microtime() `wall`)
-- were held over HOLD seconds, by either clock.
local function held_too_long(at, wall)
    return host.clock() - at > HOLD or host.microtime() - wall > HOLD
end


-- The Unix second q's due jobs were last moved (see pop), or nil.
function M.migrated_at(q)
    return migrated_at[q]
end

-- Reports deletes and start records (redis.send) that Redis refused.
function M.report_send_errors()
    local n, message = host.send_errors()
    if n > 0 then
        output.error(string.format("Redis refused %d record(s) of a job's start or delete (%s): "
            .. "such a job runs again after retry_after", n, message))
    end
end

-- Logs a payload the pop moved to luaworker's Redis failed store (scripts/pop.lua),
-- saying how to see it when the app's failed jobs are kept elsewhere.
local function report_unusable(q, problem, record_id)
    local store = failed_jobs.settings().driver
    output.error(string.format("queue %s: %s; kept as failed job %s (see %sluaworker failed)",
        q, problem, record_id, store == "luaworker-redis" and "" or "QUEUE_FAILED_DRIVER=luaworker-redis "))
end

-- The arguments of a pop of up to count jobs of q (queue.pop), numbering its jobs.
local function pop_args(q, count)
    local now = host.now()
    local number = next_number
    next_number = next_number + count
    return { now = now, retry_after = options.retry_after, connection = settings.connection_name,
        count = count, worker = id, number = number, ttl = options.retry_after + RECORD_MARGIN,
        heartbeat_ms = math.floor(ttl * 1000), heartbeat = options.queue_list,
        finished_below = M.finished_below(), max_bytes = settings.max_pop_bytes() }, number
end

-- The number below which every job this worker took is finished: the first one
-- handed over to run that has not finished, else the one after the last.
function M.finished_below()
    local r = running
    while r.first <= r.last and ended[r[r.first]] do
        ended[r[r.first]] = nil
        r[r.first] = nil
        r.first = r.first + 1
    end
    if r.first > r.last then
        r.first, r.last = 1, 0
        return r.newest and r.newest + 1
    end
    -- the window moves to 1.. now and then, so that its keys stay the array part's
    if r.first > 4096 then
        local n = 0
        for i = r.first, r.last do
            n = n + 1
            r[n], r[i] = r[i], nil
        end
        r.first, r.last = 1, n
    end
    return r[r.first]
end

-- Says that job's lease lapsed: Redis did not confirm a renewal before its
-- reservation expired, so another worker may have taken it (see lease_keeper.h).
report_lapse = function(job)
    output.lease_lapsed(job, "Redis out of reach")
end

-- Has the lease of job, which starts, renewed while it runs (lease_keeper.h).
hold = function(job)
    local q = job:queue()
    local reserved = reserved_keys[q]
    if not reserved then
        reserved = select(3, queue.keys(q))
        reserved_keys[q] = reserved
    end
    job.lease = host.lease_job(reserved, job:reserved_body(), job.reserved_until)
    if job.lease then leased[job.lease] = job end
end

-- Stops the renewals of job's lease; returns whether it had lapsed unsaid.
local function end_lease(job)
    if not job.lease then return false end
    leased[job.lease] = nil
    local lapsed = host.lease_end(job.lease)
    job.lease = nil
    return lapsed
end

-- Says which jobs in flight lost their lease since the last look.
function M.report_lapses()
    for _, handle in ipairs(host.lease_lapses()) do
        if leased[handle] then report_lapse(leased[handle]) end
    end
end

-- Notes that job (taken by next_job, in number order) is handed over to run.
function M.running(job)
    running.last = running.last + 1
    running[running.last] = job.number
    running.newest = job.number
end

-- Notes that job, handed over to run, ended: its outcome is in Redis, or on its way
-- before the next pop (a delete), or it left this worker's hands. Its record's
-- entries go with a later pop. (Lost with a pop's reply, they stay until the
-- record expires: started and no longer reserved, they mean nothing.)
function M.finished(job)
    ended[job.number] = true
    if end_lease(job) then report_lapse(job) end
end

-- Raises err, the failure of a pop of q, noting first that its reply may have been
-- lost with it (the pop may have recorded jobs): its connection was lost, or the
-- reply did not fit under --memory-limit. A pop Redis never got took none.
local function lost_pop(q, err)
    if redis.is_error(err) and (err.kind == "connection" or err.kind == "memory") then
        unsure = true
        touched[q] = true
    end
    error(err, 0)
end

-- Pops up to count jobs of q: migrates due jobs first, then pops; an unusable
-- payload is moved to the failed store (logged) and the pop goes on. Due jobs are
-- moved once per second per queue (scores are whole seconds: that moves what moving
-- them before every pop would, at most a second later; an idle worker is woken when
-- the next one is due); in a run meant to end (--stop-when-empty, --once), a pop
-- that finds the queue empty moves them first whenever it comes, as Laravel's pop
-- always does, so that no due job is left behind. Returns the {payload, reserved}
-- pairs, the number of the first, and when the pop was sent (host.clock() and
-- host.microtime()).
local function pop(q, count)
    local now = host.now()
    local migrated = false
    if migrated_at[q] ~= now then
        queue.migrate(q, now, options.migration_batch_size)
        migrated_at[q], migrated = now, true
    end
    for _ = 1, 1000 do
        local sent, sent_wall = host.clock(), host.microtime()
        local args, number = pop_args(q, count)
        local ok, taken, problem, record_id = pcall(queue.pop, q, args)
        if not ok then lost_pop(q, taken) end
        touched[q] = true
        host.heartbeat_note(sent, sent_wall)
        M.report_send_errors()
        if problem then report_unusable(q, problem, record_id) end
        if #taken > 0 then return taken, number, sent, sent_wall end
        if not problem then
            -- a run meant to end on an empty queue: its due jobs first, as Laravel's
            -- pop, then once more (a worker that goes on is woken when they are due)
            if migrated or not (options.stop_when_empty or options.once) then
                return taken, number, sent, sent_wall
            end
            now = host.now()
            queue.migrate(q, now, options.migration_batch_size)
            migrated_at[q], migrated = now, true
        end
    end
    return {}, 0, 0, 0
end

local function start_prefetch(q, count)
    if pending or count < 2 then return end
    local args, number = pop_args(q, count)
    pending = { q = q, handle = queue.start_pop(q, args), at = host.clock(), wall = host.microtime(),
        number = number }
end

-- Waits for the pop under way. Returns its jobs (maybe none), its queue, when it
-- was sent (host.clock() and host.microtime()) and the number of its first job;
-- raises what Redis raised.
local function finish_prefetch()
    local p = pending
    pending = nil
    local ok, taken, problem, record_id = pcall(queue.finish_pop, p.handle)
    if not ok then lost_pop(p.q, taken) end
    touched[p.q] = true
    host.heartbeat_note(p.at, p.wall)
    M.report_send_errors()
    if problem then report_unusable(p.q, problem, record_id) end
    return taken, p.q, p.at, p.wall, p.number
end

-- Gives back every job this worker took and did not start, on every queue it
-- popped from: mode "own" (it goes on) or "retire" (it stops). Raises what Redis
-- raises (the jobs then come back when this worker's heartbeat is gone).
local function give_back(mode, limit)
    batch_size = 1
    ahead.jobs, ahead.next = {}, 1
    -- the pop under way may have recorded jobs: its reply first
    if pending then pcall(finish_prefetch) end
    for q in pairs(touched) do queue.give_back(q, id, mode, limit) end
    unsure = false
end

-- The next job reserved ahead and its number, or nil.
local function take_ahead()
    if ahead.next > #ahead.jobs then return nil end
    if held_too_long(ahead.at, ahead.wall) or not still_ours(ahead.at) then
        give_back("own")
        return nil
    end
    local index = ahead.next
    ahead.next = index + 1
    return ahead.jobs[index], ahead.first + index - 1
end

-- Makes taken (from q, its pop sent at times at and wall, its first job numbered
-- number) the batch being run, with the pop of the next one under way when it is
-- full. Returns its first job and number.
local function run_batch(q, taken, at, wall, number, limit)
    ahead.q, ahead.jobs, ahead.next, ahead.at, ahead.wall, ahead.first = q, taken, 2, at, wall, number
    ahead.started = host.clock()
    if #taken == batch_size then start_prefetch(q, math.min(batch_size, limit - #taken)) end
    return taken[1], number
end

-- The first job of the next batch: the pop under way's, else a pop of up to limit
-- jobs from the first queue that has one. Sizes batches to run in BATCH_BUDGET.
local function pop_batch(queues, limit)
    if #ahead.jobs > 0 then
        local per_job = (host.clock() - ahead.started) / #ahead.jobs
        batch_size = math.max(1, math.min(BATCH_MAX, math.floor(BATCH_BUDGET / math.max(per_job, 1e-6))))
    end
    ahead.jobs, ahead.next = {}, 1
    if pending then
        local taken, q, at, wall, number = finish_prefetch()
        if #taken > 0 then
            if not paused(q) and not held_too_long(at, wall) and still_ours(at) then
                return run_batch(q, taken, at, wall, number, limit)
            end
            batch_size = 1
            queue.give_back(q, id, "own")
        end
    end
    for _, q in ipairs(queues) do
        if not paused(q) then
            local taken, number, sent, sent_wall = pop(q, math.min(batch_size, limit))
            if #taken > 0 then return run_batch(q, taken, sent, sent_wall, number, limit) end
        end
    end
    return nil
end

-- A job of queue q: raw, its payload as popped; reserved, its reserved copy. The pop
-- script decoded the same bytes, so decoding fails only where this cjson is
-- stricter than Redis' (job.undecodable then says why, and the job is failed).
local function job_of(q, raw, reserved)
    local decoded, payload = pcall(decode, raw)
    local problem
    if not decoded or type(payload) ~= "table" then
        problem = decoded and "not a JSON object" or tostring(payload)
        payload = { attempts = 0 }
    end
    local job = jobs.new(q, raw, reserved, payload, M)
    job.undecodable = problem
    return job
end

-- A job of this form (worker/job.lua): its id and attempts are the payload's (the
-- reserved copy counts this attempt); delete and release act on its reserved copy.
function M.id(job) return values.value(job:payload().id) end
function M.attempts(job) return (tonumber(job:payload().attempts) or 0) + 1 end
function M.delete(job) queue.delete_reserved(job:queue(), job:reserved_body()) end
function M.release(job, delay, keep_attempts)
    queue.release(job:queue(), job:reserved_body(), host.now() + delay, keep_attempts and job:raw_body() or nil)
end
-- A job that no longer runs (its worker died, or it was stopped past its timeout)
-- and was not failed: its lease ends and so does its reservation, now, so that the
-- next migrate puts it back on its queue with the attempt it used counted.
function M.abandon(job)
    end_lease(job)
    queue.expire_reservation(job:queue(), job:reserved_body(), host.now())
end
-- What a failed-job store calls to remove a job of this form (queue/failed_jobs.lua):
-- delete_reserved(q, reserved) and fail(q, reserved, record).
M.removal = queue

-- Worker::getNextJob: the first queue in --queue order that is not paused and has
-- a job wins (a job reserved ahead first). limit: the most jobs to reserve (what
-- --max-jobs leaves, and what can start within BATCH_BUDGET). Returns the job or
-- nil; raises what Redis raises.
function M.next_job(queues, limit)
    if unsure then give_back("own") end
    events.fire("popping", nil, nil, { queue = options.queue_list })
    local q = ahead.q
    local taken, number = take_ahead()
    if not taken then
        taken, number = pop_batch(queues, limit)
        q = ahead.q
    end
    if not taken then return nil end
    local job = job_of(q, taken[1], taken[2])
    job.number = number
    -- the pop scored its reservation now + retry_after, by its own reading of now
    job.reserved_until = math.floor(ahead.wall) + options.retry_after - 1
    events.fire("popped", job)
    return job
end

-- Records that job starts, and writes that now, with what else is queued (the
-- deletes of jobs that ended), so that only the jobs in flight are between their
-- start and their outcome in Redis. (A delete is also written by the next command
-- the worker waits for.) Returns whether to run it: when the
-- connection was down (an outage the worker has seen, though its lease still
-- held), the record waits for the next connection and may reach Redis after
-- another process found the heartbeat gone and gave the job back; then the worker
-- waits for Redis and runs the job only if it is still reserved. Raises what Redis
-- raises.
function M.start(job)
    queue.start(job:queue(), id, job.number)
    host.flush("queue")
    local _, up = host.connects("queue")
    if up or queue.is_reserved(job:queue(), job:reserved_body()) then
        hold(job)
        return true
    end
    output.error(string.format("%s (attempt %s) left this worker's hands while it could not reach "
        .. "Redis (given back, or its reservation expired): it runs elsewhere, not here",
        output.job_name(job), job:attempts()), job)
    return false
end

-- The host.clock() time past which the jobs this worker reserved ahead and has not
-- started should go back rather than wait on for their turn (HOLD after their pop),
-- or nil when it holds none.
function M.held_until()
    if ahead.next <= #ahead.jobs then return ahead.at + HOLD end
    if pending then return pending.at + HOLD end
    return nil
end

-- Before the worker waits without working (paused, down for maintenance), or when
-- the jobs it holds waited past held_until: the jobs it holds go back. Raises what
-- Redis raises.
function M.give_back_held()
    give_back("own")
end

-- When the worker stops: the jobs it holds go back, its heartbeat stops and its
-- records go. Waits for Redis at most RETIRE_WAIT seconds; raises what Redis raises.
function M.retire()
    host.heartbeat_stop()
    give_back("retire", RETIRE_WAIT)
end

-- A dead worker had started job and not finished it: it comes back with the attempt
-- counted, as Laravel's does after retry_after. now: its successor, which knows the
-- process is gone, ends its reservation at once; a worker that found the heartbeat
-- gone leaves it to its lease (give_back's "dead" bounds it), since a worker cut
-- off from Redis for a while may still run it.
local function report_running(worker, job, now)
    local when = "once its lease runs out"
    if now then
        M.abandon(job)
        when = "now"
    end
    output.error(string.format("worker %s died while %s (attempt %s) ran: it goes back to its "
        .. "queue with the attempt counted %s", worker, output.job_name(job), job:attempts(), when), job)
end

-- What the worker this one replaces left, when it died without giving back its jobs:
-- the jobs it had not started go back at once. Returns the jobs it had started and
-- not finished, a list of {job =, timeout =, death =}: timeout is the job's timeout
-- when its process was ended for it (the job that had the CPU past its timeout, as
-- its supervisor says), else 0; death says how the process ended ("killed by signal
-- 11 ...", or that another job ran past its timeout). Raises what Redis raises.
function M.recover_predecessor()
    local predecessor, cpu_number, timeout, death = host.predecessor()
    if not predecessor then return {} end
    if timeout > 0 then
        death = string.format("ended because another of its jobs ran past its timeout of %ds", timeout)
    end
    local given, ended = 0, {}
    for _, q in ipairs(settings.queues) do
        local n, running = queue.give_back(q, predecessor, "killed")
        given = given + n
        for _, r in ipairs(running) do
            local job = job_of(q, r.payload, r.reserved)
            job.number = r.number
            if r.number == cpu_number and timeout > 0 then
                ended[#ended + 1] = { job = job, timeout = timeout }
            elseif death ~= "" then
                ended[#ended + 1] = { job = job, timeout = 0, death = death }
            else
                report_running(predecessor, job, true)
            end
        end
    end
    if given > 0 then
        output.error(string.format("worker %s ended without giving back its jobs: %d it had not "
            .. "started went back to the queue", predecessor, given))
    end
    return ended
end

-- Every TTL/2: gives back the jobs not started of each worker of these queues whose
-- heartbeat is gone. Raises what Redis raises.
function M.recover_dead_workers()
    local now = host.clock()
    if now < next_scan then return end
    next_scan = now + ttl * SCAN
    for _, q in ipairs(settings.queues) do
        local others = {}
        for _, w in ipairs(queue.workers(q)) do
            if w ~= id then others[#others + 1] = w end
        end
        for i, alive in ipairs(queue.alive(q, others)) do
            if not alive then
                local given, running = queue.give_back(q, others[i], "dead", nil,
                    math.ceil(host.microtime() + ttl))
                if given and given > 0 then
                    output.error(string.format("worker %s stopped beating: %d jobs it had not "
                        .. "started went back to queue %s", others[i], given, q))
                end
                for _, r in ipairs(running or {}) do
                    report_running(others[i], job_of(q, r.payload, r.reserved))
                end
            end
        end
    end
end

-- Seconds between two looks for dead workers, and until the next one.
function M.scan_interval()
    return ttl * SCAN
end

function M.until_next_scan()
    return math.max(0, next_scan - host.clock())
end

return M
