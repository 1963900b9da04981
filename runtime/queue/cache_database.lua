-- luaworker.queue.cache_database: Laravel's database cache store (Illuminate\Cache\
-- DatabaseStore, CACHE_STORE / CACHE_DRIVER "database"), for the keys the queue keeps
-- in the cache (queue/cache.lua). Items are rows of the app's `cache` table (key,
-- value, expiration: a Unix second), named by the cache prefix and the key; values
-- PHP-serialized (Laravel base64s a value with a NUL byte on PostgreSQL: none of
-- the queue's values has one); locks are rows of `cache_locks` (key, owner,
-- expiration). The database connection is the app's default one, or
-- DB_CACHE_CONNECTION (Laravel 11+'s name), its tables DB_CACHE_TABLE and
-- DB_CACHE_LOCK_TABLE.
local host = require "luaworker.host"
local db = require "luaworker.db"
local settings = require "luaworker.base.settings"

local M = {}

-- forever: ten years, as DatabaseStore::forever.
local FOREVER = 315360000

local env = settings.env

local Store = {}
Store.__index = Store

-- The store with the cache prefix prefix (Laravel's, as it is: no ':' added).
function M.new(prefix)
    local tbl = db.table_name("DB_CACHE_TABLE", "cache")
    local locks = db.table_name("DB_CACHE_LOCK_TABLE", "cache_locks")
    local d = db.connection(env("DB_CACHE_CONNECTION"))
    return setmetatable({ prefix = prefix, table = d:wrap(tbl), locks = d:wrap(locks),
        connection = env("DB_CACHE_CONNECTION") }, Store)
end

function Store:db()
    return db.connection(self.connection)
end

-- The column `key`, quoted as Laravel's grammars quote it (a reserved word in MySQL).
function Store:key_column()
    return self:db():wrap("key")
end

-- The serialized value of key, or nil when it is missing or expired (an expired row
-- is deleted, as DatabaseStore::get does).
function Store:get(key)
    local row = self:db():select("select value, expiration from " .. self.table .. " where "
        .. self:key_column() .. " = ?", { self.prefix .. key })[1]
    if not row then return nil end
    if host.now() >= (tonumber(row.expiration) or 0) then
        self:forget(key)
        return nil
    end
    return row.value
end

-- Stores serialized under key for seconds: the row inserted, or updated when it is
-- there (DatabaseStore::put).
function Store:put(key, serialized, seconds)
    local d, name, k = self:db(), self.prefix .. key, self:key_column()
    local expiration = host.now() + seconds
    local update = "update " .. self.table .. " set value = ?, expiration = ? where " .. k .. " = ?"
    if d:update(update, { serialized, expiration, name }) > 0 then return end
    local ok, err = pcall(d.insert, d, "insert into " .. self.table .. " (" .. k .. ", value, "
        .. "expiration) values (?, ?, ?)", { name, serialized, expiration })
    -- a row another process inserted meanwhile: updated instead, as Laravel does
    if not ok and d:update(update, { serialized, expiration, name }) == 0 then error(err, 0) end
end

-- DatabaseStore::add: the row inserted; when the key is there, updated only where
-- it expired. Returns whether serialized was stored.
function Store:add(key, serialized, seconds)
    local d, name, now = self:db(), self.prefix .. key, host.now()
    local ok, err = pcall(d.insert, d, "insert into " .. self.table .. " (" .. self:key_column()
        .. ", value, expiration) values (?, ?, ?)", { name, serialized, now + seconds })
    if ok then return true end
    if db.lost_connection(err) then error(err, 0) end
    return d:update("update " .. self.table .. " set value = ?, expiration = ? where " .. self:key_column()
        .. " = ? and expiration <= ?", { serialized, now + seconds, name, now }) >= 1
end

function Store:forever(key, serialized)
    self:put(key, serialized, FOREVER)
end

-- DatabaseStore::increment: in a transaction, the row locked, its integer value
-- plus one written back (the expiration kept). Returns the new value, or false when
-- the key is missing or not a number.
function Store:increment(key)
    local name, k = self.prefix .. key, self:key_column()
    local lock = self:db().driver_name == "sqlite" and "" or " for update"
    return self:db():transaction(function(d)
        local row = d:select("select value from " .. self.table .. " where " .. k .. " = ?" .. lock,
            { name })[1]
        if not row then return false end
        local n = tonumber(tostring(row.value):match("^i:(%-?%d+);$"))
        if not n then return false end
        d:update("update " .. self.table .. " set value = ? where " .. k .. " = ?",
            { string.format("i:%d;", n + 1), name })
        return n + 1
    end)
end

-- The unexpired items whose key starts with prefix (after the cache prefix; no %
-- or _ in it): { {key =, value = serialized}, ... }, key without the cache prefix.
function Store:items_like(prefix)
    local rows = self:db():select("select " .. self:key_column() .. " as k, value from " .. self.table
        .. " where " .. self:key_column() .. " like ? and expiration > ?",
        { self.prefix .. prefix .. "%", host.now() })
    local items = {}
    for i, row in ipairs(rows) do items[i] = { key = row.k:sub(#self.prefix + 1), value = row.value } end
    return items
end

function Store:forget(key)
    self:db():delete("delete from " .. self.table .. " where " .. self:key_column() .. " = ?",
        { self.prefix .. key })
end

-- DatabaseLock::acquire: the lock's row inserted; when the key is taken (the insert
-- refused), the row updated only where owner holds it or it expired. It expires
-- after seconds, or a day when 0. Expired locks are swept 2 times in 100, as
-- Laravel's lottery. Returns whether owner holds it now.
function Store:acquire_lock(key, seconds, owner)
    local d, now = self:db(), host.now()
    local expires = now + (seconds > 0 and seconds or 86400)
    local name = self.prefix .. key
    local inserted, err = pcall(d.insert, d, "insert into " .. self.locks .. " (" .. self:key_column()
        .. ", owner, expiration) values (?, ?, ?)", { name, owner, expires })
    local acquired = inserted
    if not inserted then
        if db.lost_connection(err) then error(err, 0) end
        acquired = d:update("update " .. self.locks .. " set owner = ?, expiration = ? where "
            .. self:key_column() .. " = ? and (owner = ? or expiration <= ?)",
            { owner, expires, name, owner, now }) >= 1
    end
    if math.random(1, 100) <= 2 then
        d:delete("delete from " .. self.locks .. " where expiration <= ?", { now })
    end
    return acquired
end

-- DatabaseLock's release (while owner holds it) or forceRelease (owner nil).
function Store:release_lock(key, owner)
    local where = " where " .. self:key_column() .. " = ?"
    if owner then
        self:db():delete("delete from " .. self.locks .. where .. " and owner = ?",
            { self.prefix .. key, owner })
    else
        self:db():delete("delete from " .. self.locks .. where, { self.prefix .. key })
    end
end

return M
