-- Released on its first attempt (no delay), succeeds on its second.
local luaworker = require "luaworker"

return {
    handle = function(job)
        if job:attempts() == 1 then
            job:release(0)
            return
        end
        luaworker.sleep(0)
    end,
}
