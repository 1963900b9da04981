-- The chaos soak's use of the system (spec/chaos/driver.lua): its log, clocks and
-- sleeps, files, shell commands, processes.
local ptime = require "posix.time"
local psignal = require "posix.signal"

local M = {}

function M.log(fmt, ...)
    io.stderr:write(string.format("chaos %s " .. fmt .. "\n", os.date("%H:%M:%S"), ...))
    io.stderr:flush()
end

function M.clock()
    local t = ptime.clock_gettime(ptime.CLOCK_MONOTONIC)
    return t.tv_sec + t.tv_nsec / 1e9
end

function M.sleep(s)
    local sec = math.floor(s)
    ptime.nanosleep({ tv_sec = sec, tv_nsec = math.floor((s - sec) * 1e9) })
end

function M.quote(s)
    return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

function M.read_file(path)
    local f = io.open(path, "rb")
    if not f then return nil end
    local s = f:read("*a")
    f:close()
    return s
end

function M.write_file(path, text)
    local f = assert(io.open(path, "wb"))
    f:write(text)
    f:close()
end

function M.shell(cmd)
    local f = io.popen(cmd)
    local out = f:read("*a")
    f:close()
    return out
end

-- Whether process pid runs: a zombie does not (a daemonized redis-server's parent is
-- init, which may reap it a while after it died).
function M.alive(pid)
    if not (pid and psignal.kill(pid, 0) == 0) then return false end
    local stat = M.read_file("/proc/" .. pid .. "/stat")
    return not (stat and stat:match("^%d+ %b() Z"))
end

-- Polls fn every 50 ms until it returns a true value (returned) or timeout passes (nil).
function M.wait_for(fn, timeout)
    local deadline = M.clock() + timeout
    repeat
        local v = fn()
        if v then return v end
        M.sleep(0.05)
    until M.clock() > deadline
    return nil
end

return M
