-- App\Jobs\Timed: as the PHP class, reads Redis TIME first thing and RPUSHes
-- "<tag> <pushedAt> <dueAt> <startedAt>" (microseconds; dueAt in seconds or "-")
-- onto <prefix>bench:timed.
local luaworker = require "luaworker"

return {
    handle = function(job, command)
        local t = luaworker.redis("TIME")
        local started = tonumber(t[1]) * 1000000 + tonumber(t[2])
        local due = command.dueAt
        due = (due == nil or due == luaworker.null) and "-" or string.format("%.0f", due)
        luaworker.redis("RPUSH", luaworker.prefix .. "bench:timed",
            string.format("%s %.0f %s %.0f", command.tag, command.pushedAt, due, started))
    end,
}
