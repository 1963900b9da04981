-- luaworker.redis: Redis commands and scripts on the worker's connections ("queue":
-- the queue connection, "cache": the cache store's); errors are raised.
local host = require "luaworker.host"

local M = {}

-- A Redis error reply or a lost connection, raised by call() and script(). kind is
-- "reply" (Redis answered with an error) or "connection" (no answer will come).
local RedisError = {}
RedisError.__index = RedisError
RedisError.__tostring = function(e) return e.message end

local function raise(message, kind)
    error(setmetatable({ message = message, kind = kind }, RedisError), 0)
end

M.raise = raise

function M.is_error(v)
    return getmetatable(v) == RedisError
end

-- call(conn, "CMD", args...) -> the reply; raises a RedisError.
function M.call(conn, ...)
    local ok, value, kind = host.command(conn, ...)
    if not ok then raise(value, kind) end
    return value
end

-- send(conn, "CMD", args...): queues a command without waiting for its reply (see
-- host.send); raises a RedisError when it cannot even be queued.
function M.send(conn, ...)
    local ok, message = host.send(conn, ...)
    if not ok then raise(message, "connection") end
end

-- script(conn, name, keys, args) -> the reply; raises a RedisError. The script is
-- scripts/<name>.lua, called with EVALSHA.
function M.script(conn, name, keys, args)
    local argv, n = {}, 0
    for i = 1, #keys do n = n + 1; argv[n] = keys[i] end
    for i = 1, #args do n = n + 1; argv[n] = args[i] end
    local ok, value, kind = host.script(conn, name, #keys, unpack(argv, 1, n))
    if not ok then raise(value, kind) end
    return value
end

-- wait_notify(seconds, exact, keys) -> {key, token}, or nil when seconds passed or
-- a signal ended the wait (seconds < 0: no limit); raises a RedisError. A BLPOP on
-- the keys, on a connection of its own; exact: to the millisecond rather than to
-- Redis' hz (see host.wait_notify).
function M.wait_notify(seconds, exact, keys)
    local ok, value, kind = host.wait_notify(seconds, exact, unpack(keys))
    if not ok then raise(value, kind) end
    return value
end

-- subscribe_invalidations() -> the client id to name in CLIENT TRACKING ...
-- REDIRECT; raises a RedisError (see host.subscribe_invalidations).
function M.subscribe_invalidations()
    local ok, value, kind = host.subscribe_invalidations()
    if not ok then raise(value, kind) end
    return value
end

return M
