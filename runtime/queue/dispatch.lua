-- luaworker.dispatch: builds and pushes Laravel-format jobs that a PHP worker runs
-- as if Laravel had dispatched them (Queue::createPayload of the Laravel version
-- luaworker speaks, pushed with the push script, or to :delayed).
local cjson = require "cjson"
local host = require "luaworker.host"
local queue = require "luaworker.queue"
local php = require "luaworker.php"
local payload_values = require "luaworker.payload"
local settings = require "luaworker.settings"
local log_context = require "luaworker.log_context"
local task = require "luaworker.task"

local M = {}

local null = php.null
local value = payload_values.value
local encode = cjson.new().encode  -- escapes '/' as '\/', as PHP's json_encode does

-- InteractsWithQueue's and Queueable's properties of a Laravel 8 job, in the order
-- PHP's native serialization emits them after the class's own, with their defaults.
local QUEUEABLE = { "job", "connection", "queue", "chainConnection", "chainQueue",
    "chainCatchCallbacks", "delay", "afterCommit", "middleware", "chained" }

M.QUEUEABLE = QUEUEABLE

local function json_or_null(v)
    if v == nil or v == null then return "null" end
    return encode(v)
end

-- The payload text, fields in the order Laravel emits them. fields: uuid,
-- displayName, job, maxTries, maxExceptions, failOnTimeout, backoff, timeout,
-- retryUntil (left out for string jobs, as Laravel does), id, delay; data_text is
-- JSON. The version luaworker speaks adds (Queue::createPayload): 12.11+ createdAt
-- and delay (the dispatch delay, or null), 13.0+ deleteWhenMissingModels (object
-- jobs: fields.deleteWhenMissingModels); 11.0+ the Context of the job running in
-- the calling task, if any (luaworker.log_context).
function M.payload_text(fields, data_text)
    local since_12_11 = settings.laravel_at_least(12, 11)
    local context = ""
    local running = task.current()
    if running and running.job and settings.laravel_at_least(11, 0) then
        context = log_context.member(running.job:log_context())
    end
    return table.concat({
        '{"uuid":', encode(fields.uuid),
        ',"displayName":', encode(fields.displayName),
        ',"job":', encode(fields.job),
        ',"maxTries":', json_or_null(fields.maxTries),
        ',"maxExceptions":', json_or_null(fields.maxExceptions),
        ',"failOnTimeout":', fields.failOnTimeout and "true" or "false",
        ',"backoff":', json_or_null(fields.backoff),
        ',"timeout":', json_or_null(fields.timeout),
        fields.string_job and "" or (',"retryUntil":' .. json_or_null(fields.retryUntil)),
        (not fields.string_job and settings.laravel_at_least(13, 0))
            and (',"deleteWhenMissingModels":' .. (fields.deleteWhenMissingModels and "true" or "false"))
            or "",
        ',"data":', data_text,
        since_12_11 and string.format(',"createdAt":%d', host.now()) or "",
        context,
        ',"id":', encode(fields.id),
        ',"attempts":0',
        since_12_11 and (',"delay":' .. ((fields.delay or 0) > 0 and string.format("%d", fields.delay)
            or "null")) or "",
        '}',
    })
end

-- Queue::getJobBackoff: the backoff property joined with ',' (a string), or nil.
local function backoff_of(command)
    local b = value(command.backoff)
    if b == nil then return nil end
    if type(b) == "table" then
        local parts = {}
        for i = 1, #b do parts[i] = tostring(b[i]) end
        return table.concat(parts, ",")
    end
    return tostring(b)
end

-- A Unix time from an int or a Carbon/DateTime value; nil for anything else.
local function timestamp_of(v)
    v = value(v)
    if type(v) == "number" then return v end
    if type(v) == "table" and type(v.date) == "string" then
        local y, mo, d, h, mi, s = v.date:match("^(%d+)%-(%d+)%-(%d+) (%d+):(%d+):(%d+)")
        if y and (v.timezone == "UTC" or v.timezone == "+00:00") then
            return os.time({ year = tonumber(y), month = tonumber(mo), day = tonumber(d),
                hour = tonumber(h), min = tonumber(mi), sec = tonumber(s), isdst = false })
                - os.time({ year = 1970, month = 1, day = 1, hour = 0, isdst = false })
        end
    end
    return nil
end

-- Adds the Queueable defaults a Laravel job object carries, keeping what is set.
local function with_queueable_defaults(command)
    for _, k in ipairs(QUEUEABLE) do
        if command[k] == nil then
            if k == "middleware" or k == "chained" then command[k] = {} else command[k] = null end
        end
    end
    return command
end

-- Makes a PHP object of class from properties (a plain table, or a value made by
-- luaworker.php): own properties first (sorted by name when plain), then the
-- Queueable ones.
function M.command(class, properties)
    if php.class(properties) then
        return with_queueable_defaults(properties)
    end
    local keys = {}
    for k in pairs(properties) do
        if type(k) ~= "string" then
            error("properties must be a table of named properties, got key " .. tostring(k), 3)
        end
        keys[#keys + 1] = k
    end
    table.sort(keys)
    local seen = {}
    for _, k in ipairs(keys) do seen[k] = true end
    for _, k in ipairs(QUEUEABLE) do
        if not seen[k] then keys[#keys + 1] = k end
    end
    return with_queueable_defaults(php.object(class, properties, keys))
end

-- Encrypts a serialized command as Laravel's encrypt() does (ShouldBeEncrypted).
local function encrypt_command(text)
    local enc = require "luaworker.encrypter"
    local key, err = enc.key(os.getenv("APP_KEY") or "", os.getenv("APP_CIPHER"))
    if not key then error("cannot encrypt the job: " .. err, 0) end
    local sealed, serr = enc.encrypt(php.serialize(text), key, os.getenv("APP_CIPHER"))
    if not sealed then error("cannot encrypt the job: " .. serr, 0) end
    return sealed
end

-- Pushes payload onto queue q, or onto its :delayed set when delay > 0.
local function enqueue(q, payload, delay)
    if delay and delay > 0 then
        queue.later(q, host.now() + delay, payload)
    else
        queue.push(q, payload)
    end
end

-- Pushes a job whose data.command is command (a PHP object value) to queue q on the
-- worker's connection; delay: seconds (to :delayed) or nil. Returns the job id.
function M.push_command(command, q, delay, encrypt)
    local class = php.class(command)
    local text, err = php.serialize(command)
    if not text then error("cannot serialize the job's properties: " .. err, 0) end
    if encrypt then text = encrypt_command(text) end
    local fields = {
        uuid = host.uuid(), id = host.random_id(32), displayName = class,
        job = payload_values.CALL_QUEUED_HANDLER,
        maxTries = value(command.tries), maxExceptions = value(command.maxExceptions),
        failOnTimeout = value(command.failOnTimeout) == true, backoff = backoff_of(command),
        timeout = value(command.timeout), retryUntil = timestamp_of(command.retryUntil),
        deleteWhenMissingModels = value(command.deleteWhenMissingModels) == true, delay = delay,
    }
    -- 12.51+: the command's batchId beside it
    local batch_id = settings.laravel_at_least(12, 51)
        and (',"batchId":' .. json_or_null(value(command.batchId))) or ""
    enqueue(q, M.payload_text(fields, '{"commandName":' .. encode(class)
        .. ',"command":' .. encode(text) .. batch_id .. "}"), delay)
    return fields.id
end

-- Pushes a string job "Class@method" with data (a JSON text). Returns the job id.
function M.push_string_job(name, data_text, q, delay, fields)
    fields = fields or {}
    fields.uuid, fields.id = host.uuid(), host.random_id(32)
    fields.displayName, fields.job, fields.string_job = name:match("^([^@]*)"), name, true
    fields.delay = delay
    enqueue(q, M.payload_text(fields, data_text), delay)
    return fields.id
end

return M
