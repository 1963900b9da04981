-- luaworker.worker.call_queued_handler: what Laravel's CallQueuedHandler does around a
-- handler: the command it gets (data.command unserialized, decrypted first for a
-- ShouldBeEncrypted job), unique locks, the next job of a chain, and the delete of
-- a job that neither deleted nor released itself. String jobs call their class's
-- method instead. Laravel's source: Illuminate/Queue/CallQueuedHandler.php.
local cjson = require "cjson"
local cache = require "luaworker.queue.cache"
local php = require "luaworker.php"
local encrypter = require "luaworker.encrypter"
local log_context = require "luaworker.queue.context"
local batch = require "luaworker.bus.batch"
local handlers = require "luaworker.worker.handlers"
local job_middleware = require "luaworker.worker.job_middleware"
local dispatch = require "luaworker.queue.dispatch"
local serialized_job = require "luaworker.queue.serialized_job"
local output = require "luaworker.worker.output"
local payload_values = require "luaworker.base.values"
local settings = require "luaworker.base.settings"

local value, truthy = payload_values.value, payload_values.truthy

local M = {}

local app_key  -- APP_KEY decoded, once

-- CallQueuedHandler::getCommand for a ShouldBeEncrypted job: Laravel's decrypt()
-- of data.command with APP_KEY (cipher APP_CIPHER, default AES-256-CBC), whose
-- plaintext is the serialized command serialized once more as a string. Returns
-- the serialized command, or nil, message.
local function decrypt_command(text)
    local cipher = os.getenv("APP_CIPHER")
    if not app_key then
        local raw = os.getenv("APP_KEY")
        if not raw or raw == "" then
            return nil, "data.command is encrypted (ShouldBeEncrypted) and APP_KEY is not set "
                .. "(set it, or pass the app's .env with --env-file)"
        end
        local key, err = encrypter.key(raw, cipher)
        if not key then return nil, "APP_KEY: " .. err end
        app_key = key
    end
    local plain, err = encrypter.decrypt(text, app_key, cipher)
    if not plain then return nil, "cannot decrypt data.command with APP_KEY: " .. err end
    local inner = php.unserialize(plain)
    if type(inner) ~= "string" then
        return nil, "decrypted data.command is not a serialized string, as Laravel's encrypt() makes"
    end
    return inner
end

-- The command of a decoded payload as PHP wrote it: data.command unserialized for
-- object jobs (decrypted first for a ShouldBeEncrypted one), data itself for string
-- jobs. Returns value or nil, message. Loads no handler.
function M.payload_command(payload)
    local data = payload.data
    if handlers.is_string_job(payload) then return data end
    if type(data) ~= "table" or type(data.command) ~= "string" then
        return nil, "payload has no data.command string"
    end
    local text = data.command
    if text:sub(1, 2) ~= "O:" then
        local err
        text, err = decrypt_command(text)
        if not text then return nil, err end
    end
    local command, err = php.unserialize(text)
    if command == nil then
        return nil, "data.command is not valid PHP serialize() output: " .. err
    end
    return command
end

-- The command a handler receives: payload_command's, with the defaults its handler
-- declares for the properties it lacks (from 9.4 PHP leaves out those at their
-- defaults). Returns value or nil, message.
function M.command_of(job)
    local payload = job:payload()
    local command, err = M.payload_command(payload)
    if command == nil then return nil, err end
    if handlers.is_string_job(payload) then return command end
    if php.class(command) then
        command = serialized_job.with_defaults(command, handlers.declaration(handlers.resolve(payload)))
    end
    return command
end

-- How the job's class is unique (ShouldBeUnique), which PHP's serialized data does
-- not show: the handler says so with `unique = true` or `unique = "until_processing"`;
-- otherwise a command with a uniqueId or uniqueFor property is taken as unique.
function M.unique_mode(handler, command)
    if handler and handler.unique ~= nil then return handler.unique end
    if type(command) == "table" and (command.uniqueId ~= nil or command.uniqueFor ~= nil) then
        return true
    end
    return false
end

-- The cache key of the job's lock (before the cache prefix): laravel_unique_job:
-- and the class and uniqueId (the handler's unique_id(command) stands for a PHP
-- uniqueId() method), 8-10 joined as they are, 11+ with ':' between, 12.41+ with
-- the job's displayName() for the class when it has its own (display_name, the
-- payload's, differs from the class), 12.54+ by its xxh128 (job_middleware.lock_name).
local function lock_key(handler, command, display_name)
    local id
    if handler and type(handler.unique_id) == "function" then
        id = handler.unique_id(command)
    else
        id = value(command.uniqueId)
    end
    local name = job_middleware.lock_name(php.class(command), display_name)
    local separator = settings.laravel_at_least(11, 0) and ":" or ""
    return "laravel_unique_job:" .. name .. separator .. tostring(id or "")
end

-- UniqueLock::release: deletes the job's lock in the cache store (its lock
-- connection is the 'default' Redis connection, the queue's). The key is the one
-- Laravel 11.39+ recorded in the payload's hidden Context when it pushed the job
-- (laravel_unique_job_key), else lock_key's. 13.24+: a job carrying its lock's owner
-- (uniqueLockOwner, or the Context's laravel_unique_job_lock_owner) deletes the
-- key only while that owner holds it.
function M.release_unique_lock(handler, command, job)
    local context = job:log_context()
    local key = log_context.get(context, "hidden", "laravel_unique_job_key")
    if type(key) ~= "string" then key = lock_key(handler, command, job:display_name()) end
    local owner = value(command.uniqueLockOwner)
    if owner == nil or owner == "" then
        owner = log_context.get(context, "hidden", "laravel_unique_job_lock_owner")
    end
    local owned = settings.laravel_at_least(13, 24) and type(owner) == "string" and owner ~= ""
    local store = job.form.cache or cache  -- a fake job's form has its own (worker/fake_job.lua)
    store.release_unique_lock(key, owned and owner or nil)
end

-- The ModelNotFoundException Eloquent raises for class and ids (one or a list).
function M.model_not_found_exception(class, ids)
    if type(ids) ~= "table" then ids = ids == nil and {} or { ids } end
    local parts = {}
    for i, id in ipairs(ids) do parts[i] = tostring(value(id)) end
    return payload_values.exception("Illuminate\\Database\\Eloquent\\ModelNotFoundException",
        "No query results for model [" .. tostring(class) .. "]"
            .. (#parts > 0 and (" " .. table.concat(parts, ", ")) or "."))
end

-- Whether the job is deleted when its models are missing: 13.0+ the payload's
-- deleteWhenMissingModels; before, the class's property, which the handler's
-- delete_when_missing_models stands for (PHP's class defaults are not in the
-- payload), else the command's own (serialized by Laravel before 9.4).
local function deletes_when_missing_models(job, handler, command)
    if settings.laravel_at_least(13, 0) then
        return value(job:payload().deleteWhenMissingModels) == true
    end
    if handler and handler.delete_when_missing_models ~= nil then
        return handler.delete_when_missing_models == true
    end
    return type(command) == "table" and value(command.deleteWhenMissingModels) == true
end

-- CallQueuedHandler::handleModelNotFound, for a handler that found the models its
-- command names gone (job:model_not_found): 11.39+ the unique lock the payload's
-- Context names is released; then the job is deleted when it deletes when models
-- are missing (12.51+ counted a success of its batch), else failed with
-- ModelNotFoundException. Neither runs the next job of its chain.
function M.handle_model_not_found(job, class, ids)
    local exception = M.model_not_found_exception(class, ids)
    job.models_missing = { class = class, ids = ids }
    local handler = handlers.resolve(job:payload())
    local command = M.command_of(job)
    if settings.laravel_at_least(11, 39) and type(command) == "table"
        and log_context.get(job:log_context(), "hidden", "laravel_unique_job_key") then
        M.release_unique_lock(handler, command, job)
    end
    if deletes_when_missing_models(job, handler, command) then
        local batch_id = settings.laravel_at_least(12, 51) and batch.id_of(command)
        if batch_id then
            (job.form.batch or batch).record_successful_job(batch_id, tostring(job:uuid()), job)
        end
        job:delete()
        return
    end
    job:fail(exception)
end

-- Queueable::dispatchNextJobInChain: the first chained job, carrying the rest,
-- dispatched on the chain's connection and queue unless it names its own. PHP
-- unserializes it, sets those properties and serializes it again: from 9.4 a
-- SerializesModels class (whose link left out its defaults) leaves out the
-- properties at their defaults, a class without it writes them all.
local function dispatch_next_in_chain(command)
    local chained = value(command.chained)
    if type(chained) ~= "table" or chained[1] == nil then return end
    local nxt, err = php.unserialize(tostring(chained[1]))
    if type(nxt) ~= "table" or not php.class(nxt) then
        error("the next job of the chain cannot be read: " .. tostring(err or "not an object"), 0)
    end
    local omit = serialized_job.omits_defaults(nxt)
    local rest = {}
    for i = 2, #chained do rest[i - 1] = chained[i] end
    -- Queueable declares these, so a PHP job always has them (null when unset)
    local function declared(name)
        local v = command[name]
        if v == nil then return cjson.null end
        return v
    end
    nxt.chained = rest
    if not truthy(nxt.connection) then nxt.connection = declared("chainConnection") end
    if not truthy(nxt.queue) then nxt.queue = declared("chainQueue") end
    nxt.chainConnection = declared("chainConnection")
    nxt.chainQueue = declared("chainQueue")
    nxt.chainCatchCallbacks = declared("chainCatchCallbacks")
    local connection = value(nxt.connection)
    if connection ~= nil and connection ~= settings.connection_name then
        error("the chain goes on on connection '" .. tostring(connection)
            .. "', which luaworker does not work", 0)
    end
    local delay = tonumber(value(nxt.delay))
    dispatch.push_command(nxt, value(nxt.queue) or settings.config.default_queue, delay, nil,
        { omit = omit, horizon = handlers.horizon(php.class(nxt)) })
end

-- Whether the command's batch is cancelled: the SkipIfBatchCancelled middleware
-- (Laravel 10+), which a handler asks for with skip_if_batch_cancelled = true,
-- skips such a job's handle; the job then counts as a success of its batch.
local function batch_cancelled(command)
    local id = batch.id_of(command)
    local row = id and batch.find(id)
    return row ~= nil and row.cancelled == true
end

-- Runs the job's handler: CallQueuedHandler::call for object jobs, the class's
-- method for string jobs. Raises what the handler raises.
function M.call(job)
    local payload = job:payload()
    local handler, method_or_err, path = handlers.resolve(payload)
    if not handler then error(method_or_err, 0) end
    local command, err = M.command_of(job)
    if command == nil and err then error(err .. " (job " .. tostring(job:name()) .. ")", 0) end
    if handlers.is_string_job(payload) then
        handler[method_or_err](job, command)
        if not job:is_deleted_or_released() and not job:has_failed() then
            output.error(string.format("%s returned without job:delete() or job:release(): as in "
                .. "Laravel, a string job stays reserved and runs again after retry_after (%s)",
                payload.job, path), job)
        end
        return
    end
    local unique = M.unique_mode(handler, command)
    if unique == "until_processing" then M.release_unique_lock(handler, command, job) end
    if not (handler.skip_if_batch_cancelled and batch_cancelled(command)) then
        job_middleware.run(handler, job, command)
    end
    if job.models_missing then return end
    if unique and unique ~= "until_processing" and not job:is_released() then
        M.release_unique_lock(handler, command, job)
    end
    if not job:has_failed() and not job:is_released() then
        dispatch_next_in_chain(command)
        local batch_id = batch.id_of(command)
        if batch_id then
            (job.form.batch or batch).record_successful_job(batch_id, tostring(job:uuid()), job)
        end
    end
    if not job:is_deleted_or_released() then job:delete() end
end

return M
