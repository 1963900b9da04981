-- Specs for runtime/base/backoff.lua, the one backoff of the Lua side (Redis and
-- database outages, a busy SQLite file, the worker loop's errors). Runs inside the
-- luaworker binary.
local backoff = require "luaworker.base.backoff"

describe("luaworker.base.backoff", function()
    it("doubles its delay from the first up to the most", function()
        local b = backoff.new(0.1, 1)
        local got = {}
        for i = 1, 7 do got[i] = b:next() end
        assert.are.same({ 0.1, 0.2, 0.4, 0.8, 1, 1, 1 }, got)
    end)

    it("starts again from the first after reset", function()
        local b = backoff.new(1, 16)
        b:next(); b:next(); b:next()
        b:reset()
        assert.are.equal(1, b:next())
        assert.are.equal(2, b:next())
    end)

    it("keeps each backoff's delays its own", function()
        local a, b = backoff.new(1, 30), backoff.new(1, 30)
        a:next(); a:next()
        assert.are.equal(1, b:next())
        assert.are.equal(4, a:next())
    end)
end)
