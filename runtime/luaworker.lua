-- luaworker: the module handlers get with require "luaworker".
--   luaworker.before(fn), .after, .failing, .exception_occurred, .looping,
--   .stopping, .starting, .popping, .popped, .released_after_exception,
--   .attempted: register fn(event) for that worker event (see README).
--   luaworker.redis(cmd, ...): run a command on the worker's queue connection; an
--   error reply or a lost connection raises, a Redis that cannot run it yet
--   (LOADING, READONLY, not reachable) is waited for up to REDIS_WAIT seconds first.
--   Keys are sent as given: prepend luaworker.prefix to address the app's keys.
--   luaworker.prefix, luaworker.json (cjson), luaworker.php, luaworker.null.
local events = require "luaworker.events"
local redis = require "luaworker.redis"
local host = require "luaworker.host"
local cjson = require "cjson"

local php = require "luaworker.php"
local payload_values = require "luaworker.payload"

-- Seconds a handler's luaworker.redis waits out a Redis that cannot run it yet
-- (loading its data, read-only in a failover, not reachable) before it raises.
local REDIS_WAIT = 10

local M = {
    json = cjson,
    php = php,
    null = cjson.null,
    prefix = "",
    connection_name = "redis",
    default_queue = "default",
}

for name in pairs(events.NAMES) do
    M[name] = function(fn) events.listen(name, fn) end
end

function M.redis(...)
    if select("#", ...) == 0 or type((...)) ~= "string" then
        error("luaworker.redis(cmd, ...): expected a command name", 2)
    end
    return redis.call_once("queue", REDIS_WAIT, ...)
end

-- Pushes a job of class with properties (a table, or a value made with
-- luaworker.php) that a PHP worker runs as if Laravel had dispatched it.
-- options: queue, delay (seconds), connection (only the worker's own), encrypt
-- (ShouldBeEncrypted, with APP_KEY). Returns the job's id.
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
    local dispatch = require "luaworker.dispatch"
    local command = dispatch.command(class, properties or {})
    if options.queue then command.queue = options.queue end
    if options.connection then command.connection = options.connection end
    if delay and delay > 0 then command.delay = delay end
    local q = payload_values.value(command.queue) or M.default_queue
    return dispatch.push_command(command, q, delay, options.encrypt)
end

-- Waits without blocking the worker's event loop.
function M.sleep(seconds)
    if type(seconds) ~= "number" or seconds < 0 then
        error("luaworker.sleep(seconds): expected a number >= 0", 2)
    end
    host.sleep(seconds)
end

-- An error value with a class, shown as "Class: message" (like a PHP exception).
local Exception = {}
Exception.__index = Exception
Exception.__tostring = function(e) return e.class .. ": " .. e.message end

function M.exception(class, message)
    return setmetatable({ class = class, message = message }, Exception)
end

function M.is_exception(v)
    return getmetatable(v) == Exception
end

return M
