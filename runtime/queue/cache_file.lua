-- luaworker.queue.cache_file: Laravel's file cache store (Illuminate\Cache\FileStore,
-- CACHE_STORE / CACHE_DRIVER "file", Laravel 8's default), for the keys the queue
-- keeps in the cache (queue/cache.lua). An item is the file
-- <app>/storage/framework/cache/data/<h[1,2]>/<h[3,4]>/<h> where h is the key's SHA-1
-- (no prefix: FileStore has none): the Unix second it expires at, as 10 digits
-- (9999999999 for ever), then the PHP-serialized value. A file is replaced whole.
-- Locks (CacheLock, 12.36+ FileLock named "file-store-lock:<name>") are items whose
-- value is the owner.
local host = require "luaworker.host"
local settings = require "luaworker.base.settings"

local M = {}

local FOREVER = 9999999999

local Store = {}
Store.__index = Store

-- The store in the app's storage (the directory of --env-file), or in dir. Raises
-- when the app is unknown.
function M.new(dir)
    if not dir then
        local app = settings.app_dir()
        if not app then
            error("the file cache store (CACHE_STORE/CACHE_DRIVER=file) is in the app's storage, "
                .. "found beside --env-file: give --env-file", 0)
        end
        dir = app .. "/storage/framework/cache/data"
    end
    return setmetatable({ dir = dir }, Store)
end

function Store:path(key)
    local hash = host.sha1(key)
    return self.dir .. "/" .. hash:sub(1, 2) .. "/" .. hash:sub(3, 4) .. "/" .. hash
end

-- The file's expiration and serialized value, or nil when it is missing or expired
-- (then deleted, as FileStore does).
local function payload(self, key)
    local path = self:path(key)
    local f = io.open(path, "rb")
    if not f then return nil end
    local content = f:read("*a")
    f:close()
    local expires = tonumber(content:sub(1, 10))
    if not expires or host.now() >= expires then
        os.remove(path)
        return nil
    end
    return expires, content:sub(11)
end

function Store:get(key)
    return select(2, payload(self, key))
end

-- Writes serialized under key until expires (a Unix second). Raises with the path.
local function write(self, key, serialized, expires)
    local ok, err = host.write_file(self:path(key), string.format("%010d", expires) .. serialized)
    if not ok then error("file cache store: " .. err, 0) end
end

function Store:put(key, serialized, seconds)
    write(self, key, serialized, seconds == 0 and FOREVER or math.min(FOREVER, host.now() + seconds))
end

-- Repository::add over Laravel 8's FileStore (it has no add): serialized put for
-- seconds when the item is not there. Not atomic between processes, as Laravel's
-- is not. Returns whether it was stored.
function Store:add(key, serialized, seconds)
    if self:get(key) ~= nil then return false end
    self:put(key, serialized, seconds)
    return true
end

function Store:forever(key, serialized)
    write(self, key, serialized, FOREVER)
end

-- FileStore::increment: the integer value plus one, written back with the time it
-- had left. Returns the new value (a missing item counts from 0, as PHP's (int)).
function Store:increment(key)
    local expires, value = payload(self, key)
    local n = (tonumber((value or ""):match("^i:(%-?%d+);$")) or 0) + 1
    write(self, key, string.format("i:%d;", n), expires or FOREVER)
    return n
end

function Store:forget(key)
    os.remove(self:path(key))
end

-- CacheLock::acquire as on Laravel 8's FileStore (no add): when the item is not
-- there, owner is put for seconds (for ever when 0). Not atomic between processes,
-- as Laravel's is not. Returns whether owner holds it now.
function Store:acquire_lock(key, seconds, owner)
    if settings.laravel_at_least(12, 36) then key = "file-store-lock:" .. key end
    if self:get(key) ~= nil then return false end
    local serialized = string.format('s:%d:"%s";', #owner, owner)
    if seconds > 0 then self:put(key, serialized, seconds) else self:forever(key, serialized) end
    return true
end

-- CacheLock's release (while owner holds it: the item's value, serialized) or
-- forceRelease (owner nil).
function Store:release_lock(key, owner)
    if settings.laravel_at_least(12, 36) then key = "file-store-lock:" .. key end
    if owner and self:get(key) ~= string.format('s:%d:"%s";', #owner, owner) then return end
    self:forget(key)
end

return M
