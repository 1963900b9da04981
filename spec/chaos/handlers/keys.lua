-- The prefix of the chaos soak's bookkeeping keys for a job: chaos:, or, when the
-- job's queue is named with a hash tag ({default} on a Redis Cluster),
-- chaos:{default}: so that they live in the queue's slot, with the queue's keys
-- (spec/chaos/cluster.lua says why).
local luaworker = require "luaworker"

return function(job)
    local tag = job:queue():match("{[^}]+}")
    return luaworker.prefix .. "chaos:" .. (tag and tag .. ":" or "")
end
