-- App\Jobs\ReportMemory: as the PHP class, RPUSHes "<tag> <VmRSS kB> <VmHWM kB>"
-- of the process running the job (a worker, not the supervisor) onto
-- <prefix>bench:memory.
local luaworker = require "luaworker"

return {
    handle = function(job, command)
        local f = assert(io.open("/proc/self/status"))
        local status = f:read("*a")
        f:close()
        luaworker.redis("RPUSH", luaworker.prefix .. "bench:memory", string.format("%s %s %s",
            command.tag, status:match("VmRSS:%s*(%d+)") or 0, status:match("VmHWM:%s*(%d+)") or 0))
    end,
}
