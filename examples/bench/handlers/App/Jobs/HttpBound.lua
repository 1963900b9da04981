-- App\Jobs\HttpBound: as the PHP class, fetches command.url (raising on a 4xx or
-- 5xx status, as ->throw() does), then INCRs <prefix>bench:http.
local luaworker = require "luaworker"

return {
    handle = function(_, command)
        local r = luaworker.http.get(command.url)
        if r.status >= 400 then error("HTTP " .. r.status .. " from " .. command.url) end
        luaworker.redis("INCR", luaworker.prefix .. "bench:http")
    end,
}
