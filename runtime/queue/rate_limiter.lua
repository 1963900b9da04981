-- luaworker.queue.rate_limiter: Laravel's Illuminate\Cache\RateLimiter over the app's
-- cache store (queue/cache.lua's numbers): a key's hits within its decay, with its
-- timer (<key>:timer, the Unix second the decay ends), as the RateLimited middleware
-- uses them. Keys are taken as given (Laravel cleans them with htmlentities, which
-- leaves the md5 names the middleware makes as they are).
local host = require "luaworker.host"
local cache = require "luaworker.queue.cache"

local M = {}

-- RateLimiter::tooManyAttempts: max hits or more while the timer lives; hits whose
-- timer is gone are forgotten.
function M.too_many_attempts(key, max)
    local store = cache.numbers()
    if (store.get(key) or 0) >= max then
        if store.get(key .. ":timer") ~= nil then return true end
        store.forget(key)
    end
    return false
end

-- RateLimiter::hit: one more hit of key, the timer started for decay seconds when
-- there is none. Returns the hits.
function M.hit(key, decay)
    local store = cache.numbers()
    store.add(key .. ":timer", host.now() + decay, decay)
    local added = store.add(key, 0, decay)
    local hits = tonumber(store.increment(key)) or 0
    if not added and hits == 1 then store.put(key, 1, decay) end
    return hits
end

-- RateLimiter::clear: key's hits and timer go.
function M.clear(key)
    local store = cache.numbers()
    store.forget(key)
    store.forget(key .. ":timer")
end

-- RateLimiter::availableIn: seconds until key's timer ends (0 when it is gone).
function M.available_in(key)
    return math.max(0, (cache.numbers().get(key .. ":timer") or 0) - host.now())
end

return M
