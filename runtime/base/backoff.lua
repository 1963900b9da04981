-- luaworker.base.backoff: the one backoff of the Lua side, for every wait that tries
-- again (a Redis or database outage, a busy SQLite file, the worker loop's errors):
-- delays that double from first up to max.
local M = {}

local Backoff = {}
Backoff.__index = Backoff

-- A backoff whose first delay is first (seconds), doubling up to max.
function M.new(first, max)
    return setmetatable({ first = first, max = max, delay = first }, Backoff)
end

-- The delay to wait now; the next is twice as long, up to max.
function Backoff:next()
    local delay = self.delay
    self.delay = math.min(delay * 2, self.max)
    return delay
end

-- After a success: the next delay is the first again.
function Backoff:reset()
    self.delay = self.first
end

return M
