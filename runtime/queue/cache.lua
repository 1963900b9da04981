-- luaworker.queue.cache: the keys Laravel's queue keeps in the app's cache store (a
-- Redis store: the connection "cache", REDIS_CACHE_DB, names prefixed by
-- settings.cache_prefix), one function per use, so that the worker and the commands
-- reach the cache only here:
--   illuminate:queue:restart              queue:restart's signal (a timestamp)
--   illuminate:queue:paused:<conn>:<q>    Laravel 12.40+'s queue:pause
--   illuminate:queues:paused              13.25+'s queue:pause --all
--   job-exceptions:<uuid>                 a job's maxExceptions counter
--   the job's unique lock                 UniqueLock, on the lock connection (the queue's)
-- Errors are the redis module's (RedisError), raised, except where said.
local host = require "luaworker.host"
local redis = require "luaworker.redis"
local task = require "luaworker.loop.task"
local settings = require "luaworker.base.settings"

local M = {}

-- How long Laravel's maxExceptions counters live (seconds), as Worker's cache put.
local EXCEPTIONS_TTL = 86400

-- The key of queue:restart's signal, with the cache prefix.
function M.restart_key()
    return settings.cache_prefix .. "illuminate:queue:restart"
end

-- Reads queue:restart's signal without raising. Returns what task.run gives for
-- host.command: true, true, the value (false when missing); or true, false, message,
-- kind for an error reply or a lost connection; or false, error, traceback.
function M.read_restart()
    return task.run(host.command, "cache", "GET", M.restart_key())
end

-- Writes queue:restart's signal: the time now, as Laravel's `queue:restart`.
function M.signal_restart(now)
    redis.call("cache", "SET", M.restart_key(), now)
end

-- Whether a PHP-serialized value in the cache is true as PHP reads it (a missing
-- key is not).
local function cached_true(v)
    return v ~= nil and v ~= false and v ~= "b:0;" and v ~= "N;" and v ~= "i:0;" and v ~= 's:0:"";'
end

-- Whether queue q of connection is paused by `queue:pause` (Laravel 12.40+; 13.25+
-- also `queue:pause --all`); false before 12.40, which has no such command.
function M.queue_paused(connection, q)
    if not settings.laravel_at_least(12, 40) then return false end
    local key = settings.cache_prefix .. "illuminate:queue:paused:" .. connection .. ":" .. q
    if settings.laravel_at_least(13, 25) then
        local values = redis.call("cache", "MGET", settings.cache_prefix .. "illuminate:queues:paused", key)
        return cached_true(values[1]) or cached_true(values[2])
    end
    return cached_true(redis.call("cache", "GET", key))
end

-- Counts one more exception of the job uuid, as Worker::markJobAsFailedIfWillExceed-
-- MaxExceptions does (the counter created with its TTL when missing), and returns the
-- count. The increment is sent once: a lost connection raises rather than counting
-- twice.
function M.count_exception(uuid)
    local key = settings.cache_prefix .. "job-exceptions:" .. uuid
    local current = redis.call("cache", "GET", key)
    if not current or current == "" or current == "0" then
        redis.call("cache", "SETEX", key, EXCEPTIONS_TTL, 0)
    end
    return redis.call_once("cache", nil, "INCRBY", key, 1)
end

-- Forgets the job uuid's exception counter (the job is failed by it).
function M.forget_exceptions(uuid)
    redis.call("cache", "DEL", settings.cache_prefix .. "job-exceptions:" .. uuid)
end

-- UniqueLock::release of the lock key (without the cache prefix) on the lock
-- connection, the queue's ('default'): with owner (13.24+), only while that owner
-- holds it (scripts/release_lock.lua); else at once.
function M.release_unique_lock(key, owner)
    key = settings.cache_prefix .. key
    if owner then
        redis.script("queue", "release_lock", { key }, { owner })
    else
        redis.call("queue", "DEL", key)
    end
end

return M
