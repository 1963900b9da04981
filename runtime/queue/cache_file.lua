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
local php_json = require "luaworker.php.json"

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

-- FileStore::expiration: the Unix second an item stored for seconds expires at
-- (0: for ever).
local function expiration(seconds)
    return seconds == 0 and FOREVER or math.min(FOREVER, host.now() + seconds)
end

function Store:put(key, serialized, seconds)
    write(self, key, serialized, expiration(seconds))
end

-- FileStore::add (8.15+): serialized stored for seconds (0: for ever) when the item
-- is not there or expired, the file flock'ed meanwhile (host.cache_add), so that of
-- two processes one adds it. Returns whether it was stored; raises naming the file.
function Store:add(key, serialized, seconds)
    local added, err = host.cache_add(self:path(key), expiration(seconds), serialized)
    if added == nil then error("file cache store: " .. err, 0) end
    return added
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

-- The item of the lock named key: 12.36+'s FileLock names it file-store-lock:<key>.
local function lock_key(key)
    return settings.laravel_at_least(12, 36) and "file-store-lock:" .. key or key
end

-- The file store's lock: CacheLock::acquire, the store's add when the lock
-- expires, else (no expiry) its get then forever, not atomic between processes, as
-- in Laravel; 12.36+ FileLock, file-store-lock:<key> and always the add. Returns
-- whether owner holds it now.
function Store:acquire_lock(key, seconds, owner)
    local serialized = php_json.string(owner)
    if settings.laravel_at_least(12, 36) or seconds > 0 then
        return self:add(lock_key(key), serialized, seconds)
    end
    if self:get(key) ~= nil then return false end
    self:forever(key, serialized)
    return true
end

-- CacheLock's release (while owner holds it: the item's value, serialized) or
-- forceRelease (owner nil).
function Store:release_lock(key, owner)
    key = lock_key(key)
    if owner and self:get(key) ~= php_json.string(owner) then return end
    self:forget(key)
end

return M
