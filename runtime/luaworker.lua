-- luaworker: the module handlers get with require "luaworker".
--   luaworker.before(fn), .after, .failing, .exception_occurred, .looping,
--   .stopping, .starting, .popping, .popped, .released_after_exception,
--   .attempted: register fn(event) for that worker event (docs/handlers.md).
--   luaworker.redis(cmd, ...): run a command on the worker's queue connection; an
--   error reply or a lost connection raises, a Redis that cannot run it yet
--   (LOADING, READONLY, not reachable) is waited for up to REDIS_WAIT seconds first.
--   Commands that change the connection for the worker's own commands (SUBSCRIBE,
--   MONITOR, MULTI, SELECT...: CONNECTION_STATE) or block it (BLPOP, XREAD BLOCK,
--   WAIT...) raise without being sent.
--   Keys are sent as given: prepend luaworker.prefix to address the app's keys.
--   luaworker.prefix, luaworker.connection_name, luaworker.json (cjson, whose
--   encode takes int64 values: base/json.lua), luaworker.php, luaworker.null,
--   luaworker.dump(value) (a command's value as text: base/dump.lua).
--   luaworker.http: HTTP requests that wait without holding up the worker.
--   luaworker.middleware: Laravel's job middleware (worker/job_middleware.lua).
--   luaworker.throttle, luaworker.funnel: Redis::throttle and Redis::funnel
--   (queue/limiters.lua).
--   luaworker.db(name): the app's database connection name, as Laravel's DB facade.
local events = require "luaworker.base.events"
local redis = require "luaworker.redis"
local host = require "luaworker.host"
local json = require "luaworker.base.json"
local dump = require "luaworker.base.dump"

local php = require "luaworker.php"
local values = require "luaworker.base.values"
local settings = require "luaworker.base.settings"
local db = require "luaworker.db"
local batch = require "luaworker.bus.batch"
local dispatch = require "luaworker.queue.dispatch"
local handlers = require "luaworker.worker.handlers"
local limiters = require "luaworker.queue.limiters"

-- Seconds a handler's luaworker.redis waits out a Redis that cannot run it yet
-- (loading its data, read-only in a failover, not reachable) before it raises.
local REDIS_WAIT = 10

local M = {
    json = json,
    dump = dump,
    php = php,
    http = require "luaworker.http",
    middleware = require("luaworker.worker.job_middleware").builders(),
    null = values.null,
    prefix = "",
    default_queue = "default",
}

for name in pairs(events.NAMES) do
    M[name] = function(fn) events.listen(name, fn) end
end

-- Commands that would change the queue connection for the worker's own commands
-- after them (another mode, database, transaction or reply setting), refused with
-- the reason. CLIENT is refused only for these subcommands.
local SUBSCRIBER = "puts the connection in subscriber mode, where the worker cannot use it"
local TRANSACTION = "opens or runs a transaction on the connection the worker shares: "
    .. "use EVAL (a script is atomic) instead"
local CONNECTION_STATE = {
    SUBSCRIBE = SUBSCRIBER, PSUBSCRIBE = SUBSCRIBER, SSUBSCRIBE = SUBSCRIBER,
    UNSUBSCRIBE = SUBSCRIBER, PUNSUBSCRIBE = SUBSCRIBER, SUNSUBSCRIBE = SUBSCRIBER,
    MONITOR = "puts the connection in monitor mode, where the worker cannot use it",
    MULTI = TRANSACTION, EXEC = TRANSACTION, DISCARD = TRANSACTION, WATCH = TRANSACTION,
    UNWATCH = TRANSACTION,
    SELECT = "would move the worker's own commands to another database: address the "
        .. "configured database only",
    AUTH = "changes the user of the connection the worker shares",
    HELLO = "changes the protocol or user of the connection the worker shares",
    RESET = "resets the connection the worker shares",
    QUIT = "closes the connection the worker shares",
    READONLY = "changes how the connection the worker shares reads in a cluster",
    READWRITE = "changes how the connection the worker shares reads in a cluster",
    SYNC = "turns the connection into a replica's", PSYNC = "turns the connection into a replica's",
    REPLCONF = "turns the connection into a replica's",
}
local CLIENT_STATE = { REPLY = true, TRACKING = true, CACHING = true }

-- Commands that block the connection until something happens: the worker's own
-- commands and every other job in flight would wait behind them.
local BLOCKS = "blocks the connection the worker and the other jobs in flight share: poll "
    .. "without blocking (LPOP, XREAD without BLOCK...) and wait with luaworker.sleep"
for _, name in ipairs({ "BLPOP", "BRPOP", "BRPOPLPUSH", "BLMOVE", "BLMPOP", "BZPOPMIN",
        "BZPOPMAX", "BZMPOP", "WAIT", "WAITAOF" }) do
    CONNECTION_STATE[name] = BLOCKS
end
-- XREAD and XREADGROUP block only with a BLOCK argument.
local BLOCK_OPTION = { XREAD = true, XREADGROUP = true }

local function has_block_option(...)
    for i = 2, select("#", ...) do
        local a = select(i, ...)
        if type(a) == "string" and a:upper() == "BLOCK" then return true end
    end
    return false
end

function M.redis(...)
    local cmd = ...
    if select("#", ...) == 0 or type(cmd) ~= "string" then
        error("luaworker.redis(cmd, ...): expected a command name", 2)
    end
    local name = cmd:upper()
    local why = CONNECTION_STATE[name]
    if not why and name == "CLIENT" then
        local sub = select(2, ...)
        if type(sub) == "string" and CLIENT_STATE[sub:upper()] then
            name = "CLIENT " .. sub:upper()
            why = "changes how Redis answers on the connection the worker shares"
        end
    end
    if not why and BLOCK_OPTION[name] and has_block_option(...) then
        name, why = name .. " BLOCK", BLOCKS
    end
    if why then
        error("luaworker.redis: " .. name .. " is not allowed: it " .. why, 2)
    end
    for i = 2, select("#", ...) do
        local t = type((select(i, ...)))
        if t ~= "string" and t ~= "number" then
            error(string.format("luaworker.redis(%s, ...): argument %d is %s: expected a string "
                .. "or a number", name, i, t), 2)
        end
    end
    return redis.call_once("queue", REDIS_WAIT, ...)
end

-- Pushes a job of class with properties (a table, or a value made with
-- luaworker.php) that a PHP worker runs as if Laravel had dispatched it.
-- options: queue, delay (seconds), connection (only the worker's own), encrypt
-- (ShouldBeEncrypted, with APP_KEY), batch (the id of a batch in the app's
-- job_batches to add the job to, as Batch::add). Returns the job's id.
function M.dispatch(class, properties, options)
    if type(class) ~= "string" or class == "" then
        error("luaworker.dispatch(class, properties, options): expected a class name", 2)
    end
    if properties ~= nil and type(properties) ~= "table" then
        error("luaworker.dispatch(class, properties, options): properties must be a table", 2)
    end
    options = options or {}
    if options.connection and options.connection ~= M.connection_name then
        error("luaworker.dispatch: luaworker can only dispatch on its own connection '"
            .. M.connection_name .. "', not '" .. tostring(options.connection) .. "'", 2)
    end
    local delay = options.delay
    if delay ~= nil and (type(delay) ~= "number" or delay < 0) then
        error("luaworker.dispatch: options.delay must be a number of seconds >= 0", 2)
    end
    if properties ~= nil and php.class(properties) and php.class(properties) ~= class then
        error("luaworker.dispatch: properties are an object of class " .. php.class(properties), 2)
    end
    local command = dispatch.command(class, properties or {}, handlers.declared(class),
        handlers.horizon(class))
    if options.queue then command.queue = options.queue end
    if options.connection then command.connection = options.connection end
    if delay and delay > 0 then command.delay = delay end
    local q = values.value(command.queue) or M.default_queue
    if options.batch ~= nil then
        if type(options.batch) ~= "string" or options.batch == "" then
            error("luaworker.dispatch: options.batch must be a batch id (a string)", 2)
        end
        command.batchId = options.batch
        return batch.add_job(options.batch, function()
            return dispatch.push_command(command, q, delay, options.encrypt)
        end)
    end
    return dispatch.push_command(command, q, delay, options.encrypt)
end

-- The db of the app's database connection name (default DB_CONNECTION): see
-- runtime/db/db.lua.
function M.db(name)
    return db.connection(name)
end

-- Waits without blocking the worker's event loop: the other jobs in flight run
-- meanwhile. A stop or reload signal ends the wait early, as a signal ends PHP's
-- sleep() in queue:work, so that a stopping worker's jobs finish soon.
-- A whole number opts[name] from least, or default; raises naming it for fn.
local function option(fn, opts, name, default, least)
    local v = opts[name]
    if v == nil then v = default end
    local checked = values.whole("luaworker." .. fn, name, v, least, 4)  -- (no tail call: level 4 is the user's)
    return checked
end

-- Runs what a limit let through: fn's results; or, held back, opts.fallback() and false.
local function limited(opts, ran, ...)
    if ran then return ... end
    if opts.fallback then opts.fallback() end
    return false
end

local function check_limit(fn_name, name, opts, fn)
    if type(name) ~= "string" or type(opts) ~= "table" or type(fn) ~= "function" then
        error("luaworker." .. fn_name .. "(name, opts, fn): expected a string, a table and a function", 3)
    end
    if opts.fallback ~= nil and type(opts.fallback) ~= "function" then
        error("luaworker." .. fn_name .. ": fallback: expected a function", 3)
    end
end

-- Redis::throttle(name)->allow(opts.allow)->every(opts.every, 60)->block(opts.block,
-- 3)->then(fn, opts.fallback), with Laravel's keys (queue/limiters.lua).
function M.throttle(name, opts, fn)
    check_limit("throttle", name, opts, fn)
    return limited(opts, limiters.throttle(name, option("throttle", opts, "allow", nil, 1),
        option("throttle", opts, "every", 60, 1), option("throttle", opts, "block", 3, 0), fn))
end

-- Redis::funnel(name)->limit(opts.limit)->releaseAfter(opts.release_after, 60)
-- ->block(opts.block, 3)->then(fn, opts.fallback).
function M.funnel(name, opts, fn)
    check_limit("funnel", name, opts, fn)
    return limited(opts, limiters.funnel(name, option("funnel", opts, "limit", nil, 1),
        option("funnel", opts, "release_after", 60, 1), option("funnel", opts, "block", 3, 0), fn))
end

function M.sleep(seconds)
    if type(seconds) ~= "number" or not (seconds >= 0) then
        error("luaworker.sleep(seconds): expected a number >= 0", 2)
    end
    host.sleep(seconds, true)
end

-- An error value with a class, shown as "Class: message" (like a PHP exception).
M.exception = values.exception
M.is_exception = values.is_exception

-- luaworker.connection_name: the name of the connection the worker works (its
-- `work` argument, else QUEUE_CONNECTION), read when asked.
setmetatable(M, { __index = function(_, key)
    if key == "connection_name" then return settings.connection_name or "redis" end
end })

return M
