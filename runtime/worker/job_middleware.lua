-- luaworker.worker.job_middleware: a handler's job middleware, as a PHP job's
-- middleware() (CallQueuedHandler::dispatchThroughMiddleware): the handler's table
-- may have `middleware`, a list or a function(job, command) returning one; each is
-- a function(job, next), or a table with handle(job, next), that runs the rest by
-- calling next(job), or does not (the job then ends as its middleware left it:
-- released, or deleted as a job whose handle returned). Laravel's own are built
-- here with Laravel's keys, in the app's stores, so that a limit a PHP job and a Lua
-- handler both declare is one limit (luaworker.middleware):
--   without_overlapping(key, opts)   WithoutOverlapping: the cache lock
--     laravel-queue-overlap:<class>:<key> (opts.shared: laravel-queue-overlap:<key>,
--     Laravel 10.36's shared()), taken for opts.expire_after seconds (0: until
--     released), released when the job's code ends; while another holds it the job
--     is released for opts.release_after seconds (0), or, with opts.dont_release,
--     deleted. opts.prefix replaces laravel-queue-overlap: (withPrefix).
--   rate_limited(name, limits, opts)  RateLimited with the named limiter's limits
--     (below): the app's cache store's RateLimiter
--   rate_limited_with_redis(name, limits, opts)  RateLimitedWithRedis: Laravel's
--     DurationLimiter on the app's default Redis connection
--   throttles_exceptions(max, decay, opts)  ThrottlesExceptions: after max exceptions
--     within decay seconds the job is held back (the cache store's RateLimiter)
--   throttles_exceptions_with_redis(max, decay, opts)  ThrottlesExceptionsWithRedis
-- A job any of them holds back is released as Laravel releases it, its attempt
-- counted; with opts.keep_attempts or LUAWORKER_LIMITS_KEEP_ATTEMPTS=true, given
-- back (hold_back).
local host = require "luaworker.host"
local php = require "luaworker.php"
local settings = require "luaworker.base.settings"
local cache = require "luaworker.queue.cache"
local limiters = require "luaworker.queue.limiters"
local rate_limiter = require "luaworker.queue.rate_limiter"
local values = require "luaworker.base.values"
local output = require "luaworker.worker.output"

local M = {}

-- Releases job, held back by a limit, for delay seconds: as Laravel does, its
-- attempt counted; with opts.keep_attempts (or, when the middleware does not say,
-- LUAWORKER_LIMITS_KEEP_ATTEMPTS=true) that attempt given back, since the job
-- waited and did not run, so that tries counts runs.
local function hold_back(job, delay, opts)
    local keep = opts.keep_attempts
    if keep == nil then keep = settings.env("LUAWORKER_LIMITS_KEEP_ATTEMPTS") == "true" end
    job:release(delay, { keep_attempts = keep })
end

-- Laravel's middleware name, as fn(job, next): a fake job (worker/fake_job.lua,
-- `luaworker run`, luaworker.testing), which touches no store, passes it, noted.
local function builtin(name, fn)
    return function(job, next)
        local fake = job.form.middleware
        if fake then
            fake.pass(name)
            return next(job)
        end
        return fn(job, next)
    end
end

-- The job's class, as get_class($job) names it in a middleware's key: the command's.
local function class_of(job)
    local data = job:payload().data
    return type(data) == "table" and data.commandName or job:name()
end

-- Whether the job's class has a displayName() of its own (12.41+ name it by that):
-- the payload's display name is not the class.
local function own_display_name(class, display_name)
    return type(display_name) == "string" and display_name ~= class
end

-- The job's name in a lock's key (UniqueLock's, WithoutOverlapping's): its class;
-- 12.41+ its own displayName() when it has one; 12.54+ that name's xxh128.
function M.lock_name(class, display_name)
    if settings.laravel_at_least(12, 41) and own_display_name(class, display_name) then
        if settings.laravel_at_least(12, 54) then return php.xxh128(display_name) end
        return display_name
    end
    return class
end

-- The whole number opts[name] (at least least), or default; raises naming what.
local function whole(what, opts, name, default, least)
    local v = opts[name]
    if v == nil then return default end
    local checked = values.whole(what, name, v, least, 5)  -- (no tail calls: level 5 is the user's)
    return checked
end

local function seconds(opts, name, default)
    local checked = whole("without_overlapping", opts, name, default, 0)
    return checked
end

function M.without_overlapping(key, opts)
    opts = opts or {}
    key = key == nil and "" or tostring(key)
    local release_after = seconds(opts, "release_after", 0)
    local expire_after = seconds(opts, "expire_after", 0)
    local prefix = opts.prefix or "laravel-queue-overlap:"
    return builtin("without_overlapping", function(job, next)
        local name = opts.shared and prefix .. key
            or prefix .. M.lock_name(class_of(job), job:display_name()) .. ":" .. key
        local owner = host.random_id(16)
        if cache.acquire_lock(name, expire_after, owner) then
            local ok, err = pcall(next, job)
            cache.release_lock(name, owner)
            if not ok then error(err, 0) end
        elseif not opts.dont_release then
            hold_back(job, release_after, opts)
        end
    end)
end

-- The limits a named limiter gives (what RateLimiter::for(name, ...)'s closure
-- returns): one {max =, decay = seconds (60), by = "" } or a list of them; nil is
-- Unlimited. Returns the list, each with key md5(name .. by), as RateLimited names
-- it. Raises naming what is wrong.
local function limits_of(what, name, limits)
    if type(name) ~= "string" then error(what .. ": expected the limiter's name", 3) end
    if limits == nil then return {} end
    if type(limits) ~= "table" then
        error(what .. ": expected a limit {max =, decay =, by =} or a list of them", 3)
    end
    if limits.max ~= nil then limits = { limits } end
    local list = {}
    for i, l in ipairs(limits) do
        local where = string.format("%s: limit %d", what, i)
        local by = l.by == nil and "" or tostring(l.by)
        list[i] = { max = whole(where, l, "max", nil, 0), decay = whole(where, l, "decay", 60, 1),
            key = php.md5(name .. by) }
        if list[i].max == nil then error(where .. ": max: expected a whole number from 0", 3) end
    end
    return list
end

-- RateLimited(name): for each limit, held back while its hits in the app's cache
-- store reached max within decay (released for the seconds its timer has left plus
-- 3, or, with opts.dont_release, deleted), else one more hit; then the rest.
function M.rate_limited(name, limits, opts)
    limits, opts = limits_of("rate_limited", name, limits), opts or {}
    return builtin("rate_limited", function(job, next)
        for _, l in ipairs(limits) do
            if rate_limiter.too_many_attempts(l.key, l.max) then
                if not opts.dont_release then hold_back(job, rate_limiter.available_in(l.key) + 3, opts) end
                return
            end
            rate_limiter.hit(l.key, l.decay)
        end
        return next(job)
    end)
end

-- RateLimitedWithRedis(name): the same limits kept by Laravel's DurationLimiter on
-- the app's default Redis connection (the key md5(name .. by)); held back, the job
-- is released until its window ends plus 3 seconds.
function M.rate_limited_with_redis(name, limits, opts)
    limits, opts = limits_of("rate_limited_with_redis", name, limits), opts or {}
    return builtin("rate_limited_with_redis", function(job, next)
        for _, l in ipairs(limits) do
            local acquired, decays_at = limiters.duration_acquire(l.key, l.max, l.decay)
            if not acquired then
                if not opts.dont_release then hold_back(job, math.max(0, decays_at - host.now()) + 3, opts) end
                return
            end
        end
        return next(job)
    end)
end

-- ThrottlesExceptions(max, decay): the job's key (opts.by; opts.by_job: the job's
-- uuid; else md5 of its class, 12.0+ its xxh128, 12.41+ that of its own
-- displayName() when it has one), after opts.prefix, "laravel_throttles_exceptions:".
local function throttle_key(job, opts)
    local prefix = opts.prefix or "laravel_throttles_exceptions:"
    if opts.by ~= nil then return prefix .. tostring(opts.by) end
    if opts.by_job then return prefix .. tostring(job:uuid()) end
    local class = class_of(job)
    if not settings.laravel_at_least(12, 0) then return prefix .. php.md5(class) end
    if settings.laravel_at_least(12, 41) and own_display_name(class, job:display_name()) then
        class = job:display_name()
    end
    return prefix .. php.xxh128(class)
end

-- A test of an error: opts[name], a function(err) returning whether it matches, the
-- class of the luaworker.exception it matches (PHP's instanceof of that class
-- itself: a Lua error knows no parent classes), or a list of those, any of which
-- matches (as repeated calls of deleteWhen() add theirs); nil when not given.
-- Raises naming what.
local function error_test(what, opts, name)
    local v = opts[name]
    if v == nil or type(v) == "function" then return v end
    local tests = {}
    for i, t in ipairs(type(v) == "table" and v or { v }) do
        if type(t) == "function" then
            tests[i] = t
        elseif type(t) == "string" then
            tests[i] = function(err) return values.is_exception(err) and err.class == t end
        else
            tests = {}
            break
        end
    end
    if #tests == 0 then
        error(string.format("%s: %s: expected a function(err), an exception class, or a list of them",
            what, name), 4)
    end
    return function(err)
        for _, t in ipairs(tests) do
            if t(err) then return true end
        end
        return false
    end
end

-- The options of throttles_exceptions(_with_redis), checked, in Laravel 12's units:
-- max (10), decay (600 seconds), backoff (0 minutes, as Laravel's backoff() in every
-- version), when (a function or nil), report, delete_when and fail_when (Laravel
-- 11.3's report(), 12.14's deleteWhen(), 12.20's failWhen(): a function or a class).
local function throttle_options(what, max, decay, opts)
    opts = opts or {}
    local checked = { max = whole(what, { max = max }, "max", 10, 1),
        decay = whole(what, { decay = decay }, "decay", 600, 1),
        backoff = whole(what, opts, "backoff", 0, 0) }
    if opts.when ~= nil and type(opts.when) ~= "function" then
        error(what .. ": when: expected a function(err) returning whether to throttle it", 3)
    end
    checked.report = opts.report == true and function() return true end or error_test(what, opts, "report")
    checked.delete_when = error_test(what, opts, "delete_when")
    checked.fail_when = error_test(what, opts, "fail_when")
    return checked, opts
end

-- Where throttles_exceptions counts: held_for(key, o) -> the seconds a job of key is
-- held back for, or nil; clear(key); hit(key, o).
local EXCEPTION_COUNTS = {
    -- ThrottlesExceptions: the cache store's RateLimiter; held until the timer ends, plus 3
    cache = {
        held_for = function(key, o)
            if rate_limiter.too_many_attempts(key, o.max) then return rate_limiter.available_in(key) + 3 end
        end,
        clear = rate_limiter.clear,
        hit = function(key, o) rate_limiter.hit(key, o.decay) end,
    },
    -- ThrottlesExceptionsWithRedis: Laravel's DurationLimiter; held until the window ends
    redis = {
        held_for = function(key, o)
            local too_many, decays_at = limiters.duration_too_many(key, o.max, o.decay)
            if too_many then return math.max(0, decays_at - host.now()) end
        end,
        clear = limiters.duration_clear,
        hit = function(key, o) limiters.duration_acquire(key, o.max, o.decay) end,
    },
}

-- ThrottlesExceptions(max, decay) counting in counts: while the job's key has max
-- exceptions within decay seconds the job is held back; a run that raises counts
-- one and releases the job for opts.backoff minutes (its attempt counted: it ran),
-- unless opts.when does not let that error through (it is raised again); one that
-- opts.report picks is logged first (Laravel's report()); one that delete_when picks
-- deletes the job, one that fail_when picks fails it, neither counted; a run that
-- returns clears the count.
local function throttles(what, counts, max, decay, opts)
    local o
    o, opts = throttle_options(what, max, decay, opts)
    return builtin(what, function(job, next)
        local key = throttle_key(job, opts)
        local held_for = counts.held_for(key, o)
        if held_for then return hold_back(job, held_for, opts) end
        local ran, err = pcall(next, job)
        if ran then return counts.clear(key) end
        if opts.when and not opts.when(err) then error(err, 0) end
        if o.report and o.report(err) then
            output.error("reported by throttles_exceptions: " .. output.text(tostring(err)), job)
        end
        if o.delete_when and o.delete_when(err) then return job:delete() end
        if o.fail_when and o.fail_when(err) then return job:fail(err) end
        counts.hit(key, o)
        job:release(o.backoff * 60)
    end)
end

function M.throttles_exceptions(max, decay, opts)
    return throttles("throttles_exceptions", EXCEPTION_COUNTS.cache, max, decay, opts)
end

function M.throttles_exceptions_with_redis(max, decay, opts)
    return throttles("throttles_exceptions_with_redis", EXCEPTION_COUNTS.redis, max, decay, opts)
end

-- The middleware of handler for job: its `middleware` list, or what its function
-- returns. Raises naming what is wrong.
local function middleware_of(handler, job, command)
    local list = handler.middleware
    if type(list) == "function" then list = list(job, command) end
    if list == nil then return {} end
    if type(list) ~= "table" then
        error("the handler's middleware: expected a list, or a function returning one, got "
            .. type(list), 0)
    end
    for i, m in ipairs(list) do
        if type(m) ~= "function" and not (type(m) == "table" and type(m.handle) == "function") then
            error(string.format("the handler's middleware %d: expected a function(job, next) or a "
                .. "table with handle(job, next), got %s", i, type(m)), 0)
        end
    end
    return list
end

-- The middleware handlers build (luaworker.middleware).
function M.builders()
    return { without_overlapping = M.without_overlapping, rate_limited = M.rate_limited,
        rate_limited_with_redis = M.rate_limited_with_redis,
        throttles_exceptions = M.throttles_exceptions,
        throttles_exceptions_with_redis = M.throttles_exceptions_with_redis }
end

-- Runs handler.handle(job, command) through the handler's middleware, the first
-- outermost. Raises what they raise.
function M.run(handler, job, command)
    if handler.middleware == nil then return handler.handle(job, command) end
    local list = middleware_of(handler, job, command)
    local function step(i)
        return function(j)
            local m = list[i]
            if not m then return handler.handle(j, command) end
            if type(m) == "table" then return m.handle(j, step(i + 1)) end
            return m(j, step(i + 1))
        end
    end
    return step(1)(job)
end

return M
