-- `luaworker work`'s supervisor when workers die: the job a worker ran when it
-- crashed gets Laravel's rules at once, a worker that dies again and again is
-- started after a growing delay, a pause outlives the workers it paused, and
-- --processes has a bound.
local H = require "spec.helpers"

local job = H.class_payload

local RECORD = H.RECORD_ID

local workers

-- For workers that crash on purpose: a sanitizer build would catch the segfault
-- itself and report leaks at os.exit, changing how the process ends.
local CRASHING = { ASAN_OPTIONS = "detect_leaks=0:handle_segv=0:handle_abort=0",
    UBSAN_OPTIONS = "handle_segv=0:handle_abort=0" }

local function start(files, args)
    local full = { "work", "--handlers=" .. H.handlers(files), "--sleep=0.05", "--no-watch" }
    for _, a in ipairs(args or {}) do full[#full + 1] = a end
    local w = H.spawn(full, { env = CRASHING })
    workers[#workers + 1] = w
    return w
end

describe("luaworker work's supervisor when workers die", function()
    before_each(function()
        H.flush()
        workers = {}
    end)

    after_each(function()
        for _, w in ipairs(workers) do w:stop() end
    end)

    for _, case in ipairs({
        { "a segfault", "local ffi = require 'ffi'; ffi.cast('int *', 1)[0] = 1",
            "killed by signal 11 %(Segmentation fault%)" },
        { "an abort", "local ffi = require 'ffi'; ffi.cdef 'void abort(void);'; ffi.C.abort()",
            "killed by signal 6 %(Aborted%)" },
        { "os.exit(9)", "os.exit(9)", "exited with status 9" },
        { "os.exit(0)", "os.exit(0)", "exited with status 0" },
    }) do
        it("fails at once the job on its last attempt whose handler ends the worker with " .. case[1], function()
            local p, good = job("App\\Jobs\\Crash"), job("App\\Jobs\\Good")
            H.push(p)
            H.push(good)
            local w = start({ ["App/Jobs/Crash.lua"] = "return { handle = function() " .. case[2] .. " end }\n",
                ["App/Jobs/Good.lua"] = RECORD }, { "--tries=1", "--retry-after=60", "--stop-when-empty" })
            assert.are.equal(0, w:wait(20))
            local record = H.failed_record(p.uuid)
            assert.is_not_nil(record.payload, w:stderr())
            assert.matches("MaxAttemptsExceededException", record.exception)
            local _, _, reserved = H.keys()
            assert.are.equal(0, H.r("ZCARD", reserved))
            assert.are.same({ good.id }, H.r("LRANGE", "spec:ran", 0, -1))
            assert.matches("%[" .. p.id .. "%] App\\Jobs\\Crash %(attempt 1%) was running when its worker "
                .. "died %(" .. case[3] .. "%); its last attempt: failed", w:stderr())
            if case[1] == "os.exit(0)" then
                assert.matches("exited with status 0 without saying why it stopped", w:stderr(), 1, true)
            end
        end)
    end

    it("puts back the job with attempts left whose handler crashed its worker, its attempt counted, until its last fails it", function()
        local p = job("App\\Jobs\\Crash", { maxTries = 2 })
        H.push(p)
        local w = start({ ["App/Jobs/Crash.lua"] = "return { handle = function() os.exit(3) end }\n" },
            { "--retry-after=60" })
        H.wait_until(function() return H.r("ZCARD", "laravel_database_luaworker:failed_jobs") == 1 end, 20,
            "the job's second attempt to fail it")
        local _, _, reserved = H.keys()
        assert.are.equal(0, H.r("ZCARD", reserved))
        assert.matches("%(attempt 1%) was running when its worker died %(exited with status 3%); it goes "
            .. "back to its queue with the attempt counted", w:stderr())
        assert.matches("%(attempt 2%) was running when its worker died %(exited with status 3%); its "
            .. "last attempt: failed", w:stderr())
        assert.matches("^Illuminate\\Queue\\MaxAttemptsExceededException",
            H.failed_record(p.uuid).exception)
    end)

    it("starts a worker that keeps dying after it was ready after a growing delay", function()
        local w = start({ ["init.lua"] = "require('luaworker').looping(function() os.exit(9) end)\n" })
        H.sleep(3.5)
        w:kill("TERM")
        assert.are.equal(0, w:wait(10))
        local deaths = select(2, w:stderr():gsub("exited with status 9", ""))
        -- at once, then after 1 s and 2 s: 3 or 4 deaths in 3.5 s (182 without a delay)
        assert.is_true(deaths >= 2 and deaths <= 4, w:stderr())
        assert.matches("after its start, again; starting it again in 1s", w:stderr(), 1, true)
        assert.matches("after its start, again; starting it again in 2s", w:stderr(), 1, true)
    end)

    it("replaces at once a worker killed by SIGKILL, however often", function()
        local w = start({ ["App/Jobs/Good.lua"] = RECORD })
        for i = 1, 3 do
            -- killed once it works (a worker killed before it is ready failed to start)
            H.push(job("App\\Jobs\\Good"))
            H.wait_until(function() return H.r("LLEN", "spec:ran") == i end, 10, "a job in the worker")
            local pid = H.children(w.pid)[1]
            os.execute("kill -9 " .. pid)
            H.wait_until(function()
                local now = H.children(w.pid)[1]
                return now and now ~= pid
            end, 1, "its successor within a second")
        end
        assert.is_nil(w:stderr():find("starting it again in", 1, true), w:stderr())
        w:kill("TERM")
        assert.are.equal(0, w:wait(10))
    end)

    it("keeps a pause (USR2) for the workers it starts after, until CONT", function()
        local w = start({ ["App/Jobs/Good.lua"] = RECORD }, { "--processes=2" })
        H.wait_until(function() return #H.children(w.pid) == 2 end, 5, "two workers")
        H.sleep(0.5)
        w:kill("USR2")
        H.sleep(0.2)
        -- a reload, and a pause and reloads in quick succession: no worker may die of them
        w:kill("HUP")
        w:kill("USR2")
        w:kill("HUP")
        w:kill("HUP")
        H.sleep(1.5)
        for _ = 1, 3 do H.push(job("App\\Jobs\\Good")) end
        H.sleep(1)
        assert.are.equal(0, H.r("LLEN", "spec:ran"))
        w:kill("CONT")
        H.wait_until(function() return H.r("LLEN", "spec:ran") == 3 end, 5, "the jobs after CONT")
        assert.is_nil(w:stderr():find("killed by signal", 1, true), w:stderr())
        w:kill("TERM")
        assert.are.equal(0, w:wait(10))
    end)

    it("refuses --processes past its bound with exit 2, naming it", function()
        local r = H.run({ "work", "--processes=513" })
        assert.are.equal(2, r.status)
        assert.matches("--processes=513: expected a whole number of processes from 1 to 512", r.stderr, 1, true)
    end)
end)
