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
local host = require "luaworker.host"
local cache = require "luaworker.queue.cache"

local M = {}

-- The job's class, as get_class($job) names it in a middleware's key: the command's.
local function class_of(job)
    local data = job:payload().data
    return type(data) == "table" and data.commandName or job:name()
end

-- The seconds of opts[name] (a whole number, at least 0), or default; raises naming it.
local function seconds(opts, name, default)
    local v = opts[name]
    if v == nil then return default end
    if type(v) ~= "number" or v < 0 or v ~= math.floor(v) then
        error(string.format("without_overlapping: %s = %s: expected whole seconds from 0", name,
            tostring(v)), 3)
    end
    return v
end

function M.without_overlapping(key, opts)
    opts = opts or {}
    key = key == nil and "" or tostring(key)
    local release_after = seconds(opts, "release_after", 0)
    local expire_after = seconds(opts, "expire_after", 0)
    local prefix = opts.prefix or "laravel-queue-overlap:"
    return function(job, next)
        local name = opts.shared and prefix .. key or prefix .. class_of(job) .. ":" .. key
        local owner = host.random_id(16)
        if cache.acquire_lock(name, expire_after, owner) then
            local ok, err = pcall(next, job)
            cache.release_lock(name, owner)
            if not ok then error(err, 0) end
        elseif not opts.dont_release then
            job:release(release_after)
        end
    end
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

-- Runs handler.handle(job, command) through the handler's middleware, the first
-- outermost. Raises what they raise.
function M.run(handler, job, command)
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
