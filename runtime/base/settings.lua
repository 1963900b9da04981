-- luaworker.base.settings: the worker's options and configuration, filled once by
-- luaworker.worker when it starts and read by the worker's other modules.
local host = require "luaworker.host"

local M = {
    options = {},             -- `luaworker work`'s options (runtime/config/cli.c), plus
                              -- queue_list (the queues, as given) and effective_backoff
    config = {},              -- the configuration (runtime/loop/vm.c, push_config)
    queues = {},              -- the queue names, in --queue order
    connection_name = "redis",
    cache_prefix = "",        -- the full prefix of the cache store's keys
    stopping = false,         -- the worker stops: takes no job, lets those in flight end
}

-- Values that stand for environment variables of the app's settings in this
-- process (luaworker.testing's database()), by name.
M.env_overrides = {}

-- An environment variable of the app's settings (the process's, with --env-file's
-- .env under it), or default when it is not set or empty (as Laravel's env()).
function M.env(name, default)
    local v = M.env_overrides[name]
    if v == nil then v = os.getenv(name) end
    if v == nil or v == "" then return default end
    return v
end

-- Whether a wait for an outside service should give up: the worker is stopping (a
-- stop signal, a reload, or any reason to stop), so what waits is left for later.
function M.giving_up()
    local quit, _, reload = host.signals()
    return M.stopping or quit or reload
end

-- The app's directory, the one of --env-file (where Laravel's base path is), or nil
-- without --env-file.
function M.app_dir()
    local env_file = M.options and M.options.env_file
    return env_file and (env_file:match("^(.*)/[^/]*$") or ".")
end

-- The most bytes of payloads one pop may take: a quarter of --memory-limit (a
-- payload reaches the Lua heap beside what it holds already, with copies of it: the
-- reserved copy, the decoded payload, the job's command), or nil without a limit. A
-- payload longer than that alone is never run by this worker.
function M.max_pop_bytes()
    local limit = M.options.memory_limit or 0
    if limit <= 0 then return nil end
    return math.floor(limit * 1048576 / 4)
end

-- Whether the Laravel version luaworker speaks (--laravel, or the app's) is at least
-- major.minor: a behaviour that version brought applies.
function M.laravel_at_least(major, minor)
    local v = M.config.laravel_version or 8
    return v > major or (v == major and (M.config.laravel_minor or 83) >= minor)
end

return M
