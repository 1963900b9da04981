-- luaworker.worker: `luaworker work`, Laravel's queue worker (Worker::daemon,
-- process, handleJobException, the attempt/backoff/maxExceptions rules and
-- stopIfNecessary) over Lua handlers. Reference: laravel-queue-reference.md 8.
local cjson = require "cjson"
local host = require "luaworker.host"
local redis = require "luaworker.redis"
local queue = require "luaworker.queue"
local task = require "luaworker.task"
local events = require "luaworker.events"
local handlers = require "luaworker.handlers"
local output = require "luaworker.output"
local jobs = require "luaworker.job"
local php = require "luaworker.php"
local dispatch = require "luaworker.dispatch"
local luaworker = require "luaworker"

local decode = cjson.new().decode

local M = {}

-- Exit statuses, as queue:work's.
local EXIT_OK, EXIT_MEMORY = 0, 12

-- Seconds a job reserved ahead may wait for its turn (see take_ahead).
local HOLD = 1

local MAX_ATTEMPTS_EXCEPTION = "Illuminate\\Queue\\MaxAttemptsExceededException"

local worker = {}     -- passed to jobs: fail, connection_name
local options, config
local cache_prefix    -- full prefix of the cache store's keys

-- An error as the worker reports it: class, message and the text stored in the
-- failed-job record (message and traceback).
local function exception_info(err, trace)
    local class, message
    if luaworker.is_exception(err) then
        class, message = err.class, err.message
    elseif redis.is_error(err) then
        class, message = "RedisError", err.message
    else
        class, message = "LuaError", tostring(err)
    end
    local text = tostring(err)
    if trace then
        -- the frames below the handler are luaworker's own
        trace = trace:gsub('\n\t%[string "luaworker[^\n]*', "")
    end
    if trace and trace ~= "" then
        text = trace:find(text, 1, true) == 1 and trace or (text .. "\n" .. trace)
    end
    return { value = err, class = class, message = message, text = text }
end

local function fire(name, job, exc, extra)
    if not events.has(name) then return true end
    local event = { connection_name = worker.connection_name, job = job,
        exception = exc and exc.value or nil }
    if extra then
        for k, v in pairs(extra) do event[k] = v end
    end
    return events.fire(name, event)
end

-- Fires an event whose listeners' errors must not stop the caller; they are logged.
local function fire_safely(name, job, exc, extra)
    if not events.has(name) then return true end
    local ok, result, trace = task.run(fire, name, job, exc, extra)
    if not ok then
        output.error("error in a " .. name .. " hook: " .. trace, job)
        return true
    end
    return result
end

local function to_integer(v)
    -- PHP's (int) cast of a backoff entry: leading digits, else 0.
    local n = tostring(v):match("^%s*([+-]?%d+)")
    return n and tonumber(n) or 0
end

local function split(s, sep)
    local parts = {}
    for part in (s .. sep):gmatch("(.-)" .. sep) do parts[#parts + 1] = part end
    return parts
end

local app_key  -- APP_KEY decoded, once

-- CallQueuedHandler::getCommand for a ShouldBeEncrypted job: Laravel's decrypt()
-- of data.command with APP_KEY (cipher APP_CIPHER, default AES-256-CBC), whose
-- plaintext is the serialized command serialized once more as a string. Returns
-- the serialized command, or nil, message.
local function decrypt_command(text)
    local encrypter = require "luaworker.encrypter"
    local cipher = os.getenv("APP_CIPHER")
    if not app_key then
        local raw = os.getenv("APP_KEY")
        if not raw or raw == "" then
            return nil, "data.command is encrypted (ShouldBeEncrypted) and APP_KEY is not set "
                .. "(set it, or pass the app's .env with --env-file)"
        end
        local key, err = encrypter.key(raw, cipher)
        if not key then return nil, "APP_KEY: " .. err end
        app_key = key
    end
    local plain, err = encrypter.decrypt(text, app_key, cipher)
    if not plain then return nil, "cannot decrypt data.command with APP_KEY: " .. err end
    local inner = php.unserialize(plain)
    if type(inner) ~= "string" then
        return nil, "decrypted data.command is not a serialized string, as Laravel's encrypt() makes"
    end
    return inner
end

-- The command a handler receives: data.command unserialized for object jobs, data
-- itself for string jobs. Returns value or nil, message.
local function command_of(job)
    local payload = job:payload()
    local data = payload.data
    if handlers.is_string_job(payload) then return data end
    if type(data) ~= "table" or type(data.command) ~= "string" then
        return nil, "payload has no data.command string"
    end
    local text = data.command
    if text:sub(1, 2) ~= "O:" then
        local err
        text, err = decrypt_command(text)
        if not text then return nil, err end
    end
    local command, err = php.unserialize(text)
    if command == nil then
        return nil, "data.command is not valid PHP serialize() output: " .. err
    end
    return command
end

local function value(v)
    if v == cjson.null then return nil end
    return v
end

-- PHP's truthiness, for `$a ?: $b`.
local function truthy(v)
    v = value(v)
    return v ~= nil and v ~= false and v ~= "" and v ~= 0 and v ~= "0"
end

-- How the job's class is unique (ShouldBeUnique), which PHP's serialized data does
-- not show: the handler says so with `unique = true` or `unique = "until_processing"`;
-- otherwise a command with a uniqueId or uniqueFor property is taken as unique.
local function unique_mode(handler, command)
    if handler and handler.unique ~= nil then return handler.unique end
    if type(command) == "table" and (command.uniqueId ~= nil or command.uniqueFor ~= nil) then
        return true
    end
    return false
end

-- UniqueLock::release: deletes laravel_unique_job:<class><uniqueId> in the cache
-- store (its lock connection is the 'default' Redis connection, the queue's). The
-- handler's unique_id(command) stands for a PHP uniqueId() method.
local function release_unique_lock(handler, command)
    local id
    if handler and type(handler.unique_id) == "function" then
        id = handler.unique_id(command)
    else
        id = value(command.uniqueId)
    end
    local separator = config.laravel_version >= 11 and ":" or ""
    redis.call("queue", "DEL", cache_prefix .. "laravel_unique_job:" .. php.class(command)
        .. separator .. tostring(id or ""))
end

-- Queueable::dispatchNextJobInChain: the first chained job, carrying the rest,
-- dispatched on the chain's connection and queue unless it names its own.
local function dispatch_next_in_chain(command)
    local chained = value(command.chained)
    if type(chained) ~= "table" or chained[1] == nil then return end
    local nxt, err = php.unserialize(tostring(chained[1]))
    if type(nxt) ~= "table" or not php.class(nxt) then
        error("the next job of the chain cannot be read: " .. tostring(err or "not an object"), 0)
    end
    local rest = {}
    for i = 2, #chained do rest[i - 1] = chained[i] end
    -- Queueable declares these, so a PHP job always has them (null when unset)
    local function declared(name)
        local v = command[name]
        if v == nil then return cjson.null end
        return v
    end
    nxt.chained = rest
    if not truthy(nxt.connection) then nxt.connection = declared("chainConnection") end
    if not truthy(nxt.queue) then nxt.queue = declared("chainQueue") end
    nxt.chainConnection = declared("chainConnection")
    nxt.chainQueue = declared("chainQueue")
    nxt.chainCatchCallbacks = declared("chainCatchCallbacks")
    local connection = value(nxt.connection)
    if connection ~= nil and connection ~= worker.connection_name then
        error("the chain goes on on connection '" .. tostring(connection)
            .. "', which luaworker does not work", 0)
    end
    local delay = tonumber(value(nxt.delay))
    dispatch.push_command(nxt, value(nxt.queue) or config.default_queue, delay)
end

-- Job::fail: record, remove the reservation, then the handler's failed() and the
-- failing hooks. A job already deleted is only marked failed (as Laravel does).
function worker.fail(job, err, trace)
    job:mark_as_failed()
    if job:is_deleted() then return end
    if err == nil then
        err = luaworker.exception("Illuminate\\Queue\\ManuallyFailedException",
            "This job was manually failed.")
    end
    local exc = exception_info(err, trace or debug.traceback("job:fail() called", 2))
    local payload = job:payload()
    local uuid = payload.uuid
    if type(uuid) ~= "string" or uuid == "" then uuid = host.uuid() end
    local now = host.now()
    queue.fail(job:queue(), job:reserved_body(), {
        uuid = uuid, connection = worker.connection_name, payload = job:raw_body(),
        exception = exc.text, now = now, failed_at = os.date("%Y-%m-%d %H:%M:%S", now),
    })
    job:mark_as_deleted()

    local handler = handlers.resolve(payload)
    local command = handler and command_of(job)
    if command ~= nil and not handlers.is_string_job(payload) then
        local mode = unique_mode(handler, command)
        if mode and mode ~= "until_processing" then
            local ok, _, utrace = task.run(release_unique_lock, handler, command)
            if not ok then output.error("cannot release the unique lock: " .. utrace, job) end
        end
    end
    if handler and type(handler.failed) == "function" then
        local ok, _, ftrace = task.run(handler.failed, job, command, exc.value)
        if not ok then output.error("error in failed() of " .. job:name() .. ": " .. ftrace, job) end
    end
    fire_safely("failing", job, exc)
    output.job("failed", job, exc)
end

local function max_tries_of(job)
    local t = job:max_tries()
    if t == nil then return options.tries end
    return tonumber(t) or options.tries
end

-- retryUntil as Laravel tests it (null and 0 are "none").
local function retry_until_of(job)
    local r = tonumber(job:retry_until())
    if r == 0 then return nil end
    return r
end

local function max_attempts_exception(job)
    return luaworker.exception(MAX_ATTEMPTS_EXCEPTION, tostring(job:name())
        .. " has been attempted too many times or run too long. The job may have previously timed out.")
end

-- Before running: fail the job if it already used up its attempts or its time.
local function fail_if_already_exceeds(job)
    local max_tries, retry_until = max_tries_of(job), retry_until_of(job)
    if retry_until and host.now() <= retry_until then return end
    if not retry_until and (max_tries == 0 or job:attempts() <= max_tries) then return end
    local e = max_attempts_exception(job)
    worker.fail(job, e, "")
    error(e, 0)
end

-- After an error: fail the job when this was its last attempt.
local function fail_if_will_exceed_max_attempts(job, exc)
    local max_tries, retry_until = max_tries_of(job), retry_until_of(job)
    if retry_until and retry_until <= host.now() then
        worker.fail(job, exc.value, exc.text)
    end
    if not retry_until and max_tries > 0 and job:attempts() >= max_tries then
        worker.fail(job, exc.value, exc.text)
    end
end

-- After an error: count it in the cache store (key job-exceptions:<uuid>, shared
-- with PHP workers) and fail the job when it reaches maxExceptions.
local function fail_if_will_exceed_max_exceptions(job, exc)
    local uuid, max_exceptions = job:uuid(), tonumber(job:max_exceptions())
    if uuid == nil or max_exceptions == nil then return end
    local key = cache_prefix .. "job-exceptions:" .. uuid
    local current = redis.call("cache", "GET", key)
    if not current or current == "" or current == "0" then
        redis.call("cache", "SETEX", key, 86400, 0)
    end
    if max_exceptions <= redis.call("cache", "INCRBY", key, 1) then
        redis.call("cache", "DEL", key)
        worker.fail(job, exc.value, exc.text)
    end
end

-- Seconds until the released job is due. A negative backoff is due at once (as
-- Laravel's release with a past time).
local function backoff_for(job)
    local source = job:backoff()
    if source == nil then source = options.effective_backoff end
    local list = split(tostring(source), ",")
    return math.max(0, to_integer(list[job:attempts()] or list[#list]))
end

-- Worker::handleJobException: the fail checks, then the automatic release.
-- Raises what Redis raises (the caller logs it; the job then stays reserved and
-- comes back after retry_after, as with PHP).
local function handle_job_exception(job, exc, started)
    if not job:has_failed() then
        fail_if_will_exceed_max_attempts(job, exc)
        fail_if_will_exceed_max_exceptions(job, exc)
    end
    fire_safely("exception_occurred", job, exc)
    if not job:is_deleted() and not job:is_released() and not job:has_failed() then
        local delay = backoff_for(job)
        job:release(delay)
        fire_safely("released_after_exception", job, exc, { backoff = delay })
        output.job("released_after_exception", job, exc, host.clock() - started)
        output.error(string.format("%s (attempt %d) raised; released, available again in %ds: %s",
            tostring(job:name()), job:attempts(), delay, exc.text), job)
    else
        output.error(string.format("%s (attempt %d) %s: %s", tostring(job:name()), job:attempts(),
            exc.class == MAX_ATTEMPTS_EXCEPTION and "failed" or "raised", exc.text), job)
    end
end

-- Runs the job's handler (CallQueuedHandler::call for object jobs; the class's
-- method for string jobs). Raises what the handler raises.
local function fire_job(job)
    local payload = job:payload()
    local handler, method_or_err, path = handlers.resolve(payload)
    if not handler then error(method_or_err, 0) end
    local command, err = command_of(job)
    if command == nil and err then error(err .. " (job " .. tostring(job:name()) .. ")", 0) end
    if handlers.is_string_job(payload) then
        handler[method_or_err](job, command)
        if not job:is_deleted_or_released() and not job:has_failed() then
            output.error(string.format("%s returned without job:delete() or job:release(): as in "
                .. "Laravel, a string job stays reserved and runs again after retry_after (%s)",
                payload.job, path), job)
        end
        return
    end
    -- CallQueuedHandler::call
    local unique = unique_mode(handler, command)
    if unique == "until_processing" then release_unique_lock(handler, command) end
    handler.handle(job, command)
    if unique and unique ~= "until_processing" and not job:is_released() then
        release_unique_lock(handler, command)
    end
    if not job:has_failed() and not job:is_released() then dispatch_next_in_chain(command) end
    if not job:is_deleted_or_released() then job:delete() end
end

-- The part of Worker::process that raises what the job raises.
local function run_job(job, started)
    output.job("starting", job)
    fire("before", job)
    fail_if_already_exceeds(job)
    if not job:is_deleted() then fire_job(job) end
    fire("after", job)
    output.job("success", job, nil, host.clock() - started)
end

-- Worker::process for one job.
local function process(job)
    local started = host.clock()
    if job.undecodable then
        worker.fail(job, luaworker.exception("JsonException",
            "payload cannot be decoded: " .. job.undecodable), "")
        return
    end
    -- the supervisor ends this process if the job runs past its timeout
    local timeout = tonumber(job:timeout()) or options.timeout
    host.report_start(timeout, job.batch or 0, job.batch_index or 1)
    if timeout <= 0 or timeout + HOLD >= options.retry_after then
        -- the deletes of the jobs before it must not wait for a job that may run
        -- past their reservations (see take_ahead)
        host.flush("queue")
    end
    local ok, err, trace = task.run(run_job, job, started)
    if not ok then
        local handled, herr, htrace = task.run(handle_job_exception, job, exception_info(err, trace),
            started)
        if not handled then
            output.error("while handling the error of " .. tostring(job:name()) .. ": "
                .. tostring(redis.is_error(herr) and herr.message or htrace), job)
        end
    end
    fire_safely("attempted", job, nil, { exception_occurred = not ok })
    host.report_end()
end

-- Worker::registerTimeoutHandler's decisions, for a job whose previous process was
-- ended because it ran past its timeout: fail it when that was its last attempt,
-- when maxExceptions is reached (a timeout counts as an exception) or when it has
-- failOnTimeout; otherwise leave it reserved, to come back after retry_after.
local function handle_timed_out_job(timeout, q, raw, reserved)
    local decoded, payload = pcall(decode, raw)
    if not decoded or type(payload) ~= "table" then payload = { attempts = 0 } end
    local job = jobs.new(worker, q, raw, reserved, payload)
    local exc = exception_info(max_attempts_exception(job), "")
    local ok, err, trace = task.run(function()
        fail_if_will_exceed_max_attempts(job, exc)
        fail_if_will_exceed_max_exceptions(job, exc)
        if job:should_fail_on_timeout() then worker.fail(job, exc.value, exc.text) end
    end)
    fire_safely("timed_out", job, exc, { timeout = timeout })
    if not ok then
        output.error("while handling the timeout of " .. tostring(job:name()) .. ": "
            .. tostring(redis.is_error(err) and err.message or trace), job)
    end
    output.error(string.format("%s (attempt %d) ran past its timeout of %ds; its process was ended%s",
        tostring(job:name()), job:attempts(), timeout,
        job:has_failed() and "; failed" or ", and it stays reserved until retry_after"), job)
end

-- The restart key written by `queue:restart` (and `luaworker restart`).
local function last_restart()
    return redis.call("cache", "GET", cache_prefix .. "illuminate:queue:restart")
end

local connection_down = false

-- Seconds to wait after a failed attempt to reach Redis: doubles per failure,
-- up to RECONNECT_MAX, and starts again at 1 once Redis answers.
local RECONNECT_MAX = 16
local reconnect_delay = 1

-- Reports an error while taking a job; a lost connection once per outage.
local function report_redis_error(err)
    if redis.is_error(err) and err.kind == "connection" then
        if not connection_down then
            output.error(err.message .. "; retrying every second")
            connection_down = true
        end
        return
    end
    output.error("error while taking a job: " .. tostring(err))
end

-- Pops queue q: migrate due jobs, pop. Payloads that are not usable are moved to
-- the failed store (logged) and the next one is popped.
local migrated_at = {}  -- queue -> the Unix second its due jobs were last moved

-- Laravel 12.40+'s `queue:pause`: the cache key illuminate:queue:paused:<connection>:<queue>
-- holds a true value (PHP-serialized) while the queue is paused.
local function queue_paused(q)
    if config.laravel_version < 12 then return false end
    local v = redis.call("cache", "GET", cache_prefix .. "illuminate:queue:paused:"
        .. worker.connection_name .. ":" .. q)
    return v ~= nil and v ~= "b:0;" and v ~= "N;" and v ~= "i:0;" and v ~= 's:0:"";'
end

-- Reports deletes sent ahead (job:delete) that Redis refused or never got.
local function report_send_errors()
    local n, message = host.send_errors()
    if n > 0 then
        output.error(string.format("%d job delete(s) did not reach Redis (%s): those jobs run "
            .. "again after retry_after", n, message))
    end
end

-- Logs a payload the pop moved to the failed store (scripts/pop.lua).
local function report_unusable(q, problem, record_id)
    output.error(string.format("queue %s: %s; kept as failed job %s (see luaworker failed)",
        q, problem, record_id))
end

local function pop(q, count)
    local now = host.now()
    -- scores are whole seconds: moving due jobs once per second per queue moves
    -- what moving them before every pop would, at most a second later
    if migrated_at[q] ~= now then
        queue.migrate(q, now, options.migration_batch_size)
        migrated_at[q] = now
    end
    for _ = 1, 1000 do
        now = host.now()
        local taken, problem, record_id = queue.pop(q, now, options.retry_after,
            worker.connection_name, os.date("%Y-%m-%d %H:%M:%S", now), count)
        report_send_errors()
        if problem then report_unusable(q, problem, record_id) end
        if #taken > 0 or not problem then return taken end
    end
    return {}
end

-- Jobs reserved ahead. When handlers are fast, one pop takes several jobs (each
-- reserved as by its own Laravel pop) that then run in order: up to BATCH_MAX, as
-- many as the last batch ran in BATCH_BUDGET seconds. While a full batch runs, the
-- pop of the next one is under way (Redis works while the handlers do). The
-- supervisor is told of each batch, so the jobs of a process that dies are
-- settled by the next one (supervisor.h). Jobs held longer than HOLD seconds, or
-- when the worker stops or pauses, go back to the head of their queue as they were
-- (scripts/unreserve.lua).
local BATCH_MAX, BATCH_BUDGET = 32, 0.05
-- the batch being run: queue, {payload, reserved} pairs, the next to run, when it
-- was popped, when its first job started, its number for the supervisor
local ahead = { q = nil, jobs = {}, next = 1, at = 0, started = 0, batch = 0 }
local prefetch  -- {q =, at =, id =} while the pop of the next batch is under way
local batch_size = 1

local function start_prefetch(q, count)
    if prefetch or count < 2 then return end
    local now = host.now()
    local id = queue.prefetch(q, now, options.retry_after, worker.connection_name,
        os.date("%Y-%m-%d %H:%M:%S", now), count)
    prefetch = { q = q, at = host.clock(), id = id }
end

-- Waits for the pop under way. Returns its jobs (maybe none), its queue, the time
-- it was sent and its batch number; raises what Redis raised.
local function finish_prefetch()
    local p = prefetch
    prefetch = nil
    local r = host.prefetched()
    if not r.ok then redis.raise(r.message, r.kind) end
    local taken, problem = queue.parse_pop(r.reply)
    report_send_errors()
    if problem then report_unusable(p.q, problem, p.id) end
    return taken, p.q, p.at, r.batch
end

-- Gives back jobs of batch number of queue q: the supervisor forgets them first.
local function unreserve(q, jobs, batch)
    if #jobs == 0 then return end
    host.report_given_back(batch)
    queue.unreserve(q, jobs)
end

-- Raises what Redis raises; the batch's jobs then stay ahead, to be given back on
-- the next try (unless their reservations ran out meanwhile: unreserve skips those).
local function give_back()
    batch_size = 1
    -- the later jobs first: each goes back to the head of its queue
    if prefetch then
        local taken, q, _, batch = finish_prefetch()
        unreserve(q, taken, batch)
    end
    if ahead.next <= #ahead.jobs then
        local rest = {}
        for i = ahead.next, #ahead.jobs do rest[#rest + 1] = ahead.jobs[i] end
        unreserve(ahead.q, rest, ahead.batch)
        ahead.jobs, ahead.next = {}, 1
    end
end

-- The next job reserved ahead and its index in the batch, or nil.
local function take_ahead()
    if ahead.next > #ahead.jobs then return nil end
    if host.clock() - ahead.at > HOLD then
        give_back()
        return nil
    end
    local index = ahead.next
    ahead.next = index + 1
    return ahead.jobs[index], index
end

-- Makes taken (from q, popped at time at, batch number) the batch being run, with
-- the pop of the next one under way when it is full. Returns its first job, 1.
local function run_batch(q, taken, at, batch, limit)
    ahead.q, ahead.jobs, ahead.next, ahead.at, ahead.batch = q, taken, 2, at, batch
    ahead.started = host.clock()
    if #taken == batch_size then start_prefetch(q, math.min(batch_size, limit - #taken)) end
    return taken[1], 1
end

-- The first job of the next batch: the one under way, else a pop of up to limit
-- jobs from the first queue that has one.
local function pop_batch(queues, limit)
    if #ahead.jobs > 0 then
        local per_job = (host.clock() - ahead.started) / #ahead.jobs
        batch_size = math.max(1, math.min(BATCH_MAX, math.floor(BATCH_BUDGET / math.max(per_job, 1e-6))))
    end
    ahead.jobs, ahead.next = {}, 1
    if prefetch then
        local taken, q, at, batch = finish_prefetch()
        if #taken > 0 then
            if not queue_paused(q) then return run_batch(q, taken, at, batch, limit) end
            unreserve(q, taken, batch)
        end
    end
    for _, q in ipairs(queues) do
        if not queue_paused(q) then
            local taken = pop(q, math.min(batch_size, limit))
            if #taken > 0 then
                local flat = {}
                for i, job in ipairs(taken) do flat[2 * i - 1], flat[2 * i] = job[1], job[2] end
                return run_batch(q, taken, host.clock(), host.report_batch(q, unpack(flat)), limit)
            end
        end
    end
    return nil
end

-- Worker::getNextJob: the first queue in --queue order that is not paused and has
-- a job wins (a job reserved ahead first). limit: the most jobs to reserve.
local function next_job(queues, limit)
    fire("popping", nil, nil, { queue = options.queue_list })
    local q = ahead.q
    local taken, index = take_ahead()
    if not taken then
        taken, index = pop_batch(queues, limit)
        q = ahead.q
    end
    if not taken then return nil end
    local raw, reserved = taken[1], taken[2]
    -- The pop script decoded the same bytes, so this only fails where this
    -- cjson is stricter than Redis' (the job is then failed).
    local decoded, payload = pcall(decode, raw)
    local problem
    if not decoded or type(payload) ~= "table" then
        problem = decoded and "not a JSON object" or tostring(payload)
        payload = { attempts = 0 }
    end
    local job = jobs.new(worker, q, raw, reserved, payload)
    job.undecodable = problem
    job.batch_index, job.batch = index, ahead.batch
    fire("popped", job)
    return job
end

local function get_next_job(queues, limit)
    local ok, result = task.run(next_job, queues, limit)
    if not ok then
        report_redis_error(result)
        host.sleep(reconnect_delay)
        reconnect_delay = math.min(reconnect_delay * 2, RECONNECT_MAX)
        return nil
    end
    reconnect_delay = 1
    if connection_down then
        output.error("connection to Redis at " .. host.describe("queue") .. " is back")
        connection_down = false
    end
    return result
end

-- How long an idle worker waits for a job: --sleep, as queue:work sleeps; with
-- --block-for, that long first (0: without limit), as queue:work blocks.
local function idle_bound()
    if options.block_for == nil then return options.sleep end
    if options.block_for == 0 then return math.huge end
    return options.block_for + options.sleep
end

-- Changes of the delayed sets while idle: Laravel's later() adds a job without a
-- notify token, so the worker asks Redis (CLIENT TRACKING, BCAST, Redis 6+) to
-- report every change of the queues' :delayed sets, and each report ends its
-- idle wait. Set up again after either connection involved reconnected.
local tracked = { connects = -1, unavailable = false }
local INVALIDATION_RATE = 20
local invalidated_at = -1

local function track_delayed_sets(queues)
    if tracked.unavailable then return end
    if host.subscribed() and tracked.connects == host.connects("block") then return end
    local done, err = pcall(function()
        local id = redis.subscribe_invalidations()
        local args = { "CLIENT", "TRACKING", "ON", "REDIRECT", id, "BCAST" }
        for _, q in ipairs(queues) do
            args[#args + 1] = "PREFIX"
            args[#args + 1] = select(2, queue.keys(q))
        end
        redis.call("block", "CLIENT", "TRACKING", "OFF")
        redis.call("block", unpack(args))
    end)
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

-- The wait of a worker that found no job, in place of queue:work's sleep and
-- block_for: a BLPOP on the notify lists of the queues (a push wakes it at once),
-- ended by the host's timer when the next delayed job is due or reservation
-- expires (moved within milliseconds of its second), by a change of a delayed set,
-- and at the latest after idle_bound(). What Redis sees is what a queue:work with
-- block_for does.
local function idle_wait(queues)
    local bound = idle_bound()
    if bound <= 0 then return end
    local ok, err = task.run(function()
        local open = {}
        for _, q in ipairs(queues) do
            if not queue_paused(q) then open[#open + 1] = q end
        end
        if #open == 0 then
            host.sleep(math.min(bound, options.sleep > 0 and options.sleep or 1))
            return
        end
        local wait, exact = bound, false
        host.take_invalidated()
        local due = queue.next_due(open)
        -- after a first command: a Redis still loading its data refuses it
        track_delayed_sets(queues)
        local notify = {}
        for i, q in ipairs(open) do
            notify[i] = select(4, queue.keys(q))
            if due[i] then
                -- due jobs are moved once per second per queue (see pop)
                local at = math.max(due[i], (migrated_at[q] or 0) + 1)
                local until_due = at - host.microtime() + 0.002
                if until_due < wait then wait, exact = until_due, true end
            end
        end
        if wait <= 0 then return end
        -- a change of a delayed set ends the wait, and the next starts with a read:
        -- at most INVALIDATION_RATE of those a second, however busy the sets are
        local since = host.clock() - invalidated_at
        if since < 1 / INVALIDATION_RATE then host.sleep(1 / INVALIDATION_RATE - since) end
        redis.wait_notify(wait == math.huge and -1 or wait, exact, notify)
        if host.take_invalidated() then invalidated_at = host.clock() end
    end)
    if not ok then
        report_redis_error(err)
        host.sleep(reconnect_delay)
        reconnect_delay = math.min(reconnect_delay * 2, RECONNECT_MAX)
    end
end

local restart_checked_at, memory_checked_at = 0, -1

local function stop_if_necessary(restart_at_start, start_time, jobs_processed, job)
    local quit, _, reload = host.signals()
    if quit then return EXIT_OK, "interrupted" end
    if reload then return EXIT_OK, "reload" end
    -- memory is read at most 20 times a second, the restart key at most once a
    -- second (Laravel: both after every job)
    local clock = host.clock()
    if options.memory > 0 and clock - memory_checked_at >= 0.05 then
        memory_checked_at = clock
        if (host.rss_mb() or 0) >= options.memory then return EXIT_MEMORY, "memory" end
    end
    if clock - restart_checked_at >= 1 then
        restart_checked_at = clock
        local ok, current = pcall(last_restart)
        if ok and current ~= restart_at_start then return EXIT_OK, "restart_signal" end
    end
    if options.stop_when_empty and not job then return EXIT_OK, "empty" end
    if options.max_time > 0 and host.clock() - start_time >= options.max_time then
        return EXIT_OK, "max_time"
    end
    if options.max_jobs > 0 and jobs_processed >= options.max_jobs then
        return EXIT_OK, "max_jobs"
    end
    return nil
end

-- Laravel 8's maintenance mode: the app (the directory of --env-file) has
-- storage/framework/down. Without --env-file the app is unknown: never down.
local down_file

local function down_for_maintenance()
    if not down_file or options.force then return false end
    local f = io.open(down_file, "rb")
    if f then f:close() end
    return f ~= nil
end

-- Before the worker waits without working or exits: the jobs reserved ahead go
-- back and, with exit, a round trip makes sure the deletes sent ahead arrived.
local function settle(exiting)
    local ok, err = task.run(function()
        give_back()
        if exiting then redis.call("queue", "PING") end
    end)
    if not ok then
        output.error("could not give back the jobs reserved ahead, which come back after "
            .. "retry_after: " .. tostring(redis.is_error(err) and err.message or err))
    end
    report_send_errors()
end

local function stop(status, reason)
    settle(true)
    fire_safely("stopping", nil, nil, { status = status, reason = reason })
    host.report("X", reason)
    return status
end

-- Settles what the previous process of this slot left (host.handover): the job it
-- was killed for (Laravel's timeout rules), deletes it may not have sent, jobs it
-- reserved but did not start (given back).
local function take_over(records)
    local given, deleted = 0, 0
    local ok, err = task.run(function()
        local i = 1
        while i <= #records do
            local r = records[i]
            if r.kind == "T" then
                handle_timed_out_job(r.timeout, r.queue, r.payload, r.reserved)
                i = i + 1
            elseif r.kind == "D" then
                queue.delete_reserved(r.queue, r.reserved)
                deleted = deleted + 1
                i = i + 1
            else
                local run = {}
                while records[i] and records[i].kind == "G" and records[i].queue == r.queue do
                    run[#run + 1] = { records[i].payload, records[i].reserved }
                    i = i + 1
                end
                given = given + queue.unreserve(r.queue, run)
            end
        end
        redis.call("queue", "PING")
    end)
    if not ok then
        output.error("could not settle the jobs the previous process left, which come back "
            .. "after retry_after: " .. tostring(redis.is_error(err) and err.message or err))
    elseif given + deleted > 0 then
        output.error(string.format("the previous process left jobs reserved ahead: %d given "
            .. "back to the queue, %d finished (deleted again)", given, deleted))
    end
    report_send_errors()
end

local function prepare(cli, cfg)
    options, config = cli.options, cfg
    worker.connection_name = cli.args[1] or config.connection_name
    worker.options = options
    cache_prefix = config.prefix .. config.cache_prefix
    options.queue_list = options.queue or config.default_queue
    options.effective_backoff = options.backoff
    if options.delay ~= "0" and options.backoff == "0" then
        options.effective_backoff = options.delay
    end
    luaworker.connection_name = worker.connection_name
    if options.env_file then
        down_file = (options.env_file:match("^(.*)/[^/]*$") or ".") .. "/storage/framework/down"
    end
    handlers.set_dir(options.handlers)
    handlers.add_to_package_path()
    output.configure(options)
end

-- Runs `luaworker work`. Returns the exit status.
function M.run(cli, cfg)
    prepare(cli, cfg)
    local queues = split(options.queue_list, ",")

    local f = io.open(handlers.dir(), "rb")
    if not f then
        output.error("--handlers=" .. options.handlers .. ": no such directory")
        return 2
    end
    f:close()

    local ok, err, trace = task.run(handlers.run_init)
    if not ok or not err then
        output.error("cannot start: " .. tostring(trace or select(2, handlers.run_init())))
        return 1
    end

    host.report("R")
    local left = host.handover()
    if left then take_over(left) end

    local restart_ok, restart_at_start = task.run(last_restart)
    if not restart_ok then restart_at_start = nil end
    fire_safely("starting", nil, nil, { queue = options.queue_list })

    if options.once then
        if down_for_maintenance() then
            host.sleep(options.sleep)
            return EXIT_OK
        end
        local job = get_next_job(queues, 1)
        if job then process(job) else host.sleep(options.sleep) end
        settle(true)
        return EXIT_OK
    end

    local start_time, jobs_processed = host.clock(), 0
    while true do
        local _, paused = host.signals()
        if down_for_maintenance() or paused or fire_safely("looping", nil, nil, { queue = options.queue_list }) == false then
            settle(false)
            host.sleep(options.sleep > 0 and options.sleep or 1)
            local status, reason = stop_if_necessary(restart_at_start, start_time, jobs_processed, nil)
            if status then return stop(status, reason) end
        else
            local job = get_next_job(queues,
                options.max_jobs > 0 and options.max_jobs - jobs_processed or math.huge)
            if job then
                jobs_processed = jobs_processed + 1
                process(job)
                if options.rest > 0 then host.sleep(options.rest) end
            elseif not options.stop_when_empty then
                idle_wait(queues)
            end
            local status, reason = stop_if_necessary(restart_at_start, start_time, jobs_processed, job)
            if status then return stop(status, reason) end
        end
    end
end


return M
