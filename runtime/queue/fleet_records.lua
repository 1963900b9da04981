-- luaworker.queue.fleet_records: the record each luaworker worker keeps of itself
-- where its queue lives, for `luaworker status`: one JSON object a worker, living
-- a TTL (a worker killed leaves the list when it lapses; one that stops removes
-- its own). Where:
--   a queue on Redis: its connection, <prefix>luaworker:fleet:<id> (a string) and
--     the hash <prefix>luaworker:fleet naming them, each with when it lapses (Unix
--     ms; the entries of lapsed ones are deleted by the next list);
--   the database queue: the app's cache store (queue/cache.lua's choice): Redis,
--     the same keys on the cache connection under the cache prefix; database, a row
--     each (key luaworker:fleet:<id>, the JSON PHP-serialized as a string), listed
--     by their prefix. The file store cannot list its keys: refused, saying so.
local cjson = require "cjson"
local host = require "luaworker.host"
local redis = require "luaworker.redis"
local php = require "luaworker.php"
local settings = require "luaworker.base.settings"
local cache = require "luaworker.queue.cache"
local cache_database = require "luaworker.queue.cache_database"

local M = {}

local NAME = "luaworker:fleet"

-- Where the records are: { redis = connection, prefix = } or { store = database
-- store }; or nil, why none can be kept.
local function place()
    if settings.connection_name ~= "database" then
        return { redis = "queue", prefix = settings.config.prefix or "" }
    end
    local store = cache.store_name()
    if store == "redis" then return { redis = "cache", prefix = settings.cache_prefix } end
    if store == "database" then
        local p = settings.config.cache_prefix or ""
        if not settings.laravel_at_least(11, 0) then p = p:gsub(":$", "") end
        return { store = cache_database.new(p) }
    end
    return nil, "the cache store " .. store .. " (CACHE_STORE / CACHE_DRIVER) cannot list its keys: "
        .. "the records of the database queue's workers need the redis or database store"
end
M.place = place

-- Writes record (a table, with its id) for ttl seconds. Raises what the store raises.
function M.write(where, record, ttl)
    local text = cjson.encode(record)
    if where.store then
        where.store:put(NAME .. ":" .. record.id, php.serialize(text), math.max(1, math.ceil(ttl)))
        return
    end
    local ms = math.floor(ttl * 1000)
    redis.call(where.redis, "SET", where.prefix .. NAME .. ":" .. record.id, text, "PX", ms)
    redis.call(where.redis, "HSET", where.prefix .. NAME, record.id,
        string.format("%d", math.floor(host.microtime() * 1000) + ms))
end

-- Removes the record of id.
function M.remove(where, id)
    if where.store then
        where.store:forget(NAME .. ":" .. id)
        return
    end
    redis.call(where.redis, "HDEL", where.prefix .. NAME, id)
    redis.call(where.redis, "DEL", where.prefix .. NAME .. ":" .. id)
end

-- The live records, decoded (one that cannot be read is left out).
function M.list(where)
    local texts = {}
    if where.store then
        for _, item in ipairs(where.store:items_like(NAME .. ":")) do
            texts[#texts + 1] = php.unserialize(item.value)
        end
    else
        local now = math.floor(host.microtime() * 1000)
        local flat = redis.call(where.redis, "HGETALL", where.prefix .. NAME)
        for i = 1, #flat, 2 do
            local id, lapses = flat[i], tonumber(flat[i + 1]) or 0
            if lapses > now then
                texts[#texts + 1] = redis.call(where.redis, "GET", where.prefix .. NAME .. ":" .. id)
            else
                -- a worker killed: its entry goes (one written since lapses later)
                redis.call(where.redis, "HDEL", where.prefix .. NAME, id)
            end
        end
    end
    local records = {}
    for _, text in ipairs(texts) do
        local ok, record = pcall(cjson.decode, type(text) == "string" and text or "")
        if ok and type(record) == "table" then records[#records + 1] = record end
    end
    return records
end

return M
