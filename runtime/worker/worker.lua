-- luaworker.worker: `luaworker work`, Laravel's queue Worker: the daemon loop
-- (Worker::daemon), stopIfNecessary, pausing, maintenance mode, --once. Taking jobs
-- is reservations.lua's, running one process.lua's (up to --concurrency at once,
-- in_flight.lua's), waiting for one idle.lua's. The loop takes a job whenever
-- fewer than --concurrency are in flight; stopping, it takes no new one and lets
-- those in flight finish (within their timeouts), as queue:work finishes its one.
-- Laravel's source: Illuminate/Queue/Worker.php (daemon, stopIfNecessary).
local host = require "luaworker.host"
local redis = require "luaworker.redis"
local task = require "luaworker.loop.task"
local db = require "luaworker.db"
local failed_jobs = require "luaworker.queue.failed_jobs"
local cache = require "luaworker.queue.cache"
local events = require "luaworker.base.events"
local handlers = require "luaworker.worker.handlers"
local handler_env = require "luaworker.worker.handler_env"
local queue_sizes = require "luaworker.worker.queue_sizes"
local fleet_record = require "luaworker.worker.fleet_record"
local horizon = require "luaworker.queue.horizon"
local output = require "luaworker.worker.output"
local process = require "luaworker.worker.process"
local in_flight = require "luaworker.worker.in_flight"
local redis_reservations = require "luaworker.worker.reservations"
local database_reservations = require "luaworker.worker.database_reservations"
local idle = require "luaworker.worker.idle"
local stop_signal = require "luaworker.worker.stop_signal"
local settings = require "luaworker.base.settings"
local backoff = require "luaworker.base.backoff"
local values = require "luaworker.base.values"

local M = {}

-- Exit statuses, as queue:work's.
local EXIT_OK, EXIT_UNREACHABLE, EXIT_MEMORY = 0, 1, 12
-- Seconds a run meant to end (--once, --stop-when-empty) without a job in flight
-- waits out a Redis, or the database of the queue, that it cannot reach before it
-- gives up with EXIT_UNREACHABLE.
local ONE_SHOT_WAIT = 10
-- This process is the supervisor's check of the handlers before a reload
-- (supervisor/reload_check.h's HANDLER_CHECK_ENV): it loads them and exits.
local HANDLER_CHECK = os.getenv("LUAWORKER_HANDLER_CHECK") == "1"

-- The default heartbeat (seconds): HEARTBEAT, or HEARTBEAT_SHARE of the queue's
-- retry_after (--retry-after; on the database queue, DB_QUEUE_RETRY_AFTER without
-- it) when less, but not below HEARTBEAT_MIN.
local HEARTBEAT, HEARTBEAT_SHARE, HEARTBEAT_MIN = 10, 1 / 3, 0.5

local options

-- How the worker takes jobs: Laravel's database queue for the connection named
-- "database" (as config/queue.php names it), else its Redis queue. Both forms answer
-- the same calls (worker/reservations.lua, worker/database_reservations.lua).
local reservations = redis_reservations

-- The restart key written by `queue:restart` (and `luaworker restart`).
local restart_unreadable = false   -- said that the restart signal cannot be read

-- Laravel's restart signal (queue:restart): true and its value, or false when it
-- cannot be read; a refusal (ACL, a wrong REDIS_CACHE_DB) is said once until it can
-- be read again. Not waited out: a cache store that is down or refuses the key must
-- not hold up jobs.
local function read_restart()
    local key = cache.restart_key()
    local ran, ok, value, kind = cache.read_restart()
    if ran and ok then
        if restart_unreadable then
            restart_unreadable = false
            output.error("the restart signal " .. key .. " can be read again")
        end
        return true, value ~= false and value or nil
    end
    -- a passing failure (an outage, a restart) is the outage's to report
    if not restart_unreadable and (not ran or redis.is_refusal(value, kind)) then
        restart_unreadable = true
        -- task.run gave false, error, traceback; host.command false, message, kind
        local why = ran and value or ok
        output.error("cannot read the restart signal " .. key .. " (" .. tostring(why)
            .. "): queue:restart cannot stop this worker until it can")
    end
    return false
end

-- Seconds to wait after an error of the loop: doubles per error in a row, up to
-- ERROR_DELAY_MAX, and starts again at 1 after a success.
local ERROR_DELAY_MAX = 16
local error_delays = backoff.new(1, ERROR_DELAY_MAX)

-- Runs fn(...) in a coroutine of its own. An error is logged with what, and the
-- loop waits before it goes on; a transient failure is noted as an outage instead
-- (logged once), and the loop goes on at once: its next command waits the outage
-- out (luaworker.redis). Returns true and fn's result, or false.
local function guarded(what, fn, ...)
    local ok, result = task.run(fn, ...)
    if ok then
        error_delays:reset()
        return true, result
    end
    if redis.note_outage(result) then return false end
    output.error(what .. ": " .. tostring(redis.is_error(result) and result.message or result))
    host.sleep(error_delays:next(), true)
    return false
end

local restart_checked_at = 0
local outage_since                    -- host.clock() when the current outage began

-- A run meant to end that could not reach Redis (or the database of the queue) for
-- ONE_SHOT_WAIT seconds: says so, and returns EXIT_UNREACHABLE and its reason.
local function gave_up()
    output.error(string.format("gave up after %ds without %s: ending with status %d", ONE_SHOT_WAIT,
        reservations.UNREACHABLE, EXIT_UNREACHABLE))
    return EXIT_UNREACHABLE, "unreachable"
end

local function stop_if_necessary(restart_at_start, start_time, jobs_processed, job)
    local quit, _, reload = host.signals()
    if quit then
        stop_signal.interrupted(quit)
        return EXIT_OK, "interrupted"
    end
    if reload then return EXIT_OK, "reload" end
    -- memory after every job, as Laravel (one read of /proc/self/statm, a third of
    -- a microsecond); the restart key at most once a second (Laravel: after every
    -- job, a Redis round trip)
    if options.memory > 0 and (host.rss_mb() or 0) >= options.memory then
        return EXIT_MEMORY, "memory"
    end
    local clock = host.clock()
    if clock - restart_checked_at >= 1 then
        restart_checked_at = clock
        local ok, current = read_restart()
        if ok and current ~= restart_at_start then return EXIT_OK, "restart_signal" end
    end
    if options.stop_when_empty and not job then
        if reservations.in_outage() then return gave_up() end
        return EXIT_OK, "empty"
    end
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
    return host.file_kind(down_file) ~= nil
end

-- Gives back the jobs the worker holds: reservations.give_back_held before it waits
-- without working, reservations.retire when it stops. A failure is logged.
local function give_back(how)
    local ok, err = task.run(how)
    if not ok then
        output.error(reservations.GIVE_BACK_FAILED .. ": "
            .. tostring((redis.is_error(err) or values.is_exception(err)) and err.message or err))
    end
    reservations.report_send_errors()
end

-- Stops: the jobs reserved ahead go back at once, those in flight finish, then the
-- worker retires (its record and heartbeat last until then: a crash meanwhile
-- leaves its successor what it needs).
local function stop(status, reason)
    settings.stopping = true
    if in_flight.count() > 0 then
        give_back(reservations.give_back_held)
        in_flight.drain()
    end
    give_back(reservations.retire)
    fleet_record.stop()
    events.fire_safely("stopping", nil, nil, { status = status, reason = reason,
        queue = options.queue_list })
    host.report_exit(reason)
    return status
end

-- The next job, after a look for dead workers' jobs when it is time; nil when there
-- is none, or after an error (logged).
local function get_next_job(queues, limit)
    local ok, job = guarded("error while taking a job", function()
        reservations.recover_dead_workers()
        return reservations.next_job(queues, limit)
    end)
    return ok and job or nil
end

-- What the worker this one replaces left: its jobs not started go back, and those
-- it had in flight get Laravel's rules for a job killed for its timeout, or whose
-- worker died.
local function recover_predecessor()
    local ok, ended = task.run(reservations.recover_predecessor)
    if not ok then
        output.error("could not settle what the previous worker left: "
            .. tostring(redis.is_error(ended) and ended.message or ended))
        return
    end
    for _, e in ipairs(ended) do
        if e.timeout > 0 then
            process.handle_timed_out_job(e.job, e.timeout, "process")
        else
            process.handle_crashed_job(e.job, e.death)
        end
    end
end

local function prepare(cli, cfg)
    options = cli.options
    settings.options, settings.config = options, cfg
    settings.connection_name = cli.args[1] or cfg.connection_name
    settings.given = cli.given or {}
    local default_queue = cfg.default_queue
    local retry_after = options.retry_after
    if settings.connection_name == "database" then
        reservations = database_reservations
        local s = database_reservations.settings(options, settings.given)
        default_queue, retry_after = s.queue, s.retry_after
    end
    options.queue_list = options.queue or default_queue
    settings.queues = process.split(options.queue_list, ",")
    options.effective_backoff = options.backoff
    if options.delay ~= "0" and options.backoff == "0" then
        options.effective_backoff = options.delay
    end
    options.heartbeat = options.heartbeat
        or math.max(HEARTBEAT_MIN, math.min(HEARTBEAT, retry_after * HEARTBEAT_SHARE))
    -- checked by cli_parse (config/cli.c) in the process the user started
    options.concurrency = options.concurrency or tonumber(os.getenv("LUAWORKER_CONCURRENCY")) or 1
    in_flight.configure(options.concurrency)
    local app = settings.app_dir()
    if app then down_file = app .. "/storage/framework/down" end
    handlers.set_dir(options.handlers)
    handlers.add_to_package_path()
    handler_env.install()
    output.configure(options)
    if not HANDLER_CHECK then output.worker_starting(options.queue_list) end
    -- an outage is waited out; without a job in hand, a stop signal ends the wait
    local one_shot = options.once or options.stop_when_empty
    redis.wait_out_failures(function(message)
        outage_since = host.clock()
        host.count_connection_loss()
        output.error(message .. (one_shot and string.format("; retrying for up to %ds", ONE_SHOT_WAIT)
            or "; retrying, at least every second"))
    end, function()
        outage_since = nil
        output.error("connection to Redis at " .. host.describe("queue") .. " is back")
    end, function()
        if in_flight.count() > 0 then return false end
        return (host.signals()) or one_shot and outage_since ~= nil
            and host.clock() - outage_since >= ONE_SHOT_WAIT
    end)
end

-- A start-up check found a lasting fault (what): a worker that starts with the
-- fleet says so and does not start (true: status 2, and the supervisor stops the
-- fleet). One that replaces a worker of a running fleet (a reload, --max-jobs, a
-- crash) says it and goes on (false), meeting the fault as the worker it replaces
-- did (a failed job the store refuses kept in another, a pop that fails logged):
-- one worker's check does not stop a fleet that runs.
local function refuses_start(what)
    if host.replacing() then
        output.error(what .. " (found as this worker started in place of another: it works on, "
            .. "as that one did)")
        return false
    end
    output.error("cannot start: " .. what)
    return true
end

-- init.lua run, then each handler loaded as its first job would load it and its
-- shape checked: one that cannot handle jobs is bad input, found now rather than
-- by its jobs. Returns nil, or the exit status after saying why not.
local function load_handlers()
    -- run_init returns true or nil, message; task.run gives false, error, traceback
    local ok, inited, why = task.run(handlers.run_init)
    if not ok or not inited then
        output.error("cannot start: " .. tostring(why))
        return 1
    end
    local unusable = handlers.unusable()
    if unusable and refuses_start("handlers that cannot handle jobs: " .. unusable) then
        return 2
    end
end

-- Runs `luaworker work`. Returns the exit status.
function M.run(cli, cfg)
    local prepared, why_not = pcall(prepare, cli, cfg)
    if not prepared then
        io.stderr:write("luaworker: cannot start: ", tostring(why_not), "\n")
        return 2
    end
    local queues = settings.queues
    local horizon_problem = horizon.problem()
    if horizon_problem then
        io.stderr:write("luaworker: cannot start: ", horizon_problem, "\n")
        return 2
    end

    if host.file_kind(handlers.dir()) ~= "directory"
        and refuses_start("--handlers=" .. options.handlers .. ": no such directory") then
        return 2
    end
    -- a handler that does not compile is bad input, found now rather than by its jobs
    local uncompilable = handlers.uncompilable()
    if uncompilable and refuses_start("handlers that do not compile: " .. uncompilable) then
        return 2
    end
    -- the supervisor's check before a reload: the handlers, and nothing else
    if HANDLER_CHECK then return load_handlers() or EXIT_OK end
    -- the database pools' size; the failed-job store's settings (its driver's name
    -- was checked by main.c), and whether it can record a failed job: not for a
    -- lasting reason is bad input
    local sized, size_err = pcall(db.pool_size)
    if not sized then
        output.error("cannot start: " .. tostring(size_err))
        return 2
    end
    local checked, usable, why = pcall(failed_jobs.check)
    if (not checked or not usable) and refuses_start(tostring(checked and why or usable)) then
        return 2
    end
    if checked and usable and why then output.error(why) end

    local failed = load_handlers()
    if failed then return failed end

    host.report_ready()
    local one_shot = (options.once or options.stop_when_empty) and { seconds = ONE_SHOT_WAIT,
        now = function() return in_flight.count() == 0 end } or nil
    local set_up, setup_err = pcall(reservations.setup, one_shot)
    if not set_up and refuses_start(tostring(setup_err)) then return 2 end
    recover_predecessor()
    stop_signal.watch()
    queue_sizes.start(queues)
    fleet_record.start(options.heartbeat)
    horizon.start_trims()

    local _, restart_at_start = read_restart()
    events.fire_safely("starting", nil, nil, { queue = options.queue_list })

    if options.once then
        if down_for_maintenance() then
            host.sleep(options.sleep, true)
            return EXIT_OK
        end
        local job = get_next_job(queues, 1)
        if job then
            in_flight.run(job)
            in_flight.drain()
        elseif reservations.in_outage() then
            return stop(gave_up())
        else
            host.sleep(options.sleep, true)
        end
        give_back(reservations.retire)
        fleet_record.stop()
        return EXIT_OK
    end

    local start_time, jobs_processed = host.clock(), 0
    local was_paused = false
    while true do
        local _, paused = host.signals()
        if paused ~= was_paused then
            was_paused = paused
            events.fire_safely(paused and "pausing" or "resuming", nil, nil, { queue = options.queue_list })
        end
        if down_for_maintenance() or paused
            or events.fire_safely("looping", nil, nil, { queue = options.queue_list }) == false then
            give_back(reservations.give_back_held)
            local quit, _, reload = host.signals()
            if not (quit or reload) then host.sleep(options.sleep > 0 and options.sleep or 1, true) end
            local status, reason = stop_if_necessary(restart_at_start, start_time, jobs_processed, nil)
            if status then return stop(status, reason) end
        elseif in_flight.full() then
            -- jobs held ahead wait for their turn a while at most (held_until): then
            -- they go back, for another worker to run while these jobs run on
            local held_until = reservations.held_until()
            in_flight.wait(held_until)
            if held_until and in_flight.full() and host.clock() >= held_until then
                give_back(reservations.give_back_held)
            end
            local status, reason = stop_if_necessary(restart_at_start, start_time, jobs_processed, true)
            if status then return stop(status, reason) end
        else
            local room = in_flight.room(reservations.BATCH_BUDGET)
            if options.max_jobs > 0 then room = math.min(room, options.max_jobs - jobs_processed) end
            -- a worker that rests after each job takes one at a time: a job taken
            -- with another would wait out the rest reserved, its attempt charged
            if options.rest > 0 then room = math.min(room, 1) end
            local job = get_next_job(queues, room)
            if job then
                jobs_processed = jobs_processed + 1
                in_flight.run(job)
                if options.rest > 0 then host.sleep(options.rest, true) end
            else
                events.fire_safely("idle", nil, nil, { queue = options.queue_list })
                if not options.stop_when_empty then
                    guarded("error while waiting for a job", reservations.wait or idle.wait, queues)
                end
            end
            local status, reason = stop_if_necessary(restart_at_start, start_time, jobs_processed, job)
            if status then return stop(status, reason) end
        end
    end
end

return M
