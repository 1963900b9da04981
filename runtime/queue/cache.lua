-- luaworker.queue.cache: the keys Laravel's queue keeps in the app's cache store, one
-- function per use, so that the worker and the commands reach the cache only here.
-- The store is CACHE_STORE (Laravel 11+'s name) or CACHE_DRIVER (8-10's): "redis"
-- (the connection "cache", REDIS_CACHE_DB, names prefixed by settings.cache_prefix;
-- unique locks on the queue's connection), "database" (queue/cache_database.lua) or
-- "file" (queue/cache_file.lua). Unset, it is Redis, except on the database queue,
-- where it is Laravel's default for the version (8-10 file, 11+ database): an app
-- that keeps its jobs in a database may have no Redis at all. The keys:
--   illuminate:queue:restart              queue:restart's signal (a timestamp)
--   illuminate:queue:paused:<conn>:<q>    Laravel 12.40+'s queue:pause
--   illuminate:queues:paused              13.25+'s queue:pause --all
--   job-exceptions:<uuid>                 a job's maxExceptions counter
--   the job's unique lock                 UniqueLock, on the lock connection (the queue's)
--   laravel-queue-overlap:<class>:<key>   WithoutOverlapping's lock (worker/job_middleware.lua)
-- Errors are the store's (a RedisError, a QueryException, a file's), raised, except
-- where said.
local host = require "luaworker.host"
local redis = require "luaworker.redis"
local task = require "luaworker.loop.task"
local settings = require "luaworker.base.settings"
local cache_database = require "luaworker.queue.cache_database"
local cache_file = require "luaworker.queue.cache_file"

local M = {}

local env = settings.env

-- The name of the app's cache store (see above).
function M.store_name()
    local name = env("CACHE_STORE") or env("CACHE_DRIVER")
    if name then return name end
    if settings.connection_name ~= "database" then return "redis" end
    return settings.laravel_at_least(11, 0) and "database" or "file"
end

-- The cache prefix as Laravel's own stores use it: settings.cache_prefix without the
-- queue connection's prefix and the ':' 8-10's RedisStore adds.
local function plain_prefix()
    local p = settings.config.cache_prefix
    if not settings.laravel_at_least(11, 0) then p = p:gsub(":$", "") end
    return p
end

local stores = {}

-- The store outside Redis (database or file), or nil for Redis; raises for a store
-- luaworker cannot read.
local function store()
    local name = M.store_name()
    if name == "redis" then return nil end
    if not stores[name] then
        if name == "database" then
            stores[name] = cache_database.new(plain_prefix())
        elseif name == "file" then
            stores[name] = cache_file.new()
        else
            error("cache store " .. name .. " (CACHE_STORE / CACHE_DRIVER): luaworker reads the "
                .. "redis, database and file stores", 0)
        end
    end
    return stores[name]
end

-- An integer as PHP serializes it, as the stores outside Redis keep it.
local function serialized(n) return string.format("i:%d;", n) end

-- How long Laravel's maxExceptions counters live (seconds), as Worker's cache put.
local EXCEPTIONS_TTL = 86400

-- The key of queue:restart's signal, with the cache prefix.
function M.restart_key()
    return settings.cache_prefix .. "illuminate:queue:restart"
end

-- Reads queue:restart's signal without raising. Returns what task.run gives for
-- host.command: true, true, the value (false when missing); or true, false, message,
-- kind for an error reply or a lost connection; or false, error, traceback.
-- Outside Redis: true, true, the serialized value (false when missing), or false,
-- error, traceback.
function M.read_restart()
    local ok, s = pcall(store)
    if not ok then return false, s, "" end
    if s then
        return task.run(function()
            return true, s:get("illuminate:queue:restart") or false
        end)
    end
    return task.run(host.command, "cache", "GET", M.restart_key())
end

-- Writes queue:restart's signal: the time now, as Laravel's `queue:restart` (the
-- RedisStore keeps a number as it is, the others serialize it). Returns false when
-- the store is a Redis Cluster and no replica of the key's master confirmed the
-- write within a second (a failover then would lose it), else true.
function M.signal_restart(now)
    local s = store()
    if s then
        s:forever("illuminate:queue:restart", serialized(now))
        return true
    end
    redis.call("cache", "SET", M.restart_key(), now)
    return not settings.config.cache_redis.cluster
        or redis.call_at("cache", M.restart_key(), "WAIT", 1, 1000) > 0
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
    local s = store()
    if s then
        local paused = "illuminate:queue:paused:" .. connection .. ":" .. q
        return cached_true(s:get(paused))
            or settings.laravel_at_least(13, 25) and cached_true(s:get("illuminate:queues:paused"))
    end
    local key = settings.cache_prefix .. "illuminate:queue:paused:" .. connection .. ":" .. q
    local all = settings.cache_prefix .. "illuminate:queues:paused"
    if settings.laravel_at_least(13, 25) and settings.config.cache_redis.cluster then
        -- two slots of a cluster: a GET each (MGET would be refused, CROSSSLOT)
        return cached_true(redis.call("cache", "GET", all)) or cached_true(redis.call("cache", "GET", key))
    elseif settings.laravel_at_least(13, 25) then
        local values = redis.call("cache", "MGET", all, key)
        return cached_true(values[1]) or cached_true(values[2])
    end
    return cached_true(redis.call("cache", "GET", key))
end

-- Counts one more exception of the job uuid, as Worker::markJobAsFailedIfWillExceed-
-- MaxExceptions does (the counter created with its TTL when missing), and returns the
-- count. The increment is sent once: a lost connection raises rather than counting
-- twice.
function M.count_exception(uuid)
    local s = store()
    if s then
        local item = "job-exceptions:" .. uuid
        local current = s:get(item)
        if not current or current == "i:0;" then s:put(item, "i:0;", EXCEPTIONS_TTL) end
        return s:increment(item)
    end
    local key = settings.cache_prefix .. "job-exceptions:" .. uuid
    local current = redis.call("cache", "GET", key)
    if not current or current == "" or current == "0" then
        redis.call("cache", "SETEX", key, EXCEPTIONS_TTL, 0)
    end
    return redis.call_once("cache", nil, "INCRBY", key, 1)
end

-- Forgets the job uuid's exception counter (the job is failed by it).
function M.forget_exceptions(uuid)
    local s = store()
    if s then return s:forget("job-exceptions:" .. uuid) end
    redis.call("cache", "DEL", settings.cache_prefix .. "job-exceptions:" .. uuid)
end

-- The app's cache store for numbers (Laravel's RateLimiter keeps its counts there):
-- get(key) -> a number or nil; add(key, n, seconds) -> whether it was stored (not
-- there before: Repository::add); increment(key) -> the new value; put(key, n,
-- seconds); forget(key). On Redis the cache connection, numbers kept as they are
-- (RedisStore::serialize); elsewhere PHP-serialized, as the stores keep them.
local redis_numbers = {
    get = function(key)
        local v = redis.call("cache", "GET", settings.cache_prefix .. key)
        return v and tonumber(v)
    end,
    add = function(key, n, seconds)
        local r = redis.script_once("cache", "cache_add", { settings.cache_prefix .. key },
            { n, math.max(1, seconds) })
        return r ~= nil and r ~= false
    end,
    increment = function(key)
        return redis.call_once("cache", nil, "INCRBY", settings.cache_prefix .. key, 1)
    end,
    put = function(key, n, seconds)
        redis.call("cache", "SETEX", settings.cache_prefix .. key, math.max(1, seconds), n)
    end,
    forget = function(key)
        redis.call("cache", "DEL", settings.cache_prefix .. key)
    end,
}

local numbers_of = {}  -- store -> its numbers, made once

function M.numbers()
    local s = store()
    if not s then return redis_numbers end
    if numbers_of[s] then return numbers_of[s] end
    numbers_of[s] = {
        get = function(key)
            local v = s:get(key)
            return v and tonumber(tostring(v):match("^[id]:(%-?[%d.]+);$"))
        end,
        add = function(key, n, seconds) return s:add(key, serialized(n), seconds) end,
        increment = function(key) return s:increment(key) end,
        put = function(key, n, seconds) s:put(key, serialized(n), seconds) end,
        forget = function(key) s:forget(key) end,
    }
    return numbers_of[s]
end

-- Cache::lock(key, seconds, owner)->get() (Laravel's locks, as WithoutOverlapping
-- takes them): on Redis, SET NX (with EX seconds when seconds > 0) of the key with
-- the cache prefix on the lock connection, the queue's ('default'); on the database
-- store DatabaseLock's row; on the file store CacheLock's item. Returns whether
-- owner holds it now.
function M.acquire_lock(key, seconds, owner)
    local s = store()
    if s then return s:acquire_lock(key, seconds, owner) end
    key = settings.cache_prefix .. key
    local reply
    if seconds > 0 then
        reply = redis.call("queue", "SET", key, owner, "EX", seconds, "NX")
    else
        reply = redis.call("queue", "SET", key, owner, "NX")
    end
    return reply ~= nil and reply ~= false
end

-- Cache::lock(key, 0, owner)->release(): the lock goes while owner holds it.
function M.release_lock(key, owner)
    local s = store()
    if s then return s:release_lock(key, owner) end
    redis.script("queue", "release_lock", { settings.cache_prefix .. key }, { owner })
end

-- UniqueLock::release of the lock key (without the cache prefix) on the lock
-- connection, the queue's ('default'): with owner (13.24+), only while that owner
-- holds it (scripts/release_lock.lua); else at once.
function M.release_unique_lock(key, owner)
    local s = store()
    if s then return s:release_lock(key, owner) end
    key = settings.cache_prefix .. key
    if owner then
        redis.script("queue", "release_lock", { key }, { owner })
    else
        redis.call("queue", "DEL", key)
    end
end

return M
