-- The chaos soak's trail (spec/chaos/driver.lua): after every attempt, once its
-- outcome (delete, release or fail) is in Redis, "e <uuid> <attempt> <pid> <outcome>
-- <1 when the handler raised, else 0>" on chaos:trail. A run whose "s" entry
-- (Chaos.lua) has no "e" entry was cut short: its process was killed, or Redis went
-- away under it.
local luaworker = require "luaworker"
local pid = require "pid"
local keys = require "keys"

luaworker.attempted(function(event)
    local job = event.job
    local outcome = job:has_failed() and "failed" or job:is_released() and "released"
        or job:is_deleted() and "deleted" or "none"
    luaworker.redis("RPUSH", keys(job) .. "trail", string.format("e %s %d %s %s %d",
        job:uuid(), job:attempts(), pid, outcome, event.exception_occurred and 1 or 0))
end)
