-- Specs for runtime/loop/system.c's wall clocks: host.now and host.microtime read
-- one clock, as PHP's time() and microtime(true) do. Runs inside the luaworker binary.
local host = require "luaworker.host"

describe("host.now", function()
    it("is never behind the second of a host.microtime() read before it, across a second's start", function()
        -- (time(NULL) reads a coarse copy of the clock, a tick behind at each second's
        -- start: a DurationLimiter acquire then saw its window as over and began another)
        local behind, calls = 0, 0
        local started = host.microtime()
        while host.microtime() - started < 1.1 do
            local t = host.microtime()
            -- (a microtime in the last 0.2 us of a second may round up to the next as a double)
            if host.now() < math.floor(t - 1e-6) then behind = behind + 1 end
            calls = calls + 1
        end
        assert.are.equal(0, behind, behind .. " of " .. calls .. " reads")
    end)
end)

describe("a handler's os.time", function()
    it("is host.now(), never behind a host.microtime() read before it; os.time(t) is Lua's", function()
        local path = os.tmpname()
        local f = assert(io.open(path, "w"))
        f:write("return os.time")
        f:close()
        local handler_time = assert(require("luaworker.worker.handler_env").loadfile(path))()
        os.remove(path)
        local behind = 0
        local started = host.microtime()
        while host.microtime() - started < 1.1 do
            local t = host.microtime()
            if handler_time() < math.floor(t - 1e-6) then behind = behind + 1 end
        end
        assert.are.equal(0, behind)
        assert.are.equal(os.time({ year = 2026, month = 11, day = 29, hour = 12 }),
            handler_time({ year = 2026, month = 11, day = 29, hour = 12 }))
    end)
end)
