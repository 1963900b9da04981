-- luaworker: the module handlers get with require "luaworker".
--   luaworker.before(fn), .after, .failing, .exception_occurred, .looping,
--   .stopping, .starting, .popping, .popped, .released_after_exception,
--   .attempted: register fn(event) for that worker event (see README).
--   luaworker.redis(cmd, ...): run a command on the worker's queue connection; an
--   error reply or a lost connection raises. Keys are sent as given: prepend
--   luaworker.prefix to address the app's keys.
--   luaworker.prefix, luaworker.json (cjson), luaworker.php, luaworker.null.
local events = require "luaworker.events"
local redis = require "luaworker.redis"
local host = require "luaworker.host"
local cjson = require "cjson"

local M = {
    json = cjson,
    php = require "luaworker.php",
    null = cjson.null,
    prefix = "",
    connection_name = "redis",
}

for name in pairs(events.NAMES) do
    M[name] = function(fn) events.listen(name, fn) end
end

function M.redis(...)
    if select("#", ...) == 0 or type((...)) ~= "string" then
        error("luaworker.redis(cmd, ...): expected a command name", 2)
    end
    return redis.call("queue", ...)
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
