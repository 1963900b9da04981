-- `luaworker work` as a supervisor of worker processes: replacing workers that end,
-- recycling them (--memory, --max-jobs, --max-time, HUP), ending a job that runs
-- past its timeout with its process, and stopping gracefully.
local H = require "spec.helpers"
local cjson = H.json

-- Records each run as {id, attempts, client}: client is the Redis client id of the
-- worker process's connection, so a different process shows a different id. The
-- command's action: "spin" loops forever (CPU-bound, past any timeout), "crunch"
-- keeps the CPU until the file spec:crunch names is there (10 s at most), "slow"
-- waits spec:slow seconds.
local HANDLER = [[
local luaworker = require "luaworker"
local hoard = {}
return {
    handle = function(job, command)
        luaworker.redis("RPUSH", "spec:ran", luaworker.json.encode({ id = job:id(),
            attempts = job:attempts(), client = luaworker.redis("CLIENT", "ID") }))
        if command.action == "spin" then
            local n = 0
            while true do n = n + 1 end
        elseif command.action == "crunch" then
            local file, stop = luaworker.redis("GET", "spec:crunch"), os.clock() + 10
            repeat
                local f = io.open(file)
                if f then f:close() end
            until f or os.clock() > stop
        elseif command.action == "hog" then
            for _ = 1, 60 do
                hoard[#hoard + 1] = string.rep("x", 1048568) .. string.format("%08d", #hoard)
            end
        elseif command.action == "stop" then
            -- TERM to the supervisor (this process's parent), then a wait that the TERM
            -- it forwards to this worker ends
            local stat = io.open("/proc/self/stat"):read("*a")
            os.execute("kill -TERM " .. stat:match("^%d+ %b() %S+ (%d+)"))
            luaworker.sleep(10)
        elseif command.action == "slow" then
            luaworker.sleep(tonumber(luaworker.redis("GET", "spec:slow")) or 1)
            luaworker.redis("RPUSH", "spec:finished", job:id())
        end
    end,
    failed = function(job, command, err)
        luaworker.redis("RPUSH", "spec:failed", tostring(err))
    end,
}
]]

local INIT = [[
local luaworker = require "luaworker"
luaworker.failing(function(e) luaworker.redis("RPUSH", "spec:failing", e.job:id()) end)
luaworker.timed_out(function(e) luaworker.redis("RPUSH", "spec:timed_out", e.job:id()) end)
]]

local function spec_job(action, fields)
    fields = fields or {}
    fields.data = { commandName = "App\\Jobs\\Spec", command = string.format(
        'O:13:"App\\Jobs\\Spec":1:{s:6:"action";s:%d:"%s";}', #action, action) }
    return H.payload(fields)
end

local function ran() return H.json_list("spec:ran") end

local function clients()
    local set, n = {}, 0
    for _, r in ipairs(ran()) do
        if not set[r.client] then set[r.client] = true; n = n + 1 end
    end
    return n
end

local handlers, workers

local function start(args)
    local full = { "work", "--handlers=" .. handlers, "--sleep=0.05" }
    for _, a in ipairs(args or {}) do full[#full + 1] = a end
    local w = H.spawn(full)
    workers[#workers + 1] = w
    return w
end

-- A handler of App\Jobs\Spec whose runs push v onto spec:versions.
local function version(v)
    return string.format([[
        local luaworker = require "luaworker"
        return { handle = function() luaworker.redis("RPUSH", "spec:versions", %q) end }
    ]], v)
end

-- The worker processes a supervisor runs.
local function children(w)
    return H.children(w.pid)
end

describe("luaworker work's supervisor", function()
    before_each(function()
        H.flush()
        handlers = H.handlers({ ["App/Jobs/Spec.lua"] = HANDLER, ["init.lua"] = INIT })
        workers = {}
    end)

    after_each(function()
        for _, w in ipairs(workers) do w:stop() end
    end)

    it("runs --processes workers, which all take jobs", function()
        H.r("SET", "spec:slow", "0.3")
        local w = start({ "--processes=2" })
        H.wait_until(function() return #children(w) == 2 end, 5, "two workers")
        for i = 1, 4 do H.push(spec_job("slow", { id = "j" .. i })) end
        H.wait_until(function() return H.r("LLEN", "spec:finished") == 4 end, 10, "the jobs")
        assert.are.equal(2, clients())
        w:kill("TERM")
        assert.are.equal(0, w:wait())
    end)

    it("replaces a worker killed mid-job; the job goes back at once, long before retry_after, and runs again", function()
        H.r("SET", "spec:slow", "30")
        local w = start({ "--retry-after=60", "--timeout=0", "--tries=3" })
        local p = spec_job("slow")
        H.push(p)
        H.wait_until(function() return #ran() == 1 end, 5, "the job to start")
        local first = children(w)[1]
        os.execute("kill -9 " .. first)
        -- its successor takes it again at once
        H.r("SET", "spec:slow", "0")
        H.wait_until(function()
            local pids = children(w)
            return #pids == 1 and pids[1] ~= first
        end, 5, "a fresh worker")
        H.wait_until(function() return H.r("LLEN", "spec:finished") == 1 end, 10, "the job's second run")
        local runs = ran()
        assert.are.same({ 1, 2 }, { runs[1].attempts, runs[2].attempts })
        assert.are_not.equal(runs[1].client, runs[2].client)
        assert.matches("worker 1 %(pid " .. first .. "%) was killed by signal 9", w:stderr())
        -- its successor names the job it had started
        assert.matches("%[" .. p.id .. "%] App\\Jobs\\Spec %(attempt 1%) was running when its worker "
            .. "died %(killed by signal 9 %(Killed%)%); it goes back to its queue with the attempt "
            .. "counted", w:stderr())
        w:kill("TERM")
        assert.are.equal(0, w:wait())
    end)

    it("ends a job running past its timeout with its process, and fails it when failOnTimeout is set", function()
        local w = start()
        local spinning = spec_job("spin", { timeout = 1, failOnTimeout = true, maxTries = 5 })
        H.push(spinning)
        H.push(spec_job("ok"))
        H.wait_until(function() return H.r("LLEN", "spec:failing") == 1 end, 5, "the timed-out job to fail")
        local record = H.failed_record(spinning.uuid)
        assert.are.equal("Illuminate\\Queue\\MaxAttemptsExceededException: App\\Jobs\\Spec has been "
            .. "attempted too many times or run too long. The job may have previously timed out.",
            record.exception)
        assert.matches("MaxAttemptsExceededException", H.r("LRANGE", "spec:failed", 0, -1)[1])
        -- JobTimedOut comes after the failure is recorded, as Laravel's timeout handler
        -- fires it: its hook may not have run yet
        H.wait_until(function() return H.r("LLEN", "spec:timed_out") > 0 end, 5, "the timed_out hook")
        assert.are.same({ spinning.id }, H.r("LRANGE", "spec:timed_out", 0, -1))
        -- the fresh process goes on with the queue
        H.wait_until(function() return #ran() == 2 end, 5, "the next job")
        local _, _, reserved = H.keys()
        H.wait_until(function() return H.r("ZCARD", reserved) == 0 end, 5, "no reservation left")
        assert.matches("job timed out after 1s; ending the process", w:stderr())
        w:kill("TERM")
        assert.are.equal(0, w:wait())
    end)

    it("puts a timed-out job with attempts left back on its queue at once, its attempt counted, long before retry_after", function()
        local w = start({ "--retry-after=60" })
        local p = spec_job("spin", { timeout = 1, maxTries = 3 })
        H.push(p)
        H.wait_until(function() return #ran() == 2 end, 10, "the job's second attempt")
        local runs = ran()
        assert.are.same({ 1, 2 }, { runs[1].attempts, runs[2].attempts })
        assert.are.equal(0, H.r("EXISTS", H.prefix .. "luaworker:failed_jobs:" .. p.uuid))
        assert.matches("ran past its timeout of 1s; its process was ended, and it goes back to its queue "
            .. "with the attempt counted", w:stderr())
    end)

    it("fails a timed-out job on its last attempt, as --tries decides", function()
        local w = start({ "--tries=1" })
        local p = spec_job("spin", { timeout = 1 })
        H.push(p)
        H.wait_until(function() return H.r("LLEN", "spec:failing") == 1 end, 5, "the job to fail")
        assert.matches("^Illuminate\\Queue\\MaxAttemptsExceededException", H.failed_record(p.uuid).exception)
        w:kill("TERM")
        assert.are.equal(0, w:wait())
    end)

    it("reserves fast jobs in batches: each as by its own pop, in far fewer pops than jobs", function()
        local pushed = {}
        for i = 1, 200 do
            pushed[i] = spec_job("ok", { id = "b" .. i })
            H.push(pushed[i])
        end
        H.r("CONFIG", "RESETSTAT")
        local w = start()
        H.wait_until(function() return #ran() == 200 end, 20, "the 200 jobs")
        local stats = H.r("INFO", "commandstats")
        w:kill("TERM")
        assert.are.equal(0, w:wait())
        local runs = ran()
        for i = 1, 200 do
            assert.are.same({ "b" .. i, 1 }, { runs[i].id, runs[i].attempts })
        end
        -- one reservation (ZADD) per job, but far fewer script calls than jobs
        assert.are.equal(200, tonumber(stats:match("cmdstat_zadd:calls=(%d+)")))
        local evalsha = tonumber(stats:match("cmdstat_evalsha:calls=(%d+)"))
        assert.is_true(evalsha < 100, evalsha .. " script calls for 200 jobs")
        local list, _, reserved = H.keys()
        assert.are.same({ 0, 0 }, { H.r("LLEN", list), H.r("ZCARD", reserved) })
    end)

    it("gives the jobs reserved ahead back to the queue, as they were and in order, when it stops", function()
        -- the 40th job stops the supervisor while one batch runs and the next is popped
        local pushed = {}
        for i = 1, 100 do
            pushed[i] = spec_job(i == 40 and "stop" or "ok", { id = "g" .. i })
            H.push(pushed[i])
        end
        local w = start()
        assert.are.equal(0, w:wait(10))
        -- the stopping job ends when the TERM reaches its worker, which starts no other
        local n = #ran()
        assert.are.equal(40, n)
        local list, _, reserved, notify = H.keys()
        assert.are.equal(0, H.r("ZCARD", reserved))
        local left = H.r("LRANGE", list, 0, -1)
        assert.are.equal(100 - n, #left)
        for i, raw in ipairs(left) do
            assert.are.same(pushed[i + n], cjson.decode(raw))
        end
        assert.are.equal(100 - n, H.r("LLEN", notify))
    end)

    it("gives back the jobs reserved ahead after a job that held them over a second", function()
        H.r("SET", "spec:slow", "1.5")
        for i = 1, 20 do H.push(spec_job(i == 3 and "slow" or "ok", { id = "h" .. i })) end
        H.r("CONFIG", "RESETSTAT")
        local w = start()
        H.wait_until(function() return #ran() == 20 end, 15, "the 20 jobs")
        local stats = H.r("INFO", "commandstats")
        w:kill("TERM")
        assert.are.equal(0, w:wait())
        for i, r in ipairs(ran()) do assert.are.same({ "h" .. i, 1 }, { r.id, r.attempts }) end
        -- the give-back script puts them at the head of the list (LPUSH)
        assert.is_truthy(stats:match("cmdstat_lpush:calls=%d+"))
    end)

    it("has the next process give back the jobs a killed one reserved ahead and did not start", function()
        -- a first pop takes k0, the second k1 and more (as many as ran in 50 ms at
        -- k0's pace); k2 runs past its timeout and fails (one try)
        H.push(spec_job("ok", { id = "k0" }))
        for i = 1, 20 do
            H.push(spec_job(i == 2 and "spin" or "ok", { id = "k" .. i, timeout = i == 2 and 1 or nil,
                maxTries = i == 2 and 1 or nil }))
        end
        local w = start({ "--retry-after=60", "--timeout=30" })
        H.wait_until(function() return #ran() == 21 end, 10, "every job of the killed process's batch")
        local ids = {}
        for _, r in ipairs(ran()) do ids[#ids + 1] = r.id end
        local expect = {}
        for i = 0, 20 do expect[#expect + 1] = "k" .. i end
        assert.are.same(expect, ids)
        H.wait_until(function() return H.r("LLEN", "spec:failing") == 1 end, 5, "k2 to fail")
        local list, _, reserved = H.keys()
        H.wait_until(function() return H.r("ZCARD", reserved) == 0 end, 5, "no reservation left")
        assert.are.equal(0, H.r("LLEN", list))
        assert.matches("worker [^ ]+:%d+:%w+ ended without giving back its jobs: %d+ it had not "
            .. "started went back to the queue", w:stderr())
        w:kill("TERM")
        assert.are.equal(0, w:wait())
    end)

    it("lets the job in hand finish on TERM, then exits 0", function()
        H.r("SET", "spec:slow", "1")
        local w = start()
        H.push(spec_job("slow"))
        H.wait_until(function() return #ran() == 1 end, 5, "the job to start")
        w:kill("TERM")
        assert.are.equal(0, w:wait(10))
        assert.are.equal(1, H.r("LLEN", "spec:finished"))
        local _, _, reserved = H.keys()
        assert.are.equal(0, H.r("ZCARD", reserved))
    end)

    -- A worker running the job "crunch", which keeps the CPU (its loop cannot run),
    -- then "ok", is sent signal while the first runs; returns it once "crunch"
    -- ended: a moment after the signal, for it to reach the worker, and soon enough
    -- that the worker has no other reason to let its loop run before its next job
    -- (its look at the restart signal, once a second, would).
    local function signalled_while_crunching(signal)
        local ends = H.tmpdir() .. "/crunch-ends"
        H.r("SET", "spec:crunch", ends)
        local w = start()
        H.push(spec_job("crunch", { id = "c1" }))
        H.push(spec_job("ok", { id = "c2" }))
        H.wait_until(function() return #ran() == 1 end, 5, "the job to start")
        w:kill(signal)
        H.sleep(0.2)
        H.write_file(ends, "")
        return w
    end

    it("starts no other job after a TERM that came while a handler kept the CPU, then exits 0", function()
        local w = signalled_while_crunching("TERM")
        assert.are.equal(0, w:wait(10))
        assert.are.equal(1, #ran())
        local list, _, reserved = H.keys()
        assert.are.same({ 1, 0 }, { H.r("LLEN", list), H.r("ZCARD", reserved) })
    end)

    it("has a fresh worker run the next job after a HUP that came while a handler kept the CPU", function()
        local w = signalled_while_crunching("HUP")
        H.wait_until(function() return #ran() == 2 end, 10, "the next job")
        assert.are_not.equal(ran()[1].client, ran()[2].client)
        w:kill("TERM")
        assert.are.equal(0, w:wait(10))
    end)

    it("starts no other job after a USR2 that came while a handler kept the CPU, until CONT", function()
        local w = signalled_while_crunching("USR2")
        H.sleep(1.5)
        assert.are.equal(1, #ran())
        w:kill("CONT")
        H.wait_until(function() return #ran() == 2 end, 10, "the next job once resumed")
        w:kill("TERM")
        assert.are.equal(0, w:wait(10))
    end)

    it("passes on a stop signal that reaches a worker it is just starting, which exits 0", function()
        -- a worker killed, and TERM to the supervisor at once: it forwards the TERM to
        -- the worker it starts in its place, before or during that one's start
        for _ = 1, 10 do
            local w = start()
            H.wait_until(function() return #children(w) == 1 end, 5, "the worker")
            H.sleep(0.3)
            os.execute("kill -9 " .. children(w)[1] .. "; kill -TERM " .. w.pid)
            assert.are.equal(0, w:wait(10))
            assert.is_nil(w:stderr():match("killed by signal 15"), w:stderr())
        end
    end)

    it("stops gracefully on INT and on QUIT too", function()
        for _, sig in ipairs({ "INT", "QUIT" }) do
            H.r("DEL", "spec:finished", "spec:ran")
            H.r("SET", "spec:slow", "0.5")
            local w = start()
            H.push(spec_job("slow"))
            H.wait_until(function() return #ran() == 1 end, 5, "the job to start")
            w:kill(sig)
            assert.are.equal(0, w:wait(10))
            assert.are.equal(1, H.r("LLEN", "spec:finished"), sig .. " cut the job short")
        end
    end)

    it("recycles a worker that reaches --memory, --max-jobs or --max-time", function()
        -- each "hog" job leaves its process holding 60 MB
        for i = 1, 2 do H.push(spec_job("hog", { id = "m" .. i })) end
        local w = start({ "--memory=40", "--stop-when-empty" })
        assert.are.equal(0, w:wait(10))
        assert.are.same({ 2, 2 }, { #ran(), clients() })

        H.flush()
        for i = 1, 3 do H.push(spec_job("ok", { id = "j" .. i })) end
        w = start({ "--max-jobs=1", "--stop-when-empty" })
        assert.are.equal(0, w:wait(10))
        assert.are.same({ 3, 3 }, { #ran(), clients() })

        H.flush()
        w = start({ "--max-time=1" })
        H.push(spec_job("ok"))
        H.wait_until(function() return #ran() == 1 end, 5, "the first job")
        H.sleep(1.5)
        H.push(spec_job("ok"))
        H.wait_until(function() return #ran() == 2 end, 5, "the job after --max-time")
        assert.are.equal(2, clients())
        w:kill("TERM")
        assert.are.equal(0, w:wait())
    end)

    it("reloads on HUP: each worker ends after its job and a fresh one takes over", function()
        H.r("SET", "spec:slow", "0.5")
        local w = start()
        H.push(spec_job("slow"))
        H.wait_until(function() return #ran() == 1 end, 5, "the job to start")
        local before = children(w)[1]
        w:kill("HUP")
        H.wait_until(function()
            local pids = children(w)
            return #pids == 1 and pids[1] ~= before
        end, 5, "a fresh worker")
        assert.are.equal(1, H.r("LLEN", "spec:finished"))
        H.push(spec_job("ok"))
        H.wait_until(function() return #ran() == 2 end, 5, "a job in the fresh worker")
        assert.are.equal(2, clients())
    end)

    it("delays restarts of a worker over --memory from its start instead of looping", function()
        local w = start({ "--memory=1" })
        H.wait_until(function() return w:stderr():match("starting it again in 2s") end, 10, "two delayed starts")
        assert.matches("worker 1 reached %-%-memory [%d.]+s after its start: the limit is below what a "
            .. "fresh worker needs", w:stderr())
        w:kill("TERM")
        assert.are.equal(0, w:wait())
    end)

    it("starts a worker that fails at start again after a growing delay, logging why", function()
        handlers = H.handlers({ ["init.lua"] = "error('init failed on purpose')" })
        local w = start()
        H.wait_until(function() return w:stderr():match("starting it again in 2s") end, 10, "two failed starts")
        assert.matches("init failed on purpose", w:stderr())
        assert.matches("worker 1 %(pid %d+%) exited with status 1", w:stderr())
        assert.matches("before it was ready; starting it again in 1s", w:stderr())
        w:kill("TERM")
        assert.are.equal(0, w:wait())
    end)

    it("reloads the workers within a second when a handler changes, unless it does not compile", function()
        local file = handlers .. "/App/Jobs/Spec.lua"
        H.write_file(file, version("v1"))
        local w = start()
        local function run_one()
            local before = H.r("LLEN", "spec:versions")
            H.push(spec_job("ok"))
            H.wait_until(function() return H.r("LLEN", "spec:versions") > before end, 5, "the job")
            return H.r("LRANGE", "spec:versions", -1, -1)[1]
        end
        assert.are.equal("v1", run_one())
        local old = children(w)[1]

        H.write_file(file, version("v2"))
        local edited = os.time()
        H.wait_until(function() return w:stderr():match("handlers changed %(App/Jobs/Spec.lua%): reloading") end,
            2, "the reload")
        assert.is_true(os.time() - edited <= 1)
        -- a job pushed while the old worker has not yet heard its HUP is still its own
        -- (it ends after the jobs it has): the next job after its successor started
        H.wait_until(function()
            local now = children(w)
            return #now == 1 and now[1] ~= old
        end, 5, "the fresh worker")
        assert.are.equal("v2", run_one())

        H.write_file(file, "return { handle = function( end }")
        H.wait_until(function() return w:stderr():match("does not compile") end, 2, "the compile error")
        assert.matches("handlers changed %(App/Jobs/Spec.lua%) but one does not compile: "
            .. "[^\n]*Spec.lua:1: [^\n]*; the workers keep the code they run", w:stderr())
        assert.are.equal("v2", run_one())

        -- one that compiles but cannot handle jobs is found by the check a worker's
        -- start makes, in a process of its own, before any worker reloads
        local workers = children(w)
        H.write_file(file, "return 'not a handler'")
        H.wait_until(function() return w:stderr():match("the check of them failed") end, 5, "the check")
        assert.matches("handlers that cannot handle jobs: handler [^\n]*Spec.lua must return a table with a "
            .. "handle%(job, command%) function, not a string\n[^\n]*handlers changed %(App/Jobs/Spec.lua%) but "
            .. "the check of them failed %(exit status 2; what it found is above%): the workers keep the code "
            .. "they run", w:stderr())
        assert.are.same(workers, children(w))
        assert.are.equal("v2", run_one())
        H.write_file(file, version("v3"))
        H.wait_until(function() return run_one() == "v3" end, 10, "the reload after the fix")
    end)

    it("does not reload for a handler file caught between its truncation and its write", function()
        local file = handlers .. "/App/Jobs/Spec.lua"
        H.write_file(file, version("v1"))
        local w = start()
        H.push(spec_job("ok"))
        H.wait_until(function() return H.r("LLEN", "spec:versions") == 1 end, 5, "the first job")
        local old = children(w)[1]
        -- written in place, as an editor or a deploy may: truncated, and the broken
        -- text comes 0.6 s later (two scans and more of the supervisor see it empty)
        local f = assert(io.open(file, "w"))
        H.sleep(0.6)
        f:write("return { handle = function( end }")
        f:close()
        H.wait_until(function() return w:stderr():match("does not compile") end, 5, "the compile error")
        assert.is_nil(w:stderr():match("reloading"), w:stderr())
        assert.are.same({ old }, children(w))
        -- the worker keeps the code it runs
        H.push(spec_job("ok"))
        H.wait_until(function() return H.r("LLEN", "spec:versions") == 2 end, 5, "the next job")
        assert.are.equal("v1", H.r("LRANGE", "spec:versions", -1, -1)[1])
    end)

    it("watches a handlers directory that is empty at start, and reloads when a handler comes",
        function()
        -- (an empty directory gave the sort of its files no array, which the
        -- undefined-behaviour sanitizer stopped the supervisor for)
        handlers = H.handlers({})
        local w = start()
        H.sleep(0.5)
        H.write_file(handlers .. "/App/Jobs/Spec.lua", [[
            local luaworker = require "luaworker"
            return { handle = function() luaworker.redis("RPUSH", "spec:versions", "new") end }
        ]])
        H.wait_until(function() return w:stderr():match("handlers changed %(App/Jobs/Spec.lua%): reloading") end,
            3, "the reload")
        H.push(spec_job("ok"))
        H.wait_until(function() return H.r("LLEN", "spec:versions") == 1 end, 5, "the job")
        assert.is_nil(w:stderr():find("runtime error", 1, true))
        w:kill("TERM")
        assert.are.equal(0, w:wait())
    end)

    it("writes each log line whole while several workers log at once", function()
        handlers = H.handlers({ ["App/Jobs/Spec.lua"] = "return { handle = function() error('no') end }" })
        local list = H.keys()
        local batch = {}
        for i = 1, 3000 do
            batch[#batch + 1] = cjson.encode(spec_job("ok", { id = string.format("w%031d", i) }))
            if #batch == 500 then H.r("RPUSH", list, unpack(batch)); batch = {} end
        end
        local w = start({ "--processes=3", "--stop-when-empty", "--quiet" })
        assert.are.equal(0, w:wait(30))
        local lines, torn = 0, {}
        for line in w:stderr():gmatch("[^\n]+") do
            lines = lines + 1
            if not (line:match("^%[%d%d%d%d%-%d%d%-%d%d %d%d:%d%d:%d%d%]") or line:match("^\t")
                    or line == "stack traceback:") then
                torn[#torn + 1] = line
            end
        end
        assert.is_true(lines >= 3000)
        assert.are.same({}, torn)
    end)

    it("does not watch the handlers with --no-watch", function()
        local file = handlers .. "/App/Jobs/Other.lua"
        local w = start({ "--no-watch" })
        H.sleep(0.3)
        H.write_file(file, "return { handle = function() end }")
        H.sleep(1)
        assert.is_nil(w:stderr():match("handlers changed"))
    end)
end)
