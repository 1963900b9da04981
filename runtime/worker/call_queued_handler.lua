-- luaworker.call_queued_handler: what Laravel's CallQueuedHandler does around a
-- handler: the command it gets (data.command unserialized, decrypted first for a
-- ShouldBeEncrypted job), unique locks, the next job of a chain, and the delete of
-- a job that neither deleted nor released itself. String jobs call their class's
-- method instead. Reference: laravel-queue-reference.md 6.5, 6.6, 6.8, 8.9.
local cjson = require "cjson"
local redis = require "luaworker.redis"
local php = require "luaworker.php"
local batch = require "luaworker.batch"
local handlers = require "luaworker.handlers"
local dispatch = require "luaworker.dispatch"
local output = require "luaworker.output"
local payload_values = require "luaworker.payload"
local settings = require "luaworker.settings"

local value, truthy = payload_values.value, payload_values.truthy

local M = {}

local app_key  -- APP_KEY decoded, once

-- CallQueuedHandler::getCommand for a ShouldBeEncrypted job: Laravel's decrypt()
-- of data.command with APP_KEY (cipher APP_CIPHER, default AES-256-CBC), whose
-- plaintext is the serialized command serialized once more as a string. Returns
-- the serialized command, or nil, message.
local function decrypt_command(text)
    local encrypter = require "luaworker.encrypter"
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

-- The command a handler receives: data.command unserialized for object jobs, data
-- itself for string jobs. Returns value or nil, message.
function M.command_of(job)
    local payload = job:payload()
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

-- UniqueLock::release: deletes laravel_unique_job:<class><uniqueId> in the cache
-- store (its lock connection is the 'default' Redis connection, the queue's). The
-- handler's unique_id(command) stands for a PHP uniqueId() method.
function M.release_unique_lock(handler, command)
    local id
    if handler and type(handler.unique_id) == "function" then
        id = handler.unique_id(command)
    else
        id = value(command.uniqueId)
    end
    local separator = settings.laravel_at_least(11, 0) and ":" or ""
    redis.call("queue", "DEL", settings.cache_prefix .. "laravel_unique_job:" .. php.class(command)
        .. separator .. tostring(id or ""))
end

-- Queueable::dispatchNextJobInChain: the first chained job, carrying the rest,
-- dispatched on the chain's connection and queue unless it names its own.
local function dispatch_next_in_chain(command)
    local chained = value(command.chained)
    if type(chained) ~= "table" or chained[1] == nil then return end
    local nxt, err = php.unserialize(tostring(chained[1]))
    if type(nxt) ~= "table" or not php.class(nxt) then
        error("the next job of the chain cannot be read: " .. tostring(err or "not an object"), 0)
    end
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
    dispatch.push_command(nxt, value(nxt.queue) or settings.config.default_queue, delay)
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
    if unique == "until_processing" then M.release_unique_lock(handler, command) end
    handler.handle(job, command)
    if unique and unique ~= "until_processing" and not job:is_released() then
        M.release_unique_lock(handler, command)
    end
    if not job:has_failed() and not job:is_released() then
        dispatch_next_in_chain(command)
        local batch_id = batch.id_of(command)
        if batch_id then batch.record_successful_job(batch_id, tostring(job:uuid()), job) end
    end
    if not job:is_deleted_or_released() then job:delete() end
end

return M
