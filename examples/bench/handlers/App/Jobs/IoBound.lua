-- App\Jobs\IoBound: as the PHP class, waits 50 ms, then INCRs <prefix>bench:io.
local luaworker = require "luaworker"

return {
    handle = function()
        luaworker.sleep(0.05)
        luaworker.redis("INCR", luaworker.prefix .. "bench:io")
    end,
}
