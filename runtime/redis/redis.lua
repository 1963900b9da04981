-- luaworker.redis: Redis commands and scripts on the process's connections ("queue":
-- the queue connection, "cache": the cache store's, "block": the idle wait's), with
-- errors raised as RedisError values, and, in a worker, transient failures waited
-- out.
--
-- A RedisError has message and kind: "reply" (Redis answered with an error),
-- "connection" (the connection ended after the command may have reached Redis:
-- whether it ran is unknown), "unreachable" (Redis never got it) or "memory" (Redis
-- ran it, and its reply does not fit under --memory-limit).
--
-- Transient failures: Redis could not be reached, the connection was lost, or Redis
-- refused the command for a state that passes (LOADING its data after a restart,
-- READONLY, MASTERDOWN or NOREPLICAS during a failover, BUSY running a long script,
-- TRYAGAIN, CLUSTERDOWN). Once a worker calls wait_out_failures, those are waited out: the
-- command is sent again after 0.1 s, then doubling up to every second, until it
-- succeeds, with one line when the outage starts and one when Redis is back:
--   call, script    commands safe to run twice: sent again after any transient
--                   failure, without limit (a script may be given one); meanwhile
--                   the timeouts of the jobs in flight stand still (held_time)
--   call_once       a command not safe to run twice: sent again only when Redis
--                   did not run it, for at most `limit` seconds (nil: no limit);
--                   a lost connection raises
-- Elsewhere (the other commands) every failure raises at once.
local host = require "luaworker.host"
local backoff = require "luaworker.base.backoff"

local M = {}

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

-- Error replies for a state of Redis that passes: the command did not run.
local PASSING = { LOADING = true, READONLY = true, MASTERDOWN = true, NOREPLICAS = true,
    BUSY = true, TRYAGAIN = true, CLUSTERDOWN = true }

local FIRST_DELAY, MAX_DELAY = 0.1, 1

-- Whether a failure is waited out: always when Redis did not run the command, and,
-- with repeat_lost, when the connection was lost under it.
local function waits_out(value, kind, repeat_lost)
    if kind == "unreachable" then return true end
    if kind == "connection" then return repeat_lost end
    return kind == "reply" and PASSING[value:match("^%u+") or ""] or false
end

local on_outage, on_back, interrupted  -- set by wait_out_failures
local in_outage = false

-- Makes this process wait out transient failures (see above). outage(message) is
-- called when an outage starts, back() when Redis answers again; a wait gives up
-- (the failure is raised) when interrupted() returns true.
function M.wait_out_failures(outage, back, stop)
    on_outage, on_back, interrupted = outage, back, stop
end

-- Whether a failure lasts until someone changes something (an ACL, a password, a
-- database number, a certificate): Redis refused the command, or the connection's
-- set-up (AUTH, SELECT, SCRIPT LOAD: "Redis at <where> refused <what>: <error>"), for
-- a reason that is not a passing state, or this end refused Redis' certificate.
function M.is_refusal(message, kind)
    local code
    -- a TLS certificate refused, either way (redis_tls.h), lasts too; TLS 1.3 tells
    -- a client certificate's refusal after the handshake, as a lost connection
    if (kind == "unreachable" or kind == "connection")
        and message:match("TLS %a+ with Redis at %S+ failed: certificate refused:") then
        return true
    end
    if kind == "reply" then
        code = message:match("^%u+")
    elseif kind == "unreachable" then
        code = message:match("^Redis at %S+ refused [^:]+: (%u+)")
    end
    return code ~= nil and not PASSING[code]
end

-- Commands waiting out an outage without limit, since when, and the seconds such
-- waits took before.
local holding, held_since, held_before = 0, nil, 0

-- Seconds so far during which a command waited out an outage without limit: the
-- timeouts of jobs in flight do not count them.
function M.held_time()
    if held_since then return held_before + host.clock() - held_since end
    return held_before
end

local function hold(on)
    if on then
        holding = holding + 1
        if holding == 1 then held_since = host.clock() end
    else
        holding = holding - 1
        if holding == 0 then
            held_before = held_before + host.clock() - held_since
            held_since = nil
        end
    end
end

-- Whether an outage is under way: a transient failure was the last word of Redis.
function M.in_outage()
    return in_outage
end

-- Notes a transient failure seen elsewhere (a wait for a job, a pop whose
-- connection was lost) as an outage: reported once, and its end when the next
-- command succeeds. Returns whether err was such a failure.
function M.note_outage(err)
    if not (on_outage and M.is_error(err) and waits_out(err.message, err.kind, true)) then
        return false
    end
    if not in_outage then
        in_outage = true
        on_outage(err.message)
    end
    return true
end

-- Runs fn(...) (a host function returning ok, value, kind) until it succeeds or
-- fails for good. Returns what fn returned last.
local function attempt(repeat_lost, limit, fn, ...)
    local ok, value, kind = fn(...)
    if ok then
        if in_outage then
            in_outage = false
            on_back()
        end
        return ok, value
    end
    if not on_outage or not waits_out(value, kind, repeat_lost) then return ok, value, kind end
    if not in_outage then
        in_outage = true
        on_outage(value)
    end
    local started, delays = host.clock(), backoff.new(FIRST_DELAY, MAX_DELAY)
    local held = limit == nil
    if held then hold(true) end
    repeat
        local delay = delays:next()
        if limit and host.clock() - started + delay > limit then break end
        if interrupted and interrupted() then break end
        host.sleep(delay, true)
        ok, value, kind = fn(...)
    until ok or not waits_out(value, kind, repeat_lost)
    if held then hold(false) end
    if ok and in_outage then
        in_outage = false
        on_back()
    end
    return ok, value, kind
end

local function script_args(name, keys, args)
    local argv, n = {}, 0
    for i = 1, #keys do n = n + 1; argv[n] = keys[i] end
    for i = 1, #args do n = n + 1; argv[n] = args[i] end
    return name, #keys, unpack(argv, 1, n)
end

-- call(conn, "CMD", args...) -> the reply; raises a RedisError. For commands safe to
-- run twice.
function M.call(conn, ...)
    local ok, value, kind = attempt(true, nil, host.command, conn, ...)
    if not ok then raise(value, kind) end
    return value
end

-- call_at(conn, key, "CMD", args...) -> as call, for a command that names no key
-- sent where key lives (on a cluster, its slot's master: WAIT after a write to key).
function M.call_at(conn, key, ...)
    local ok, value, kind = attempt(true, nil, host.command_at, conn, key, ...)
    if not ok then raise(value, kind) end
    return value
end

-- call_once(conn, limit, "CMD", args...) -> the reply; raises a RedisError. For
-- commands not safe to run twice; transient failures are waited out for at most
-- limit seconds (nil: without limit).
function M.call_once(conn, limit, ...)
    local ok, value, kind = attempt(false, limit, host.command, conn, ...)
    if not ok then raise(value, kind) end
    return value
end

-- script(conn, name, keys, args[, limit]) -> the reply; raises a RedisError. The
-- script is scripts/<name>.lua, called with EVALSHA; for scripts safe to run twice.
-- limit: the most seconds to wait out transient failures (default: no limit).
function M.script(conn, name, keys, args, limit)
    local ok, value, kind = attempt(true, limit, host.script, conn, script_args(name, keys, args))
    if not ok then raise(value, kind) end
    return value
end

-- script_once(conn, name, keys, args): as script, for a script not safe to run
-- twice (waited out without limit only while Redis did not run it).
function M.script_once(conn, name, keys, args)
    local ok, value, kind = attempt(false, nil, host.script, conn, script_args(name, keys, args))
    if not ok then raise(value, kind) end
    return value
end

-- defer(conn, name, keys, args) -> id: sends the script call without waiting (see
-- host.defer); collect(id) then returns its reply or raises. Not waited out: the
-- caller decides what a failure means.
function M.defer(conn, name, keys, args)
    local id, message = host.defer(conn, script_args(name, keys, args))
    if not id then raise(message, "unreachable") end
    return id
end

function M.collect(id)
    local r = host.collect(id)
    if not r.ok then raise(r.message, r.kind) end
    return r.reply
end

-- send(conn, "CMD", args...): queues a command safe to run twice without waiting for
-- its reply; it reaches Redis even across a lost connection (see host.send).
function M.send(conn, ...)
    local ok, message = host.send(conn, ...)
    if not ok then raise(message, "unreachable") end
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

-- subscribe_invalidations(key) -> the client id to name in CLIENT TRACKING ...
-- REDIRECT, on the server that holds key; raises a RedisError (see
-- host.subscribe_invalidations).
function M.subscribe_invalidations(key)
    local ok, value, kind = host.subscribe_invalidations(key)
    if not ok then raise(value, kind) end
    return value
end

return M
