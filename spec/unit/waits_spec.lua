-- Specs for runtime/loop/waits.c: host.sleep, the wait under luaworker.sleep. Runs
-- inside the luaworker binary.
local host = require "luaworker.host"

describe("host.sleep", function()
    it("waits at least its seconds, however long Lua ran before it (the loop's cached "
        .. "time is as old as that)", function()
        local shortest = math.huge
        for _ = 1, 5 do
            local busy = host.clock()
            while host.clock() - busy < 0.03 do end
            local start = host.clock()
            host.sleep(0.05)
            shortest = math.min(shortest, host.clock() - start)
        end
        -- before, the timer counted from the loop's last look at the clock: 0.003 s here
        assert.is_true(shortest >= 0.05, string.format("slept %.4f s", shortest))
    end)
end)
