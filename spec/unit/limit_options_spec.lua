-- Specs for the whole-number options of luaworker.throttle / luaworker.funnel and of
-- Laravel's middleware builders (runtime/base/values.lua's whole), and their error
-- tests (delete_when, fail_when): a bad one raises naming the function, the option
-- and what was expected, at the handler's line.
-- Runs inside the luaworker binary.
local luaworker = require "luaworker"
local middleware = luaworker.middleware

local function raised(fn)
    local ok, err = pcall(fn)
    assert.is_false(ok)
    return err
end

describe("the whole-number options of the limits", function()
    it("name the function, the option and the range, at the caller's line", function()
        local here = debug.getinfo(1, "S").short_src
        local cases = {
            { raised(function() luaworker.throttle("x", { allow = 1.5 }, function() end) end),
                "luaworker.throttle: allow = 1.5: expected a whole number from 1" },
            { raised(function() luaworker.funnel("x", { limit = 2, block = -1 }, function() end) end),
                "luaworker.funnel: block = -1: expected a whole number from 0" },
            { raised(function() middleware.without_overlapping("k", { release_after = -1 }) end),
                "without_overlapping: release_after = -1: expected a whole number from 0" },
            { raised(function() middleware.rate_limited("p", { max = "3" }) end),
                "rate_limited: limit 1: max = 3: expected a whole number from 0" },
            { raised(function() middleware.throttles_exceptions(0) end),
                "throttles_exceptions: max = 0: expected a whole number from 1" },
            { raised(function() middleware.throttles_exceptions(3, 60, { delete_when = { "A", 7 } }) end),
                "throttles_exceptions: delete_when: expected a function(err), an exception class, or a list of them" },
            { raised(function() middleware.throttles_exceptions_with_redis(3, 60, { fail_when = {} }) end),
                "throttles_exceptions_with_redis: fail_when: expected a function(err), an exception class, or a "
                    .. "list of them" },
        }
        for _, c in ipairs(cases) do
            assert.are.equal(here, c[1]:match("^(.-):%d+: "), c[1])
            assert.are.equal(c[2], (c[1]:gsub("^.-:%d+: ", "")))
        end
    end)
end)
