-- luaworker.start: the entry point the host runs in the main coroutine:
-- run(cli, config) dispatches to the command, in a task (luaworker.loop.task), and
-- returns the exit status. The worker and the commands are loaded when asked for
-- (a command does not load the worker), which is why they are required where run.
local queue = require "luaworker.queue"
local redis = require "luaworker.redis"
local task = require "luaworker.loop.task"
local host = require "luaworker.host"
local luaworker = require "luaworker"
local settings = require "luaworker.base.settings"

local M = {}

-- After start-up, a write to an undeclared global raises: handlers keep their state
-- in locals or modules.
local function forbid_global_writes()
    setmetatable(_G, {
        __newindex = function(_, name)
            error("assignment to global '" .. tostring(name)
                .. "': handlers may not create globals (declare it local)", 2)
        end,
    })
end

-- `luaworker lua FILE args...`: runs FILE with arg set as the lua interpreter sets it.
local function run_lua(cli)
    local file = cli.args[1]
    local args = { [0] = file }
    for i = 2, #cli.args do args[i - 1] = cli.args[i] end
    rawset(_G, "arg", args)
    local chunk, err = loadfile(file)
    if not chunk then
        io.stderr:write("luaworker: ", err, "\n")
        return 2
    end
    local ok, result = xpcall(chunk, function(e)
        if e == nil then return nil end
        return debug.traceback(tostring(e), 2)
    end, unpack(args))
    if not ok then
        -- error() without a value is how busted exits non-zero on Lua 5.1.
        if result ~= nil then io.stderr:write("luaworker: ", result, "\n") end
        return 1
    end
    return type(result) == "number" and result or 0
end

-- The path of program on PATH, or nil.
local function on_path(program)
    for dir in (os.getenv("PATH") or ""):gmatch("[^:]+") do
        if host.file_kind(dir .. "/" .. program) == "file" then return dir .. "/" .. program end
    end
    return nil
end

-- `luaworker test [paths...] [-- busted options]`: busted, run as `luaworker lua`
-- runs a file; its specs' handlers come from --handlers (luaworker.testing).
local function run_test(cli)
    local busted = on_path("busted")
    if not busted then
        io.stderr:write("luaworker: test: busted is not installed (on Debian: apt-get install lua-busted)\n")
        return 2
    end
    local args = { busted }
    for i = 1, #cli.args do args[i + 1] = cli.args[i] end
    return run_lua({ args = args })
end

local function run(cli, config)
    queue.set_prefix(config.prefix)
    luaworker.prefix = config.prefix
    luaworker.default_queue = config.default_queue
    local command = cli.command
    -- what every command's modules may read (luaworker.db: --env-file; the version;
    -- the connection's name, which `work`'s argument may change)
    settings.options, settings.config = cli.options, config
    queue.set_cluster(config.queue_redis.cluster, settings.laravel_at_least(13, 5))
    settings.connection_name = config.connection_name
    settings.cache_prefix = config.prefix .. config.cache_prefix
    if command == "lua" then return run_lua(cli) end
    if command == "test" then return run_test(cli) end
    if command == "work" then
        forbid_global_writes()
        return require("luaworker.worker").run(cli, config)
    end
    local ok, status = task.run(require("luaworker.commands")[command], cli, config)
    if ok then return status end
    if redis.is_error(status) and status.kind == "reply" then
        io.stderr:write("luaworker: Redis at ", host.describe("queue"), ": ", status.message, "\n")
    elseif redis.is_error(status) then
        io.stderr:write("luaworker: ", status.message, "\n")
    else
        io.stderr:write("luaworker: ", tostring(status), "\n")
    end
    -- a refusal lasts until someone changes something (a password, an ACL): bad input
    if redis.is_error(status) and redis.is_refusal(status.message, status.kind) then return 2 end
    return 1
end

function M.run(cli, config)
    return task.main(run, cli, config)
end

return M
