-- The worker process's id (each worker is its own exec of luaworker, so this module
-- is loaded once per process).
local f = assert(io.open("/proc/self/stat", "rb"))
local pid = f:read("*l"):match("^(%d+)")
f:close()
return pid
