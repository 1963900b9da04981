-- Raises: with --tries=1 it fails for good at once, with more tries it is
-- released after the exception first; failed() runs at the end.
local luaworker = require "luaworker"

return {
    handle = function(job, command)
        error(luaworker.exception("RuntimeException", "job " .. tostring(command.n) .. " fails"))
    end,
    failed = function(job, command, err)
        luaworker.redis("INCR", luaworker.prefix .. "valgrind:failed")
    end,
}
