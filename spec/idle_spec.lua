-- `luaworker work` when there is no job, and when it stops: --once, the restart key
-- and stop signals, the idle wait on the notify lists and the delayed sets, and the
-- Redis calls an idle worker makes.
local H = require "spec.helpers"
local cjson = H.json
local recorder = require "spec.recorder"
local RECORDER, spec_job, ran = recorder.HANDLER, recorder.spec_job, recorder.ran

local handlers

describe("luaworker work, idle and stopping", function()
    before_each(function()
        H.flush()
        handlers = H.handlers({ ["App/Jobs/Spec.lua"] = RECORDER })
    end)

    it("runs one job with --once, in its own process", function()
        for i = 1, 2 do H.push(spec_job("ok", { id = "j" .. i })) end
        assert.are.equal(0, H.run({ "work", "--handlers=" .. handlers, "--sleep=0.05", "--once" }).status)
        assert.are.equal(1, #ran())
    end)

    it("exits 0 when the restart key changes, and on TERM", function()
        local w = H.spawn({ "work", "--handlers=" .. handlers, "--sleep=0.05" })
        H.push(spec_job("ok"))
        H.wait_until(function() return #ran() == 1 end, 10, "the job to run")
        H.rdb(1, "SET", H.cache_prefix .. "illuminate:queue:restart", tostring(os.time()))
        assert.are.equal(0, w:wait(10))

        local w2 = H.spawn({ "work", "--handlers=" .. handlers, "--sleep=5" })
        H.sleep(0.3)
        w2:kill("TERM")
        assert.are.equal(0, w2:wait(3))
    end)

    it("does not wait for a job after a TERM that came before the wait", function()
        -- the first Looping event TERMs the worker itself: the signal is handled at its
        -- next Redis call, before it finds the queue empty and would wait --sleep
        H.write_file(handlers .. "/init.lua", [[
            local luaworker = require "luaworker"
            local sent = false
            luaworker.looping(function()
                if sent then return end
                sent = true
                local pid = io.open("/proc/self/stat"):read("*l"):match("^(%d+)")
                os.execute("kill -TERM " .. pid)
            end)
        ]])
        -- --heartbeat=30: the wait would end for the next look for dead workers after 15 s
        local socket = require "socket"
        local started = socket.gettime()
        local w = H.spawn({ "work", "--handlers=" .. handlers, "--sleep=20", "--heartbeat=30" })
        assert.are.equal(0, w:wait(25))
        local took = socket.gettime() - started
        assert.is_true(took < 4, "the worker took " .. took .. " s to stop")
    end)

    it("blocks on the first queue's notify list with --block-for and wakes on a push", function()
        local w = H.spawn({ "work", "--handlers=" .. handlers, "--sleep=0", "--block-for=5" })
        H.sleep(0.3)
        H.push(spec_job("ok"))
        H.wait_until(function() return #ran() == 1 end, 3, "the blocked worker to take the job")
        w:stop()
    end)

    it("waits on the notify list when idle: a push wakes it long before --sleep, TERM ends the wait", function()
        local w = H.spawn({ "work", "--handlers=" .. handlers, "--sleep=30" })
        H.sleep(0.5)
        H.push(spec_job("ok"))
        H.wait_until(function() return #ran() == 1 end, 3, "the idle worker to take the job")
        H.sleep(0.3)
        w:kill("TERM")
        assert.are.equal(0, w:wait(3))
    end)

    it("starts a delayed job within a second of its due second while idle", function()
        local w = H.spawn({ "work", "--handlers=" .. handlers, "--sleep=30" })
        H.sleep(0.5)
        local due = tonumber(H.r("TIME")[1]) + 2
        local _, delayed = H.keys()
        H.r("ZADD", delayed, due, cjson.encode(spec_job("ok")))
        H.wait_until(function() return #ran() == 1 end, 5, "the delayed job")
        local late = ran()[1].at - due
        assert.is_true(late >= 0 and late < 1, "started " .. late .. " s after its due second")
        w:stop()
    end)

    it("says once that Redis refuses to report delayed-set changes, and works on", function()
        H.r("ACL", "SETUSER", "spec-nochannels", "on", ">pass", "~*", "+@all", "resetchannels")
        local w = H.spawn({ "work", "--handlers=" .. handlers, "--sleep=0.2" },
            { env = { REDIS_USERNAME = "spec-nochannels", REDIS_PASSWORD = "pass" } })
        H.sleep(1)
        H.push(spec_job("ok"))
        H.wait_until(function() return #ran() == 1 end, 5, "the job")
        w:stop()
        H.r("ACL", "DELUSER", "spec-nochannels")
        local _, lines = w:stderr():gsub("Redis cannot report changes of the delayed sets %(SUBSCRIBE: NOPERM", "")
        assert.are.equal(1, lines)
    end)

    it("wakes at most 20 times a second for changes of the delayed sets", function()
        local w = H.spawn({ "work", "--handlers=" .. handlers })
        H.sleep(0.5)
        local _, delayed = H.keys()
        H.r("CONFIG", "RESETSTAT")
        local t0 = H.r("TIME")
        for i = 1, 400 do
            H.r("ZADD", delayed, tonumber(t0[1]) + 3600, "far-" .. i)
            H.sleep(0.005)
        end
        local t1 = H.r("TIME")
        local stats = H.r("INFO", "commandstats")
        w:stop()
        local seconds = (t1[1] - t0[1]) + (t1[2] - t0[2]) / 1e6
        local evalsha = tonumber(stats:match("cmdstat_evalsha:calls=(%d+)") or "0")
        -- each wake: a pop and a look at the delayed sets (plus moving due jobs once a second)
        assert.is_true(evalsha <= seconds * (20 * 2 + 2) + 10,
            evalsha .. " script calls in " .. seconds .. " s of 400 changes")
    end)

    it("makes a few Redis calls a second while idle at the defaults", function()
        local w = H.spawn({ "work", "--handlers=" .. handlers })
        H.sleep(0.5)
        H.r("CONFIG", "RESETSTAT")
        H.sleep(3.5)
        local calls = 0
        for n in H.r("INFO", "commandstats"):gmatch("calls=(%d+)") do calls = calls + tonumber(n) end
        w:stop()
        assert.is_true(calls <= 25, calls .. " calls in 3.5 s")
    end)
end)
