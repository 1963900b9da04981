-- luaworker.queue.horizon_retry: Horizon's retries of failed jobs, kept as Horizon
-- keeps them (laravel/horizon 5.x), under its prefix:
--   retry_failed_job(id)       Laravel\Horizon\Jobs\RetryFailedJob::handle, the job
--                              Horizon's dashboard dispatches for "retry": the failed
--                              job's payload pushed again (RedisJobRepository's
--                              findFailed, preparePayload), the push recorded as
--                              Horizon's queue records one (with --horizon), and the
--                              retry noted in the failed job's retried_by
--                              (storeRetryReference)
-- (A retry that ends sets its status there: horizon.lua's completed.)
local cjson = require "cjson"
local host = require "luaworker.host"
local redis = require "luaworker.redis"
local php_json = require "luaworker.php.json"
local queue = require "luaworker.queue"
local settings = require "luaworker.base.settings"
local values = require "luaworker.base.values"
local horizon = require "luaworker.queue.horizon"

local M = {}

local encode = cjson.new().encode  -- escapes '/' as '\/', as PHP's json_encode does
local decode = cjson.new().decode

local key = horizon.key

-- RetryFailedJob::prepareNewTimeout: a retryUntil (or timeoutAt) moved to as far
-- from now as it was from the push, in whole seconds; "null" without one.
local function new_timeout(decoded)
    local retry_until = tonumber(values.value(decoded.retryUntil) or values.value(decoded.timeoutAt))
    if not retry_until then return "null" end
    local pushed_at = tonumber(values.value(decoded.pushedAt)) or host.microtime()
    return string.format("%d", host.now() + math.ceil(retry_until - pushed_at))
end

function M.retry_failed_job(failed_id)
    local r = redis.call("queue", "HMGET", key(failed_id), "id", "connection", "queue", "status", "payload")
    -- findFailed: no record, or one that is not failed
    if not r[1] or r[4] ~= "failed" then return false end
    if r[2] ~= settings.connection_name then
        error(string.format("cannot retry Horizon's failed job %s: it is of the connection %s, and this "
            .. "worker pushes onto %s", failed_id, tostring(r[2]), settings.connection_name), 0)
    end
    local ok, decoded = pcall(decode, r[5] or "")
    if not ok or type(decoded) ~= "table" then
        error("cannot retry Horizon's failed job " .. failed_id .. ": its payload is not a JSON object", 0)
    end
    local id = host.uuid()
    local payload = assert(php_json.merge(r[5], { { "id", encode(id) }, { "uuid", encode(id) },
        { "attempts", "0" }, { "retry_of", encode(failed_id) }, { "retryUntil", new_timeout(decoded) } }))
    queue.push(r[3], payload)
    horizon.record("pushed", r[3], payload)
    local retries = redis.call("queue", "HGET", key(failed_id), "retried_by")
    local entry = string.format('{"id":%s,"status":"pending","retried_at":%d}', encode(id), host.now())
    if type(retries) ~= "string" or not retries:match("^%[.*%]$") or retries == "[]" then
        retries = "[" .. entry .. "]"
    else
        retries = retries:sub(1, -2) .. "," .. entry .. "]"
    end
    redis.call("queue", "HMSET", key(failed_id), "retried_by", retries)
    return true
end

return M
