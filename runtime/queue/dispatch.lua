-- luaworker.queue.dispatch: builds and pushes Laravel-format jobs that a PHP worker runs
-- as if Laravel had dispatched them (Queue::createPayload of the Laravel version
-- luaworker speaks, pushed with the push script, or to :delayed).
local cjson = require "cjson"
local host = require "luaworker.host"
local queue = require "luaworker.queue"
local database_queue = require "luaworker.queue.database_queue"
local php = require "luaworker.php"
local payload_values = require "luaworker.base.values"
local settings = require "luaworker.base.settings"
local log_context = require "luaworker.queue.context"
local serialized_job = require "luaworker.queue.serialized_job"
local task = require "luaworker.loop.task"
local encrypter = require "luaworker.encrypter"
local horizon = require "luaworker.queue.horizon"

local M = {}

local null = php.null
local value = payload_values.value
local encode = cjson.new().encode  -- escapes '/' as '\/', as PHP's json_encode does

-- InteractsWithQueue's and Queueable's properties of a Laravel 8 job, in the order
-- PHP's native serialization emits them after the class's own (`push` builds 8.83's
-- object; serialized_job writes it as the version does).
local QUEUEABLE = { "job", "connection", "queue", "chainConnection", "chainQueue",
    "chainCatchCallbacks", "delay", "afterCommit", "middleware", "chained" }

M.QUEUEABLE = QUEUEABLE

-- How push_command serializes each object M.command made (weak keys):
-- serialized_job.serialize's `how`.
local how_of = setmetatable({}, { __mode = "k" })

local function json_or_null(v)
    if v == nil or v == null then return "null" end
    return encode(v)
end

-- The payload text, fields in the order Laravel emits them. fields: uuid,
-- displayName, job, maxTries, maxExceptions, failOnTimeout, backoff, timeout,
-- retryUntil (left out for string jobs, as Laravel does), id (nil on the database
-- queue, whose payloads have neither id nor attempts), delay; data_text is
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
        -- the Redis queue's own (RedisQueue::createPayloadArray); not on a database.
        -- Horizon's queue makes the id the uuid
        fields.id and (',"id":' .. encode(horizon.enabled() and fields.uuid or fields.id) .. ',"attempts":0')
            or "",
        since_12_11 and (',"delay":' .. ((fields.delay or 0) > 0 and string.format("%d", fields.delay)
            or "null")) or "",
        horizon.enabled() and horizon.payload_fields(fields.displayName, fields.tags, fields.silenced) or "",
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

-- Makes the PHP object of class that luaworker.dispatch pushes from properties (a
-- plain table, or a value made by luaworker.php, which is copied, not changed):
-- the class's own properties as declared (the handler's declaration, or nil: see
-- serialized_job.declaration) with the declared defaults of those not given, in
-- the declared order (else sorted by name), then the others sorted; properties of
-- Laravel's job traits go where the version puts them when it is serialized.
-- marks: what the class says for Horizon (handlers.horizon's {tags =, silenced =}),
-- or nil. Raises when a plain table has a key that is not a name.
function M.command(class, properties, declared, marks)
    local object
    if php.class(properties) then
        object = serialized_job.with_defaults(serialized_job.copy(properties), declared)
    else
        local values, own, traits = {}, {}, {}
        for k, v in pairs(properties) do
            if type(k) ~= "string" then
                error("properties must be a table of named properties, got key " .. tostring(k), 3)
            end
            values[k] = v
        end
        for _, k in ipairs(declared and declared.defaults_order or {}) do
            if values[k] == nil then values[k] = declared.defaults[k] end
        end
        for k in pairs(values) do
            if serialized_job.is_trait_property(k) then traits[#traits + 1] = k else own[#own + 1] = k end
        end
        local rank = declared and declared.rank or {}
        table.sort(own, function(a, b)
            local ra, rb = rank[a], rank[b]
            if ra and rb then return ra < rb end
            if ra or rb then return ra ~= nil end
            return a < b
        end)
        local plain, names = {}, {}
        for _, k in ipairs(own) do
            plain[k], names[k] = values[k], serialized_job.php_name(declared, class, k)
        end
        object = php.select(php.object(class, plain, own), own, names)
        for _, k in ipairs(traits) do object[k] = values[k] end
    end
    how_of[object] = { declared = declared, fill = true, horizon = marks }
    return object
end

-- Encrypts a serialized command as Laravel's encrypt() does (ShouldBeEncrypted).
local function encrypt_command(text)
    local enc = encrypter
    local key, err = enc.key(os.getenv("APP_KEY") or "", os.getenv("APP_CIPHER"))
    if not key then error("cannot encrypt the job: " .. err, 0) end
    local sealed, serr = enc.encrypt(php.serialize(text), key, os.getenv("APP_CIPHER"))
    if not sealed then error("cannot encrypt the job: " .. serr, 0) end
    return sealed
end

-- Whether jobs go to Laravel's database queue: the connection named "database".
local function on_database()
    return settings.connection_name == "database"
end

-- Pushes payload onto queue q, or onto its :delayed set when delay > 0; on the
-- database queue, a row available after delay. Returns the row's id there.
local faked  -- the recorder of fake(), or nil

-- Jobs pushed from now on go to recorder(q, payload_text, delay), which returns
-- their id, instead of a queue (luaworker.testing, `luaworker run`); nil pushes
-- them again.
function M.fake(recorder)
    faked = recorder
end

local function enqueue(q, payload, delay)
    if faked then return faked(q, payload, delay) end
    if on_database() then
        return database_queue.default():push(q, payload, delay)
    end
    if delay and delay > 0 then
        queue.later(q, host.now() + delay, payload)
    else
        queue.push(q, payload)
    end
    horizon.record("pushed", q, payload)
end

-- Pushes a job whose data.command is command (a PHP object value) to queue q on the
-- worker's connection; delay: seconds (to :delayed) or nil; how: how the version
-- serializes it (serialized_job.serialize's; default: as M.command's object says,
-- else every member it has from 9.4 at their defaults left out), with `horizon`,
-- what the class says for Horizon (handlers.horizon's: its tags(), Silenced).
-- Returns the job id (the payload's; on the database queue the row's).
function M.push_command(command, q, delay, encrypt, how)
    local payload, id = M.command_payload(command, delay, encrypt, how)
    local row = enqueue(q, payload, delay)
    return id or row
end

-- The payload text push_command pushes for command, and its payload id (nil on the
-- database queue).
function M.command_payload(command, delay, encrypt, how)
    local class = php.class(command)
    how = how or how_of[command] or {}
    local text, err = serialized_job.serialize(command, how)
    if not text then error("cannot serialize the job's properties: " .. err, 0) end
    if encrypt then text = encrypt_command(text) end
    local marks = how.horizon or {}  -- the handler's tags and silenced (handlers.horizon)
    local fields = {
        uuid = host.uuid(), id = not on_database() and host.random_id(32) or nil, displayName = class,
        job = payload_values.CALL_QUEUED_HANDLER,
        maxTries = value(command.tries), maxExceptions = value(command.maxExceptions),
        failOnTimeout = value(command.failOnTimeout) == true, backoff = backoff_of(command),
        timeout = value(command.timeout), retryUntil = timestamp_of(command.retryUntil),
        deleteWhenMissingModels = value(command.deleteWhenMissingModels) == true, delay = delay,
        tags = horizon.enabled() and horizon.tags_for(command, marks.tags, class) or nil,
        silenced = horizon.enabled() and horizon.silenced(class, marks.silenced),
    }
    -- 12.51+: the command's batchId beside it
    local batch_id = settings.laravel_at_least(12, 51)
        and (',"batchId":' .. json_or_null(value(command.batchId))) or ""
    return M.payload_text(fields, '{"commandName":' .. encode(class)
        .. ',"command":' .. encode(text) .. batch_id .. "}"), fields.id
end

-- Pushes a string job "Class@method" with data (a JSON text). Returns the job id (the
-- payload's; on the database queue the row's).
function M.push_string_job(name, data_text, q, delay, fields)
    fields = fields or {}
    fields.uuid, fields.id = host.uuid(), not on_database() and host.random_id(32) or nil
    fields.displayName, fields.job, fields.string_job = name:match("^([^@]*)"), name, true
    fields.delay = delay
    -- (Horizon's JobPayload is given the job's string itself)
    fields.silenced = horizon.enabled() and horizon.silenced(name)
    local row = enqueue(q, M.payload_text(fields, data_text), delay)
    return fields.id or row
end

return M
