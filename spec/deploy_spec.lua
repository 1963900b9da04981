-- examples/deploy/: the systemd unit and the Supervisor program, each checked by
-- its own tool (systemd-analyze verify; a supervisord with a private config whose
-- stop lets the job in flight finish). A spec whose tool is not installed says so
-- and is pending.
local H = require "spec.helpers"

local DEPLOY = H.root .. "/examples/deploy"

-- The example's text with the installed binary's path replaced by the built one's.
local function example(name)
    local text = assert(H.read_file(DEPLOY .. "/" .. name))
    local binary = (H.root .. "/luaworker"):gsub("%%", "%%%%")
    return (text:gsub("/usr/local/bin/luaworker", binary))
end

describe("examples/deploy", function()
    before_each(function() H.flush() end)

    it("has a systemd unit that systemd-analyze verify takes without a word, which stops the supervisor only, after long enough", function()
        if not H.installed("systemd-analyze") then
            return pending("systemd-analyze is not installed (Debian's systemd): the unit is not checked")
        end
        local dir = H.tmpdir()
        local unit = example("luaworker.service")
        assert.matches("\nKillMode=mixed\n", unit)
        assert.matches("\nKillSignal=SIGTERM\n", unit)
        local stop = tonumber(unit:match("\nTimeoutStopSec=(%d+)\n"))
        local timeout = tonumber(unit:match("%-%-timeout=(%d+)"))
        assert.is_true(stop > timeout, "TimeoutStopSec must outlast a job's --timeout")
        H.write_file(dir .. "/luaworker.service", unit)
        local status, out = H.sh("cd " .. H.quote(dir) .. " && systemd-analyze verify ./luaworker.service")
        assert.are.same({ 0, "" }, { status, out })
        -- (the check can fail: a directive systemd does not know is said)
        H.write_file(dir .. "/luaworker.service", (unit:gsub("KillMode=mixed", "KillMode=mixd")))
        status, out = H.sh("cd " .. H.quote(dir) .. " && systemd-analyze verify ./luaworker.service")
        assert.matches("Failed to parse kill mode", out)
    end)

    it("has a Supervisor program whose stop lets the job in flight finish", function()
        if not H.installed("supervisord") then
            return pending("supervisord is not installed (Debian's supervisor): the program is not checked")
        end
        local dir = H.tmpdir()
        local handlers = H.handlers({ ["App/Jobs/Slow.lua"] = [[
local luaworker = require "luaworker"
return { handle = function(job)
    luaworker.redis("RPUSH", "spec:started", job:uuid())
    luaworker.sleep(2)
    luaworker.redis("RPUSH", "spec:finished", job:uuid())
end }
]] })
        -- the example as it is, but for the paths of this run (and no user: the
        -- spec's files are its own)
        local program = example("supervisor.conf")
            :gsub("\nuser=[^\n]*", "")
            :gsub("\ndirectory=[^\n]*", "\ndirectory=" .. dir)
            :gsub("\nstdout_logfile=[^\n]*", "\nstdout_logfile=" .. dir .. "/luaworker.log")
            :gsub("%-%-env%-file=%S+ ", "")
            :gsub("%-%-handlers=%S+", "--handlers=" .. handlers .. " --sleep=0.1")
        assert.matches("\nstopsignal=TERM\n", program)
        H.write_file(dir .. "/luaworker.conf", program)
        H.write_file(dir .. "/supervisord.conf", table.concat({
            "[unix_http_server]", "file=%(here)s/supervisor.sock",
            "[supervisord]", "logfile=%(here)s/supervisord.log", "pidfile=%(here)s/supervisord.pid",
            "childlogdir=%(here)s",
            "[rpcinterface:supervisor]",
            "supervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface",
            "[supervisorctl]", "serverurl=unix://%(here)s/supervisor.sock",
            "[include]", "files = luaworker.conf", "" }, "\n"))
        local conf = H.quote(dir .. "/supervisord.conf")
        local env = "env REDIS_HOST=127.0.0.1 REDIS_PORT=" .. H.port .. " "
        local status, out = H.sh(env .. "supervisord -c " .. conf)
        assert.are.equal(0, status, out)
        local ok, err = pcall(function()
            H.wait_until(function()
                return select(2, H.sh("supervisorctl -c " .. conf .. " status luaworker")):match("RUNNING")
            end, 15, "luaworker RUNNING under supervisord")
            local p = H.class_payload("App\\Jobs\\Slow")
            H.push(p)
            H.wait_until(function() return H.r("LLEN", "spec:started") == 1 end, 10, "the job's start")
            status, out = H.sh("supervisorctl -c " .. conf .. " stop luaworker")
            assert.matches("luaworker: stopped", out)
            -- the job in flight ran to its end, and was deleted
            assert.are.same({ p.uuid }, H.r("LRANGE", "spec:finished", 0, -1))
            local list, _, reserved = H.keys()
            assert.are.same({ 0, 0 }, { H.r("LLEN", list), H.r("ZCARD", reserved) })
            local log = H.read_file(dir .. "/luaworker.log") or ""
            assert.is_nil(log:find("killed", 1, true), log)
        end)
        H.sh("supervisorctl -c " .. conf .. " shutdown")
        assert(ok, err)
    end)
end)
