-- luaworker.worker.handlers: finds and loads the Lua handler of a job. displayName
-- App\Jobs\ProcessPodcast -> <dir>/App/Jobs/ProcessPodcast.lua, else the payload's
-- data.commandName; a string job ("job": "Class@method") uses the class and calls
-- method (Laravel's default: fire). A handler file returns a table with
-- handle(job, command) (or the string job's method) and optionally
-- failed(job, command, err), and may declare what PHP's class has that its
-- serialized objects do not show (properties, defaults, serializes_models:
-- serialized_job.declaration). Each file runs at most once (see load_file),
-- seeing the handlers' globals (handler_env); <dir>/init.lua is never a job handler.
local payload_values = require "luaworker.base.values"
local serialized_job = require "luaworker.queue.serialized_job"
local horizon_retry = require "luaworker.queue.horizon_retry"
local handler_env = require "luaworker.worker.handler_env"
local output = require "luaworker.worker.output"
local host = require "luaworker.host"

local M = {}

local dir = "./handlers"
local cache = {}
-- each handler's declaration (serialized_job.declaration), false when none
local declarations = setmetatable({}, { __mode = "k" })
-- successful resolutions by the payload fields they depend on (at most
-- RESOLVED_MAX: hostile payloads must not grow it without end)
local resolved, nresolved, RESOLVED_MAX = {}, 0, 1000

function M.set_dir(d)
    dir = d:gsub("/+$", "")
    if dir == "" then dir = "/" end
    cache = {}
    resolved, nresolved = {}, 0
end

function M.dir()
    return dir
end

-- The errors of the handler files that do not compile, "; " between them (the
-- supervisor's watch's check: host.uncompilable_handlers), or nil when every one
-- does. Runs none of them.
function M.uncompilable()
    local bad, errors = host.uncompilable_handlers(dir)
    return bad and output.text(errors) or nil
end

local function path_of(class)
    return dir .. "/" .. class:gsub("^\\+", ""):gsub("\\", "/") .. ".lua"
end

-- Whether path is a regular file (a FIFO named X.lua is not opened: that blocks).
local function file_exists(path)
    return host.file_kind(path) == "file"
end

-- The module name require gives the file at path under the handler directory
-- (A/B.lua -> "A.B"), or nil.
local function module_name(path)
    local rel = path:sub(#dir + 2):match("^(.*)%.lua$")
    return rel and (rel:gsub("/", "."))
end

-- What the file at path returns, run once (cache[path]): a module the handlers
-- already required is not run again, and a file that could not be loaded or raised
-- is not run again either (its error is kept). Returns the value, or nil, message.
local function load_file(path)
    local loaded = cache[path]
    if loaded then return loaded.value, loaded.error end
    local name = module_name(path)
    if name and package.loaded[name] ~= nil then
        loaded = { value = package.loaded[name] }
    else
        local chunk, err = handler_env.loadfile(path)
        if not chunk then
            loaded = { error = "cannot load handler " .. output.text(err) }
        else
            local ok, value = pcall(chunk)
            loaded = ok and { value = value } or { error = "handler " .. output.text(path)
                .. " raised while loading: " .. tostring(value) }
        end
    end
    cache[path] = loaded
    return loaded.value, loaded.error
end

-- The handler at path, if it has method. Returns handler, or nil, message.
local function load_handler(path, method)
    if path == dir .. "/init.lua" then
        return nil, output.text(path) .. " is the handlers' start-up file, not a job handler"
    end
    local handler, err = load_file(path)
    if err then return nil, err end
    if type(handler) ~= "table" or type(handler[method]) ~= "function" then
        return nil, "handler " .. output.text(path) .. " must return a table with a " .. method
            .. "(job, " .. (method == "handle" and "command" or "data") .. ") function"
    end
    if declarations[handler] == nil then
        local declared, why = serialized_job.declaration(handler)
        if why then return nil, "handler " .. output.text(path) .. ": " .. why end
        declarations[handler] = declared or false
    end
    return handler
end

-- The fields of a handler that must be functions when present.
local FUNCTIONS = { "handle", "failed", "unique_id", "interrupted" }

-- Why handler (what the file at path returned) cannot handle jobs, or nil: not a
-- table, no function at all (a handle, or a string job's method), a field of
-- FUNCTIONS that is no function, a middleware that is neither a list nor a
-- function, a declaration that does not hold.
local function shape_problem(path, handler)
    local where = "handler " .. output.text(path)
    if type(handler) ~= "table" then
        return where .. " must return a table with a handle(job, command) function, not a " .. type(handler)
    end
    for _, name in ipairs(FUNCTIONS) do
        if handler[name] ~= nil and type(handler[name]) ~= "function" then
            return where .. ": " .. name .. " must be a function, not a " .. type(handler[name])
        end
    end
    local mw = handler.middleware
    if mw ~= nil and type(mw) ~= "table" and type(mw) ~= "function" then
        return where .. ": middleware must be a list, or a function returning one, not a " .. type(mw)
    end
    local methods = false
    for _, v in pairs(handler) do
        if type(v) == "function" then methods = true end
    end
    if not methods then
        return where .. " must return a table with a handle(job, command) function (or a string job's "
            .. "method): it has no function"
    end
    local _, why = serialized_job.declaration(handler)
    if why then return where .. ": " .. why end
    return nil
end

-- Whether the file rel (below the handler directory) is a job's handler: each part
-- of its path starts with a capital letter, as the parts of a PHP class's name do
-- (App/Jobs/SendInvoice.lua); init.lua and modules (lib/money.lua) are not.
local function is_handler_path(rel)
    for part in rel:gsub("%.lua$", ""):gmatch("[^/]+") do
        if not part:match("^%u") then return false end
    end
    return true
end

-- Loads each handler file (is_handler_path) in the handlers' environment, once, as
-- its first job would, and checks its shape. Returns nil when each can handle
-- jobs, else their errors ("; " between them). Call after run_init.
function M.unusable()
    local errors = {}
    for _, rel in ipairs(host.handler_files(dir)) do
        if is_handler_path(rel) then
            local path = dir .. "/" .. rel
            local handler, err = load_file(path)
            err = err or shape_problem(path, handler)
            if err then errors[#errors + 1] = err end
        end
    end
    return #errors > 0 and table.concat(errors, "; ") or nil
end

-- The handler files whose path differs from rel's only in case or folder (the
-- same file name, case aside; at most 3, "a, b"), or nil. The listing is read again at most once a second.
local listing, listed_at
local function near_misses(rel)
    local now = host.clock()
    if not listing or now - listed_at >= 1 then listing, listed_at = host.handler_files(dir), now end
    local base = rel:match("[^/]*$"):lower()
    local found = {}
    for _, other in ipairs(listing) do
        if #found < 3 and other ~= rel and other:match("[^/]*$"):lower() == base then
            found[#found + 1] = output.text(dir .. "/" .. other)
        end
    end
    return #found > 0 and table.concat(found, ", ") or nil
end

-- What the handler declares about its PHP class (serialized_job.declaration), or
-- nil (none, or no handler).
function M.declaration(handler)
    return handler and declarations[handler] or nil
end

-- Is class usable as a path under the handler directory? A PHP class name never
-- has a ".." segment (which would lead out of the directory) nor a NUL byte
-- (where C would cut the path short).
local function safe_class(class)
    if class:find("\0", 1, true) then return false end
    for segment in (class:gsub("\\", "/") .. "/"):gmatch("([^/]*)/") do
        if segment == ".." then return false end
    end
    return true
end

local printable = output.text

-- Is the payload a string job ("job" other than CallQueuedHandler@call)?
function M.is_string_job(payload)
    local j = payload.job
    return type(j) == "string" and j ~= payload_values.CALL_QUEUED_HANDLER
end

-- Returns handler, method, path; or nil, message (naming the class and every path
-- tried, or why the file could not be used).
-- The handlers luaworker has of its own, for the jobs the packages it speaks for
-- dispatch (a handler file for the class comes first): Horizon's dashboard's retry.
local BUILT_IN = {
    ["Laravel\\Horizon\\Jobs\\RetryFailedJob"] = {
        handle = function(_, command) horizon_retry.retry_failed_job(tostring(command.id)) end,
    },
}

local function resolve(payload)
    local classes, method = {}, "handle"
    local function add(c)
        if type(c) == "string" and c ~= "" then
            for _, seen in ipairs(classes) do
                if seen == c then return end
            end
            classes[#classes + 1] = c
        end
    end
    if M.is_string_job(payload) then
        local class, m = payload.job:match("^([^@]*)@(.*)$")
        add(class or payload.job)
        method = (m and m ~= "") and m or "fire"
    else
        add(payload.displayName)
        local data = payload.data
        if type(data) == "table" then add(data.commandName) end
    end
    if #classes == 0 then
        return nil, "no handler: the payload has no displayName, data.commandName or job class"
    end
    local tried, refused, misses = {}, {}, {}
    for _, class in ipairs(classes) do
        local path = path_of(class)
        if not safe_class(class) then
            refused[#refused + 1] = "'" .. printable(class) .. "' is not a PHP class name"
        elseif cache[path] or file_exists(path) then
            local handler, err = load_handler(path, method)
            if not handler then return nil, err end
            return handler, method, path
        else
            tried[#tried + 1] = printable(path)
            local near = near_misses(path:sub(#dir + 2))
            if near then misses[#misses + 1] = near end
        end
    end
    for _, class in ipairs(classes) do
        if BUILT_IN[class] then return BUILT_IN[class], method, "(luaworker's own)" end
    end
    local why = {}
    if #refused > 0 then why[1] = table.concat(refused, ", ") end
    if #tried > 0 then why[#why + 1] = "tried " .. table.concat(tried, ", ") end
    if #misses > 0 then
        why[#why + 1] = "a file differs only in case or folder: " .. table.concat(misses, ", ")
            .. " (a handler's path is its class's, case included)"
    end
    return nil, "no handler for " .. printable(classes[1]) .. ": " .. table.concat(why, "; ")
end

function M.resolve(payload)
    local data = payload.data
    local key = tostring(payload.job) .. "\0" .. tostring(payload.displayName) .. "\0"
        .. tostring(type(data) == "table" and data.commandName)
    local hit = resolved[key]
    if hit then return hit[1], hit[2], hit[3] end
    local handler, method, path = resolve(payload)
    if handler then
        if nresolved >= RESOLVED_MAX then resolved, nresolved = {}, 0 end
        resolved[key], nresolved = { handler, method, path }, nresolved + 1
    end
    return handler, method, path
end

-- The declaration of the handler of job class `class` (what luaworker.dispatch
-- needs to write its objects as PHP does), or nil when it has no usable handler.
function M.declared(class)
    return M.declaration((M.resolve({ displayName = class, job = payload_values.CALL_QUEUED_HANDLER,
        data = { commandName = class } })))
end

-- What the handler of job class `class` says of the PHP class for Horizon's
-- records of the jobs luaworker pushes: {tags = its `tags`, function(command) -> a
-- list, standing for the class's tags(), or nil; silenced = its `silenced`, true
-- standing for `implements Silenced`}; both empty without a usable handler. Raises
-- for a `tags` that is not a function or a `silenced` that is not a boolean.
function M.horizon(class)
    local handler, _, path = M.resolve({ displayName = class, job = payload_values.CALL_QUEUED_HANDLER,
        data = { commandName = class } })
    if type(handler) ~= "table" then return {} end
    local tags, silenced = handler.tags, handler.silenced
    if tags ~= nil and type(tags) ~= "function" then
        error("the handler " .. tostring(path) .. ": tags must be a function(command) returning a list, got "
            .. type(tags), 0)
    end
    if silenced ~= nil and type(silenced) ~= "boolean" then
        error("the handler " .. tostring(path) .. ": silenced must be true or false, got " .. type(silenced), 0)
    end
    return { tags = tags, silenced = silenced }
end

-- Runs <dir>/init.lua once, when it exists. Returns true, or nil, message.
function M.run_init()
    local path = dir .. "/init.lua"
    if not file_exists(path) then return true end
    local chunk, err = handler_env.loadfile(path)
    if not chunk then return nil, "cannot load " .. err end
    chunk()
    return true
end

-- Sets package.path so that handlers can require modules from the handler directory.
function M.add_to_package_path()
    package.path = dir .. "/?.lua;" .. dir .. "/?/init.lua;" .. package.path
end

return M
