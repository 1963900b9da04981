-- The chaos soak, short (spec/chaos/driver.lua; `make chaos` runs it long): a few
-- thousand jobs dispatched by the Laravel 8 app run through `luaworker work
-- --processes=3` while workers are kill -9'd, the supervisor's whole process group is
-- kill -9'd and started again, the supervisor is stopped with TERM and started again,
-- and the driver's own redis-server is restarted.
local soak = require "spec.chaos_soak"

describe("the chaos soak (short run)", function()
    it("loses no job, charges no attempt a job did not run, fails only the failing ones, runs a job again only for a kill or a Redis restart, drains",
        function() soak.check(assert, 1, 8) end)

    -- jobs that wait longer, so that the kills find several in flight
    it("does the same with 8 jobs in flight in each worker process", function() soak.check(assert, 8, 40) end)
end)
