-- luaworker.worker.handler_env: the globals handlers see (their files, init.lua and the Lua
-- modules any of them requires), so that what a handler changes cannot break the
-- worker that runs it:
--   - the standard library tables (string, table, math, os, io, coroutine, debug,
--     bit, jit) are copies of their own: `string.format = nil` changes the
--     handlers' copy, never the runtime's (require "string" gives the copy too);
--   - assigning any global raises, an existing one (`tostring = nil`) as a new one:
--     handlers keep their state in locals and modules; _G is this environment;
--   - a __gc finalizer set through newproxy, ffi.gc or ffi.metatype runs protected:
--     its error is logged, never raised in the code the collector interrupted
--     (the worker's own, or another job's);
--   - print writes each line at once, on stderr with --json (output.print);
--   - os.time() is host.now(), the second PHP's time() reads (Lua's reads a coarse
--     copy of the clock, a tick behind at each second's start); os.time(t) is Lua's.
-- It guards against mistakes; it is not a sandbox. Handlers are trusted code:
-- rawset, setfenv, getmetatable(""), debug and the FFI reach everything.
local host = require "luaworker.host"
local output = require "luaworker.worker.output"

local M = {}

local LIBRARIES = { "string", "table", "math", "os", "io", "coroutine", "debug", "bit", "jit" }

local real_newproxy, pcall, tostring = newproxy, pcall, tostring

-- fn wrapped to run protected: an error is logged.
local function protected_finalizer(fn)
    return function(o)
        local ok, err = pcall(fn, o)
        if not ok then
            output.error("a __gc finalizer raised (logged, not raised where the collector ran): "
                .. tostring(err))
        end
    end
end

-- newproxy(true) whose metatable, as getmetatable shows it, takes a __gc that runs
-- protected. newproxy(false) and newproxy(proxy) are Lua's.
local function handler_newproxy(arg)
    if arg ~= true then return real_newproxy(arg) end
    local proxy = real_newproxy(true)
    local mt = getmetatable(proxy)
    local finalizer
    mt.__gc = function(o)
        if finalizer then finalizer(o) end
    end
    mt.__metatable = setmetatable({}, {
        __index = function(_, k)
            if k == "__gc" then return finalizer end
            return rawget(mt, k)
        end,
        __newindex = function(_, k, v)
            if k == "__gc" then
                finalizer = v ~= nil and protected_finalizer(v) or nil
            else
                rawset(mt, k, v)
            end
        end,
    })
    return proxy
end

local env = {}
for _, name in ipairs(LIBRARIES) do
    local lib = rawget(_G, name)
    if type(lib) == "table" then
        local copy = {}
        for k, v in pairs(lib) do copy[k] = v end
        env[name] = copy
    end
end
env._G = env
env.newproxy = handler_newproxy
local lua_time = os.time
env.os.time = function(...)
    if select("#", ...) == 0 or (...) == nil then return host.now() end
    return lua_time(...)
end
env.print = output.print
env.require = function(name)
    if type(name) == "string" and env[name] ~= nil and rawget(_G, name) == package.loaded[name] then
        return env[name]
    end
    return require(name)
end
setmetatable(env, {
    __index = _G,
    __newindex = function(_, name)
        error("assignment to global '" .. tostring(name)
            .. "': handlers may not set globals (declare it local)", 2)
    end,
})

-- Makes the Lua modules required from now on see env, and the FFI's finalizers
-- run protected. Called once, before init.lua runs.
function M.install()
    local lua_loader = package.loaders[2]
    package.loaders[2] = function(name)
        local chunk = lua_loader(name)
        if type(chunk) == "function" then setfenv(chunk, env) end
        return chunk
    end
    local ok, ffi = pcall(require, "ffi")
    if ok then
        local gc, metatype = ffi.gc, ffi.metatype
        ffi.gc = function(cdata, fn)
            return gc(cdata, type(fn) == "function" and protected_finalizer(fn) or fn)
        end
        ffi.metatype = function(ct, mt)
            if type(mt) == "table" and type(rawget(mt, "__gc")) == "function" then
                rawset(mt, "__gc", protected_finalizer(rawget(mt, "__gc")))
            end
            return metatype(ct, mt)
        end
    end
end

-- loadfile(path), the chunk seeing env. Returns the chunk, or nil, message.
function M.loadfile(path)
    local chunk, err = loadfile(path)
    if not chunk then return nil, err end
    return setfenv(chunk, env)
end

return M
