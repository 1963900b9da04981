-- luaworker.worker.output: what the worker prints. Job lines on stdout as the queue:work
-- of the Laravel version luaworker speaks prints them: Laravel 8.83's
-- ("[Y-m-d H:i:s][<payload id>] Processing: <name>") up to 9.20, the two-column
-- lines of 9.21+ after (luaworker.console_lines); or with --json one object per
-- event in the fields of Laravel 11.27+'s --json output; errors and notices on
-- stderr.
local cjson = require "cjson"
local host = require "luaworker.host"
local console_lines = require "luaworker.worker.console_lines"
local log = require "luaworker.base.log"

local M = {}

local json_mode, quiet = false, false

-- When each job in hand started, as this process saw it: { clock = host.clock(),
-- time = "Y-m-d H:i:s" } by job (weak: a job done is forgotten).
local starts = setmetatable({}, { __mode = "k" })

function M.configure(options)
    json_mode = options.json and true or false
    quiet = options.quiet and true or false
end

local function now_text()
    return os.date("%Y-%m-%d %H:%M:%S")
end

local function write(line)
    io.stdout:write(line)
    io.stdout:flush()
end

local function iso_timestamp()
    local t = host.microtime()
    local s = math.floor(t)
    local offset = os.date("%z", s)
    return os.date("%Y-%m-%dT%H:%M:%S", s) .. string.format(".%06d", math.floor((t - s) * 1e6))
        .. offset:sub(1, 3) .. ":" .. offset:sub(4, 5)
end

-- PHP's array_filter: what PHP takes for false is left out.
local function falsy(v)
    return v == nil or v == false or v == "" or v == "0" or v == 0
end

-- One JSON line of the keys in order (a list) with their values in fields, as
-- WorkCommand's json_encode(array_filter([...])) writes it.
local function write_json(keys, fields)
    local parts = {}
    for _, k in ipairs(keys) do
        local v = fields[k]
        if not falsy(v) then parts[#parts + 1] = cjson.encode(k) .. ":" .. cjson.encode(v) end
    end
    io.stdout:write("{", table.concat(parts, ","), "}\n")
    io.stdout:flush()
end

local JOB_KEYS = { "level", "id", "uuid", "connection", "queue", "job", "status", "result",
    "attempts", "exception", "message", "timestamp", "duration" }
local QUEUE_KEYS = { "level", "queue", "status", "timestamp" }

-- s as a log line takes it (luaworker.base.log).
M.text = log.text

-- A job's name (displayName, else job) as every line says it: empty when the
-- payload names none, as Laravel prints a null name.
function M.job_name(job)
    return M.text(job:name() or "")
end

-- Says that job's lease lapsed: its reservation expired before a renewal was
-- confirmed (why: what could not be reached), so another worker may run it too.
function M.lease_lapsed(job, why)
    M.error(string.format("could not renew the reservation of %s (attempt %s) before it expired (%s): "
        .. "another worker may run it too", M.job_name(job), job:attempts(), why), job)
end

-- print() for handlers: a line, written at once (a worker killed for a timeout
-- loses none of it), on stdout, or on stderr with --json (stdout holds only the
-- JSON lines then).
function M.print(...)
    local n = select("#", ...)
    local parts = { ... }
    for i = 1, n do parts[i] = tostring(parts[i]) end
    local stream = json_mode and io.stderr or io.stdout
    stream:write(table.concat(parts, "\t", 1, n), "\n")
    stream:flush()
end

local LEVEL = { starting = "info", success = "info" }

-- A job's line (or JSON object): status "starting", "success",
-- "released_after_exception" or "failed"; exception and duration (seconds) for
-- --json. The console lines time the job from its "starting" in this process.
function M.job(status, job, exception, duration)
    if quiet then return end
    if json_mode then
        local result
        if status ~= "starting" then
            result = job:is_deleted() and "deleted" or job:is_released() and "released"
                or job:has_failed() and "failed" or nil
        end
        write_json(JOB_KEYS, {
            level = LEVEL[status] or "warning",
            id = job:id(),
            uuid = job:uuid(),
            connection = job:connection_name(),
            queue = job:queue(),
            job = job:name(),
            status = status,
            result = result,
            attempts = job:attempts(),
            exception = exception and exception.class or nil,
            message = exception and exception.message or nil,
            timestamp = iso_timestamp(),
            duration = duration and tonumber(string.format("%.6f", duration)) or nil,
        })
        return
    end
    if console_lines.format() then
        local now, clock = now_text(), host.clock()
        if status == "starting" then starts[job] = { clock = clock, time = now } end
        local start = starts[job]
        local line = console_lines.job_line(status, M.job_name(job), now,
            start and start.time or now, start and clock - start.clock or 0)
        if line then write(line) end
        return
    end
    local label
    if status == "starting" then label = "Processing:"
    elseif status == "success" then label = "Processed: "
    elseif status == "failed" then label = "Failed:    "
    else return end
    write(table.concat({ "[", now_text(), "][", M.text(job:id()), "] ", label, " ",
        M.job_name(job), "\n" }))
end

-- The job started at host.clock() time clock out of this process's sight (in the
-- process this one replaces, ended for the job's timeout): its console line tells
-- how long it ran, as Laravel's timeout handler, in the job's own process, does.
function M.started(job, clock)
    starts[job] = { clock = clock,
        time = os.date("%Y-%m-%d %H:%M:%S", math.floor(host.microtime() - (host.clock() - clock))) }
end

-- Worker::raisePausedQueueEvents's line (Laravel 13.26+): queue q was found paused
-- (status "paused") or no longer paused ("resumed").
function M.queue_status(q, status)
    if quiet then return end
    if json_mode then
        write_json(QUEUE_KEYS, { level = "warning", queue = q, status = status,
            timestamp = iso_timestamp() })
        return
    end
    if console_lines.format() then
        write(console_lines.queue_line(M.text(q), status, now_text()))
        return
    end
    write(table.concat({ "[", now_text(), "] Queue ", M.text(q), " ", status, "\n" }))
end

-- What queue:work prints when it starts, for the comma-separated queues it works
-- (Laravel 9.21+'s notice, on a terminal from 9.41), before any job line.
function M.worker_starting(queues)
    if quiet or json_mode then return end
    local notice = console_lines.starting(M.text(queues))
    if notice then write(notice) end
end

-- An error or notice for the operator, on stderr (luaworker.base.log).
M.error = log.error

return M
