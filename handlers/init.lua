-- Runs once when the worker starts: register hooks and shared set-up here.
-- Hooks take an event table: connection_name, job, exception (where Laravel has one).
local luaworker = require "luaworker"

luaworker.failing(function(event)
    io.stderr:write(string.format("  %s failed for good: %s\n", event.job:name(),
        tostring(event.exception)))
end)
