-- luaworker.queue.context: Laravel 11+'s Context as payloads carry it. When a job is
-- pushed, ContextServiceProvider's payload hook adds the dispatching process's
-- context as "illuminate:log:context": {"data": {key: serialize(value)}, "hidden":
-- {...}} (the key is left out when both are empty; an empty part is PHP's `[]`);
-- a worker hydrates it before the job runs, so whatever the job dispatches carries
-- it on. Hidden values are never written to a log line.
local cjson = require "cjson"
local php = require "luaworker.php"

local M = {}

M.KEY = "illuminate:log:context"

-- PendingDispatch puts a unique job's lock in the hidden context while it is
-- pushed and forgets it after (InteractsWithUniqueJobs, 11.39+).
local UNIQUE_KEYS = { laravel_unique_job_cache_store = true, laravel_unique_job_key = true,
    laravel_unique_job_lock_owner = true }

local encode = cjson.new().encode  -- escapes '/' as '\/', as PHP's json_encode does

local function copy(t)
    local c = {}
    if type(t) == "table" then
        for k, v in pairs(t) do c[k] = v end
    end
    return c
end

-- The {data =, hidden =} of a payload (a decoded table), each a table of serialized
-- values by key (empty when the payload has none); a copy the caller may change.
function M.of(payload)
    local context = type(payload) == "table" and payload[M.KEY] or nil
    if type(context) ~= "table" then return { data = {}, hidden = {} } end
    return { data = copy(context.data), hidden = copy(context.hidden) }
end

-- The value of key in part ("data" or "hidden") of context (from M.of),
-- unserialized; nil when absent. A value that is not serialize() output raises,
-- naming the key (never the value: it may be hidden).
function M.get(context, part, key)
    local text = context[part][key]
    if text == nil then return nil end
    local v, err
    if type(text) == "string" then v, err = php.unserialize(text) end
    if v == nil then
        error(string.format("the job's %scontext '%s' is not PHP serialize() output: %s",
            part == "hidden" and "hidden " or "", tostring(key),
            tostring(err or ("a JSON " .. type(text)))), 0)
    end
    return v
end

-- Every value of part, unserialized, by key.
function M.all(context, part)
    local t = {}
    for key in pairs(context[part]) do t[key] = M.get(context, part, key) end
    return t
end

-- Sets key in part of context to value, serialized as PHP does (Context::add).
function M.set(context, part, key, value)
    if type(key) ~= "string" or key == "" then
        error("expected a context key (a non-empty string), got " .. tostring(key), 3)
    end
    local text, err = php.serialize(value)
    if not text then error("context '" .. key .. "' cannot be serialized: " .. tostring(err), 3) end
    context[part][key] = text
end

local function object_text(t, skip)
    local keys = {}
    for k, v in pairs(t) do
        if type(k) == "string" and type(v) == "string" and not (skip and skip[k]) then
            keys[#keys + 1] = k
        end
    end
    if #keys == 0 then return "[]" end
    table.sort(keys)
    local parts = {}
    for i, k in ipairs(keys) do parts[i] = encode(k) .. ":" .. encode(t[k]) end
    return "{" .. table.concat(parts, ",") .. "}"
end

-- The payload member carrying context on to a job pushed while it is hydrated
-- (',"illuminate:log:context":{...}'), or "" when it holds nothing. A unique job's
-- lock is not carried on (the job pushed is not the one holding it). Keys are in
-- byte order (the order they were added in is not in the decoded payload).
function M.member(context)
    local data = object_text(context.data)
    local hidden = object_text(context.hidden, UNIQUE_KEYS)
    if data == "[]" and hidden == "[]" then return "" end
    return ',"' .. M.KEY .. '":{"data":' .. data .. ',"hidden":' .. hidden .. "}"
end

return M
