-- The short chaos soak (spec/chaos_soak.lua) with the workers reaching Redis over TLS
-- and over its unix socket, and on a Redis Cluster whose Redis restarts are failovers
-- of the queue's master: kills, group kills, supervisor and Redis restarts through
-- the new transports lose no job and run none again but for a kill, a restart or a
-- change a failover lost.
local soak = require "spec.chaos_soak"

describe("the chaos soak (short run) on other transports", function()
    it("holds with every worker connection over TLS, 8 jobs in flight in each process", function()
        soak.check(assert, 8, 40, "tls")
    end)

    it("holds with every worker connection on Redis' unix socket", function()
        soak.check(assert, 1, 8, "unix")
    end)

    -- the replica is cut off half a second before each kill: the failover loses writes
    -- the master acknowledged, as an asynchronous replica's may
    it("holds on a Redis Cluster (3 masters, 3 replicas) whose queue's master is killed and replaced by its replica",
        function() soak.check(assert, 1, 8, "cluster", 0.5) end)
end)
