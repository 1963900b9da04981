-- make valgrind: hooks on every event, so their paths run under memcheck too.
local luaworker = require "luaworker"

luaworker.after(function(event) return event.job:id() end)
luaworker.failing(function(event) return tostring(event.exception) end)
luaworker.exception_occurred(function(event) return event.job:attempts() end)
