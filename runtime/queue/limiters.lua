-- luaworker.queue.limiters: Laravel's Redis limiters on the app's default Redis
-- connection (the queue's), their keys named as the app names them, with the
-- connection's prefix (queue.prefixed):
--   DurationLimiter (Redis::throttle, RateLimitedWithRedis): scripts/duration_limiter.lua
--   ConcurrencyLimiter (Redis::funnel): scripts/concurrency_limiter.lua, its slots
--     <name>1..<name><limit>, released by scripts/release_lock.lua
-- and their builders' then(): a limiter that holds back waits `block` seconds for
-- room (Laravel's 3 by default), trying again every 750 ms (throttle) or 250 ms
-- (funnel), as Laravel's block() does; each wait yields (host.sleep), as every
-- wait of a job in flight does. Errors are Redis's, raised.
local host = require "luaworker.host"
local redis = require "luaworker.redis"
local queue = require "luaworker.queue"

local M = {}

local function pack(...)
    return { n = select("#", ...), ... }
end

-- Now as DurationLimiter's script takes it, microtime(true) and time(), from one
-- reading of the clock: the fraction cut, not rounded, to 4 digits, so that the
-- script (which compares them with its window's whole seconds as strings) never
-- finds a now past the second it is in, which would begin a new window.
local function now_args()
    local t = host.microtime()
    local second = math.floor(t)
    return string.format("%d.%04d", second, math.floor((t - second) * 10000)), second
end

-- DurationLimiter::acquire of name: whether one more is allowed now, the Unix second
-- its window ends, and how many more it allows.
function M.duration_acquire(name, allowed, decay)
    local now, second = now_args()
    local r = redis.script_once("queue", "duration_limiter", { queue.prefixed(name) },
        { now, second, decay, allowed })
    return r[1] == 1 or r[1] == true, tonumber(r[2]), math.max(0, tonumber(r[3]) or 0)
end

-- DurationLimiter::tooManyAttempts of name, counting nothing: whether its window
-- allows no more now, and when it ends (0 when there is none).
function M.duration_too_many(name, allowed, decay)
    local now, second = now_args()
    local r = redis.script("queue", "duration_limiter", { queue.prefixed(name) },
        { now, second, decay, allowed, "peek" })
    return tonumber(r[2]) <= 0, tonumber(r[1])
end

-- DurationLimiter::clear: name's window goes.
function M.duration_clear(name)
    redis.call("queue", "DEL", queue.prefixed(name))
end

-- ConcurrencyLimiter::acquire of name for holder id: the slot taken, or nil.
local function concurrency_acquire(name, limit, release_after, id)
    local keys = {}
    for i = 1, limit do keys[i] = queue.prefixed(name .. i) end
    local slot = redis.script_once("queue", "concurrency_limiter", keys, { name, release_after, id })
    if type(slot) ~= "string" then return nil end
    return slot
end

-- Waits until acquire() returns true (or a slot) or block seconds passed since the
-- first try (Laravel's test: whole seconds), trying every `every` seconds. Returns
-- what acquire returned last.
local function blocking(block, every, acquire)
    local starting = host.now()
    while true do
        local got = acquire()
        if got then return got end
        if host.now() - block >= starting then return got end
        host.sleep(every, true)
    end
end

-- Redis::throttle(name)->allow(allowed)->every(every)->block(block)->then(fn):
-- fn() under the limit and what it returns; false when it holds fn back past block.
function M.throttle(name, allowed, every, block, fn)
    if not blocking(block, 0.75, function() return (M.duration_acquire(name, allowed, every)) end) then
        return false
    end
    return true, fn()
end

-- Redis::funnel(name)->limit(limit)->releaseAfter(release_after)->block(block)
-- ->then(fn): fn() in a free slot, released when it returns or raises; false when
-- no slot came free within block.
function M.funnel(name, limit, release_after, block, fn)
    local id = host.random_id(20)
    local slot = blocking(block, 0.25, function() return concurrency_acquire(name, limit, release_after, id) end)
    if not slot then return false end
    local results = pack(pcall(fn))
    redis.script("queue", "release_lock", { queue.prefixed(slot) }, { id })
    if not results[1] then error(results[2], 0) end
    return true, unpack(results, 2, results.n)
end

return M
