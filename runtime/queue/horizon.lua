-- luaworker.queue.horizon: Horizon's records of the jobs luaworker runs (`work
-- --horizon`), as Horizon's listeners write them when its RedisQueue fires its
-- events (laravel/horizon 5.x: RedisJobRepository, RedisMetricsRepository,
-- RedisTagRepository), so that its dashboard shows them: under Horizon's prefix
-- (settings.config.horizon_prefix: HORIZON_PREFIX, else the app's slug and
-- "_horizon:"; REDIS_PREFIX does not apply; on a cluster in a hash tag: M.key), on
-- the queue's Redis. Times are PHP's microtime(true) as PHP writes a float (14
-- digits). Trims are Horizon's defaults (minutes; HORIZON_TRIM_* stand for
-- config/horizon.php's, which luaworker cannot read).
--   reserved(job)            JobReserved: MarkJobAsReserved (and the timer)
--   released(job)            JobReleased: MarkJobAsReleased
--   completed(job, failed)   JobDeleted: MarkJobAsComplete, UpdateJobMetrics
--   failed(job, exception)   JobFailed: MarkJobAsFailed, StoreTagsForFailedJob
-- A job that fails for good is completed (failed = true) first, then failed, as
-- Laravel deletes it before it fires JobFailed.
local cjson = require "cjson"
local host = require "luaworker.host"
local redis = require "luaworker.redis"
local queue = require "luaworker.queue"
local php = require "luaworker.php"
local settings = require "luaworker.base.settings"
local values = require "luaworker.base.values"
local log = require "luaworker.base.log"
local task = require "luaworker.loop.task"
local periodic = require "luaworker.base.periodic"

local M = {}

local decode = cjson.new().decode
local encode = cjson.new().encode  -- escapes '/' as '\/', as PHP's json_encode does

-- config/horizon.php's 'trim' defaults (minutes).
local function trim(name, default)
    return tonumber(settings.env("HORIZON_TRIM_" .. name:upper())) or default
end

-- LuaScripts::updateMetrics, as Horizon runs it.
local UPDATE_METRICS = [[
redis.call('hsetnx', KEYS[1], 'throughput', 0)
redis.call('sadd', KEYS[2], KEYS[1])
local hash = redis.call('hmget', KEYS[1], 'throughput', 'runtime')
local throughput = hash[1] + 1
local runtime = 0
if hash[2] then
    runtime = ((hash[1] * tonumber(hash[2])) + tonumber(ARGV[1])) / throughput
else
    runtime = tonumber(ARGV[1])
end
redis.call('hmset', KEYS[1], 'throughput', throughput, 'runtime', runtime)
]]

-- The parent's retried_by with the retry id's status set (Horizon's
-- updateRetryStatus, json_decode then json_encode of what it wrote itself: the
-- entry's status alone changes). ARGV[1]: the id as JSON; ARGV[2]: the status.
local SET_RETRY_STATUS = [[
local retries = redis.call('hget', KEYS[1], 'retried_by')
if not retries then return 0 end
local needle = '"id":' .. ARGV[1] .. ',"status":"'
local at = string.find(retries, needle, 1, true)
if not at then return 0 end
local from = at + #needle
local to = string.find(retries, '"', from, true)
redis.call('hset', KEYS[1], 'retried_by', string.sub(retries, 1, from - 1) .. ARGV[2] .. string.sub(retries, to))
return 1
]]

-- When each job started, by job (weak): Horizon's Stopwatch.
local started = setmetatable({}, { __mode = "k" })

function M.enabled()
    return settings.options.horizon == true and settings.connection_name ~= "database"
end

-- Why --horizon cannot be kept where the worker works, or nil: on the database
-- queue (Horizon works Redis queues), and on a Redis Cluster below Laravel 13.5
-- (Horizon::use then takes the cluster's first node as a single server, where
-- most of its keys' slots are not served).
function M.problem()
    if settings.options.horizon ~= true then return nil end
    if settings.connection_name == "database" then
        return "--horizon: Horizon keeps records of Redis queues only, not of the database queue"
    end
    local cluster, wraps = queue.cluster()
    if cluster and not wraps then
        return "--horizon: on a Redis Cluster Horizon keeps its records there from Laravel 13.5 on "
            .. "(--laravel=13.5, with a Horizon that supports clusters); before, Horizon::use takes the "
            .. "cluster's first node as a single server"
    end
    return nil
end

-- M[what](...) when --horizon is given; an error is logged, never the job's.
function M.record(what, ...)
    if not M.enabled() then return end
    local ok, _, trace = task.run(M[what], ...)
    if not ok then log.error("cannot keep Horizon's record of a job (" .. what .. "): " .. tostring(trace)) end
end

-- name under Horizon's prefix: on a cluster (Laravel 13.5+: Horizon::use's cluster
-- connection) the prefix wrapped in braces unless it has a hash tag, so that every
-- key of Horizon's is in one slot, as Horizon wraps it.
function M.key(name)
    local prefix = settings.config.horizon_prefix
    if queue.cluster() and not queue.has_hash_tag(prefix) then prefix = "{" .. prefix .. "}" end
    return prefix .. name
end
local key = M.key

-- microtime(true) as PHP writes it, and negated (the lists' scores: newest first).
local function now_text(sign)
    return php.float_string((sign or 1) * host.microtime())
end

-- JobPayload::id (the payload's uuid, else its id) and decoded payload of text.
local function payload_of(text)
    local ok, decoded = pcall(decode, text or "")
    if not ok or type(decoded) ~= "table" then return nil end
    local id = values.value(decoded.uuid)
    if id == nil then id = values.value(decoded.id) end
    return id ~= nil and tostring(id) or nil, decoded
end

-- Each record is sent without waiting for its reply (as the deletes are: written
-- with the worker's next command), so that a job waits on none of them; one that
-- a lost connection may have cut is sent again on the next, so after an outage a
-- job's metrics may count it twice.
local function call(...)
    redis.send("queue", ...)
end

local MODEL_IDENTIFIER = "Illuminate\\Contracts\\Database\\ModelIdentifier"

-- Horizon's Tags::for of a command without tags(): "Class:id" for each model its
-- properties name (a model's identifier; each of a collection's ids), in order,
-- each once (Tags::modelsFor's unique()).
function M.tags_of(command)
    local tags, seen = {}, {}
    if type(command) ~= "table" or not php.class(command) then return tags end
    local ok, members = pcall(php.members, command)
    for _, k in ipairs(ok and members or {}) do
        local v = command[k]
        if type(v) == "table" and php.class(v) == MODEL_IDENTIFIER then
            local ids = values.value(v.id)
            if type(ids) ~= "table" then ids = { ids } end
            for _, id in ipairs(ids) do
                local tag = tostring(values.value(v.class)) .. ":" .. tostring(values.value(id))
                if not seen[tag] then seen[tag], tags[#tags + 1] = true, tag end
            end
        end
    end
    return tags
end

-- Horizon's Tags::for: the class's own tags() when it has one (explicit: a
-- handler's `tags`, function(command) returning a list of strings or numbers: its
-- values in order, each once; an empty one counts for none, as in PHP), else the
-- models' (M.tags_of). Raises, naming class, for what is not such a list.
function M.tags_for(command, explicit, class)
    if explicit then
        local list = explicit(command)
        if type(list) ~= "table" then
            error("the tags of " .. tostring(class) .. " (its handler's tags(command)): expected a list, got "
                .. type(list), 0)
        end
        local tags, seen = {}, {}
        for i = 1, #list do
            local tag = list[i]
            if type(tag) ~= "string" and type(tag) ~= "number" then
                error(string.format("the tags of %s (its handler's tags(command)): expected strings or "
                    .. "numbers, got %s at %d", tostring(class), type(tag), i), 0)
            end
            if not seen[tag] then seen[tag], tags[#tags + 1] = true, tag end
        end
        if #tags > 0 then return tags end
    end
    return M.tags_of(command)
end

-- JobPayload::determineType by the job's class.
local TYPES = {
    ["Illuminate\\Broadcasting\\BroadcastEvent"] = "broadcast",
    ["Illuminate\\Events\\CallQueuedListener"] = "event",
    ["Illuminate\\Mail\\SendQueuedMailable"] = "mail",
    ["Illuminate\\Notifications\\SendQueuedNotifications"] = "notification",
}

-- JobPayload::shouldBeSilenced for a job of class: the class is Silenced (declared:
-- its handler's `silenced = true`, standing for `implements Silenced`), or one of
-- config('horizon.silenced'), which HORIZON_SILENCED (class names, comma-separated)
-- stands for, as luaworker cannot read the app's config.
function M.silenced(class, declared)
    if declared then return true end
    for name in (settings.env("HORIZON_SILENCED") or ""):gmatch("[^,]+") do
        if name:match("^%s*\\?(.-)%s*$") == class then return true end
    end
    return false
end

-- The fields JobPayload::prepare adds to a payload Horizon's queue pushes, as JSON
-- members to append: type, tags, silenced (M.silenced's), pushedAt.
function M.payload_fields(class, tags, silenced)
    local list = {}
    for i, tag in ipairs(tags or {}) do list[i] = encode(tag) end
    return ',"type":' .. encode(TYPES[class] or "job") .. ',"tags":[' .. table.concat(list, ",")
        .. '],"silenced":' .. (silenced and "true" or "false") .. ',"pushedAt":' .. encode(now_text())
end

-- The tags monitored from the dashboard (the set `monitoring`), read again at most
-- every MONITORING_EVERY seconds; a job's tags that are among them.
local MONITORING_EVERY = 5
local monitoring, monitoring_at = {}, nil
local function monitored(decoded)
    local tags = values.value(decoded.tags)
    if type(tags) ~= "table" or #tags == 0 then return {} end
    local now = host.clock()
    if not monitoring_at or now - monitoring_at >= MONITORING_EVERY then
        monitoring_at = now
        monitoring = {}
        for _, tag in ipairs(redis.call("queue", "SMEMBERS", key("monitoring"))) do monitoring[tag] = true end
    end
    local found = {}
    for _, tag in ipairs(tags) do
        if monitoring[tostring(tag)] then found[#found + 1] = tostring(tag) end
    end
    return found
end

-- JobPushed: StoreJob (the job's record, pending, in the recent and pending lists)
-- and StoreMonitoredTags (the job under each monitored tag it has).
function M.pushed(q, text)
    local id, decoded = payload_of(text)
    if not id then return end
    for _, tag in ipairs(monitored(decoded)) do call("ZADD", key(tag), now_text(), id) end
    local t = now_text()
    call("ZADD", key("recent_jobs"), now_text(-1), id)
    call("ZADD", key("pending_jobs"), now_text(-1), id)
    call("HMSET", key(id), "id", id, "connection", settings.connection_name, "queue", q,
        "name", tostring(values.value(decoded.displayName) or ""), "status", "pending", "payload", text,
        "created_at", t, "updated_at", t)
    call("EXPIREAT", key(id), host.now() + trim("pending", 60) * 60)
end

function M.reserved(job)
    if not M.enabled() then return end
    local id = payload_of(job:reserved_body())
    if not id then return end
    local t = now_text()
    started[job] = host.microtime()
    call("HMSET", key(id), "status", "reserved", "payload", job:reserved_body(), "updated_at", t,
        "reserved_at", t)
end

function M.released(job)
    if not M.enabled() then return end
    local id = payload_of(job:reserved_body())
    if not id then return end
    call("HMSET", key(id), "status", "pending", "payload", job:reserved_body(), "updated_at", now_text())
end

-- The job's runtime as Horizon's Stopwatch::check says it: ms, 2 decimals.
local function runtime(job)
    local at = started[job]
    if not at then return 0 end
    return math.floor((host.microtime() - at) * 100000 + 0.5) / 100
end

function M.completed(job, failed)
    if not M.enabled() then return end
    local id, decoded = payload_of(job:reserved_body())
    if not id then return end
    -- updateRetryInformationOnParent: a retry's status in its parent's retried_by
    local parent = values.value(decoded.retry_of)
    if parent ~= nil then
        call("EVAL", SET_RETRY_STATUS, 1, key(tostring(parent)), encode(id), failed and "failed" or "completed")
    end
    local silenced = values.value(decoded.silenced) == true
    call("ZADD", key(silenced and "silenced_jobs" or "completed_jobs"), now_text(-1), id)
    call("ZREM", key("pending_jobs"), id)
    call("HMSET", key(id), "status", "completed", "completed_at", now_text())
    call("EXPIREAT", key(id), host.now() + trim("completed", 60) * 60)
    if failed then return end
    -- RedisJobRepository::remember: a job with a monitored tag, in monitored_jobs
    if #monitored(decoded) > 0 then
        call("ZADD", key("monitored_jobs"), now_text(-1), id)
        call("HMSET", key(id), "id", id, "connection", settings.connection_name, "queue", tostring(job:queue()),
            "name", tostring(values.value(decoded.displayName) or ""), "status", "completed",
            "payload", job:reserved_body(), "completed_at", now_text())
        call("EXPIREAT", key(id), host.now() + trim("monitored", 10080) * 60)
    end
    local ms = php.float_string(runtime(job))
    call("EVAL", UPDATE_METRICS, 2, key("queue:" .. tostring(job:queue())), key("measured_queues"), ms)
    local name = values.value(decoded.displayName)
    call("EVAL", UPDATE_METRICS, 2, key("job:" .. tostring(name or "")), key("measured_jobs"), ms)
end

-- The lists TrimRecentJobs and TrimFailedJobs trim, each with its trim setting
-- (minutes) and Horizon's default.
local TRIMS = {
    { "recent_jobs", "recent", 60 }, { "recent_failed_jobs", "recent_failed", nil },
    { "pending_jobs", "pending", 60 }, { "completed_jobs", "completed", 60 },
    { "silenced_jobs", "completed", 60 }, { "failed_jobs", "failed", 10080 },
    { "monitored_jobs", "monitored", 10080 },
}

-- RedisJobRepository's trimRecentJobs, trimFailedJobs and trimMonitoredJobs: the jobs older than their
-- list's minutes leave it (scores are negated times: the old are the highest).
function M.trim()
    local now = host.now()
    for _, t in ipairs(TRIMS) do
        local minutes = t[3] and trim(t[2], t[3]) or trim(t[2], trim("failed", 10080))
        call("ZREMRANGEBYSCORE", key(t[1]), string.format("%d", -(now - minutes * 60)), "+inf")
    end
end

-- What a Horizon master supervisor's loop does, which luaworker's workers do when
-- none may run: the trims, at start and then every TRIM_EVERY seconds (as Horizon's
-- listeners, at most once a minute). Harmless when a master trims too.
local TRIM_EVERY = 60
function M.start_trims()
    if not M.enabled() then return end
    periodic.start(TRIM_EVERY, function() M.record("trim") end, "trim Horizon's lists")
end

function M.failed(job, exception)
    if not M.enabled() then return end
    local text = job:reserved_body()
    local id, decoded = payload_of(text)
    if not id then return end
    for _, list in ipairs({ "failed_jobs", "recent_failed_jobs" }) do
        call("ZADD", key(list), now_text(-1), id)
    end
    for _, list in ipairs({ "pending_jobs", "completed_jobs", "silenced_jobs" }) do
        call("ZREM", key(list), id)
    end
    call("HMSET", key(id), "id", id, "connection", settings.connection_name, "queue", tostring(job:queue()),
        "name", tostring(values.value(decoded.displayName) or ""), "status", "failed", "payload", text,
        "exception", exception, "context", "", "failed_at", now_text())
    call("EXPIREAT", key(id), host.now() + trim("failed", 10080) * 60)
    local tags = values.value(decoded.tags)
    if type(tags) == "table" then
        for _, tag in ipairs(tags) do
            call("ZADD", key("failed:" .. tostring(tag)), now_text(), id)
            call("EXPIRE", key("failed:" .. tostring(tag)), trim("failed", 10080) * 60)
        end
    end
end

return M
