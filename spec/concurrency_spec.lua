-- --concurrency: many jobs in flight in one worker process, each in a task of its
-- own; their hooks; timeouts of jobs that wait (stopped where they wait, the
-- process goes on) and of a job that keeps the CPU (its process ended, the jobs it
-- had in flight settled); stopping with jobs in flight; a reply one job asked for
-- that the Redis client cannot read fails that job's call alone.
local H = require "spec.helpers"

-- Each run: INCR spec:now and push the count (how many run at this moment) to
-- spec:counts, then the command's action, then DECR. Actions: "sleep" waits
-- command.seconds; "spin" loops forever; anything else returns at once. Each job
-- that finishes adds the Redis client id of its process to spec:clients, then
-- pushes its id to spec:finished.
local HANDLER = [[
local luaworker = require "luaworker"
return {
    handle = function(job, command)
        luaworker.redis("RPUSH", "spec:counts", luaworker.redis("INCR", "spec:now"))
        luaworker.redis("RPUSH", "spec:handle", job:id())
        if command.action == "sleep" then
            luaworker.sleep(tonumber(command.seconds))
        elseif command.action == "spin" then
            local n = 0
            while true do n = n + 1 end
        elseif command.action == "huge" or command.action == "huge_list" then
            local ok, err = pcall(luaworker.redis, unpack(command.action == "huge"
                and { "GET", "spec:huge" } or { "LRANGE", "spec:huge_list", "0", "-1" }))
            luaworker.redis("RPUSH", "spec:huge_error", tostring(ok), err.kind, err.message)
        end
        luaworker.redis("SADD", "spec:clients", luaworker.redis("CLIENT", "ID"))
        luaworker.redis("DECR", "spec:now")
        luaworker.redis("RPUSH", "spec:finished", job:id())
    end,
    failed = function(job, command, err)
        luaworker.redis("RPUSH", "spec:failed", job:id())
    end,
}
]]

local INIT = [[
local luaworker = require "luaworker"
luaworker.before(function(e) luaworker.redis("RPUSH", "spec:events", "before " .. e.job:id()) end)
luaworker.after(function(e) luaworker.redis("RPUSH", "spec:events", "after " .. e.job:id()) end)
luaworker.timed_out(function(e) luaworker.redis("RPUSH", "spec:timed_out", e.job:id()) end)
]]

local function spec_job(id, action, seconds, fields)
    fields = fields or {}
    fields.id = id
    local props = string.format('s:6:"action";s:%d:"%s";s:7:"seconds";s:%d:"%s";',
        #action, action, #tostring(seconds or 0), tostring(seconds or 0))
    fields.data = { commandName = "App\\Jobs\\Spec",
        command = 'O:13:"App\\Jobs\\Spec":2:{' .. props .. '}' }
    return H.payload(fields)
end

local function max_count()
    local m = 0
    for _, c in ipairs(H.r("LRANGE", "spec:counts", 0, -1)) do m = math.max(m, tonumber(c)) end
    return m
end

local handlers, workers

local function start(args, opts)
    local full = { "work", "--handlers=" .. handlers, "--sleep=0.05" }
    for _, a in ipairs(args or {}) do full[#full + 1] = a end
    local w = H.spawn(full, opts)
    workers[#workers + 1] = w
    return w
end

local function finished() return H.r("LRANGE", "spec:finished", 0, -1) end

describe("luaworker work --concurrency", function()
    before_each(function()
        H.flush()
        handlers = H.handlers({ ["App/Jobs/Spec.lua"] = HANDLER, ["init.lua"] = INIT })
        workers = {}
    end)

    after_each(function()
        for _, w in ipairs(workers) do w:stop() end
    end)

    it("runs up to N jobs at once in one process, never more, each in turn while the others wait", function()
        for i = 1, 30 do H.push(spec_job("c" .. i, "sleep", 1)) end
        local w = start({ "--concurrency=10" })
        H.wait_until(function() return #finished() == 30 end, 30, "the 30 jobs")
        assert.are.equal(10, max_count())
        assert.are.equal(1, H.r("SCARD", "spec:clients"))
        -- each job's delete follows its handler's last command (it is sent when the
        -- run ends, not waited for)
        local list, _, reserved = H.keys()
        H.wait_until(function() return H.r("ZCARD", reserved) == 0 end, 5, "the last deletes")
        assert.are.equal(0, H.r("LLEN", list))
        w:kill("TERM")
        assert.are.equal(0, w:wait())
    end)

    it("reserves a job only when a place is free or about to be: none waits reserved behind slow jobs", function()
        H.push(spec_job("slow1", "sleep", 3))
        H.push(spec_job("slow2", "sleep", 3))
        for i = 1, 10 do H.push(spec_job("q" .. i, "sleep", 0)) end
        H.r("CONFIG", "RESETSTAT")
        local w = start({ "--concurrency=2" })
        H.wait_until(function() return H.r("LLEN", "spec:handle") == 2 end, 10, "the slow jobs")
        H.sleep(1.5)
        -- two reservations (one ZADD each), the others untouched in the queue
        local stats = H.r("INFO", "commandstats")
        assert.are.equal(2, tonumber(stats:match("cmdstat_zadd:calls=(%d+)")))
        local list = H.keys()
        assert.are.equal(10, H.r("LLEN", list))
        H.wait_until(function() return #finished() == 12 end, 20, "all the jobs")
        w:kill("TERM")
        assert.are.equal(0, w:wait())
    end)

    it("takes LUAWORKER_CONCURRENCY when --concurrency is not given", function()
        for i = 1, 6 do H.push(spec_job("e" .. i, "sleep", 1)) end
        local w = start({}, { env = { LUAWORKER_CONCURRENCY = "3" } })
        H.wait_until(function() return #finished() == 6 end, 20, "the 6 jobs")
        assert.are.equal(3, max_count())
        w:kill("TERM")
        assert.are.equal(0, w:wait())
    end)

    it("refuses a concurrency that is not a whole number from 1, naming where it came from", function()
        local r = H.run({ "work", "--handlers=" .. handlers, "--concurrency=0" })
        assert.are.equal(2, r.status)
        assert.matches("--concurrency=0: expected a whole number of jobs from 1 to 10000", r.stderr)
        r = H.run({ "work", "--handlers=" .. handlers }, { env = { LUAWORKER_CONCURRENCY = "many" } })
        assert.are.equal(2, r.status)
        assert.matches("LUAWORKER_CONCURRENCY=many: expected a whole number of jobs from 1 to 10000",
            r.stderr)
    end)

    it("fires each job's hooks with that job, however the jobs interleave", function()
        H.push(spec_job("slow", "sleep", 1.5))
        H.push(spec_job("quick", "sleep", 0.2))
        local w = start({ "--concurrency=2" })
        H.wait_until(function() return #finished() == 2 end, 10, "the two jobs")
        assert.are.same({ "quick", "slow" }, finished())
        assert.are.same({ "before slow", "before quick", "after quick", "after slow" },
            H.r("LRANGE", "spec:events", 0, -1))
        w:kill("TERM")
        assert.are.equal(0, w:wait())
    end)

    it("stops a job that waits past its timeout where it waits; the process and the other jobs go on", function()
        local stuck = spec_job("stuck", "sleep", 60, { timeout = 1, failOnTimeout = true, maxTries = 5 })
        H.push(stuck)
        for i = 1, 3 do H.push(spec_job("o" .. i, "sleep", 2)) end
        local w = start({ "--concurrency=4" })
        H.wait_until(function() return #finished() == 3 end, 15, "the other jobs")
        H.wait_until(function() return H.r("LLEN", "spec:failed") == 1 end, 5, "the stuck job to fail")
        assert.are.same({ "stuck" }, H.r("LRANGE", "spec:timed_out", 0, -1))
        assert.matches("^Illuminate\\Queue\\MaxAttemptsExceededException",
            H.failed_record(stuck.uuid).exception)
        -- the same process ran them all, and was never replaced
        assert.are.equal(1, H.r("SCARD", "spec:clients"))
        assert.are.equal(1, #H.children(w.pid))
        assert.matches("%[stuck%] App\\Jobs\\Spec %(attempt 1%) ran past its timeout of 1s; it was "
            .. "stopped where it waited; failed", w:stderr())
        assert.is_nil(w:stderr():match("was killed"))
        local _, _, reserved = H.keys()
        assert.are.equal(0, H.r("ZCARD", reserved))
        w:kill("TERM")
        assert.are.equal(0, w:wait())
    end)

    it("fails only the call whose Redis reply does not fit under --memory-limit: the jobs beside it "
        .. "go on in the same process", function()
        H.r("SETRANGE", "spec:huge", 300 * 1048576 - 1, "x")  -- made in Redis
        H.push(spec_job("huge", "huge"))
        for i = 1, 3 do H.push(spec_job("o" .. i, "sleep", 1)) end
        local w = start({ "--concurrency=4", "--memory-limit=64", "--memory=0" })
        H.wait_until(function() return #finished() == 4 end, 15, "the jobs")
        H.r("DEL", "spec:huge")
        local e = H.r("LRANGE", "spec:huge_error", 0, -1)
        assert.are.same({ "false", "memory", "a result of 300.0 MB does not fit under --memory-limit=64 (MB): "
            .. "Redis ran the command; its reply was dropped unread" }, e)
        assert.are.equal(1, H.r("SCARD", "spec:clients"))
        local children = H.children(w.pid)
        assert.are.equal(1, #children)
        -- the string was never held: before, the Redis client read it whole (a peak of
        -- over 600 MB) and then it was refused
        local peak_kb = H.peak_kb(children[1])
        assert.is_true(peak_kb < 200 * 1024, "a peak of " .. peak_kb .. " kB")
        w:kill("TERM")
        assert.are.equal(0, w:wait())
    end)

    it("fails the call whose Redis reply holds many strings, together over --memory-limit, without "
        .. "holding them all", function()
        H.r("EVAL", "for i = 1, 100 do redis.call('RPUSH', KEYS[1], string.rep('x', 1048576)) end", 1,
            "spec:huge_list")
        H.push(spec_job("huge", "huge_list"))
        local w = start({ "--memory-limit=32", "--memory=0" })
        H.wait_until(function() return #finished() == 1 end, 15, "the job")
        H.r("DEL", "spec:huge_list")
        assert.are.same({ "false", "memory", "a result of more than 33.0 MB does not fit under "
            .. "--memory-limit=32 (MB): Redis ran the command; its reply was dropped unread" },
            H.r("LRANGE", "spec:huge_error", 0, -1))
        local peak_kb = H.peak_kb(H.children(w.pid)[1])
        assert.is_true(peak_kb < 90 * 1024, "a peak of " .. peak_kb .. " kB")
        w:kill("TERM")
        assert.are.equal(0, w:wait())
    end)

    it("puts a job stopped for its timeout with attempts left back on its queue, its attempt counted, as Laravel does after retry_after", function()
        H.push(spec_job("stuck", "sleep", 60, { timeout = 1, maxTries = 2 }))
        local w = start({ "--concurrency=2", "--retry-after=30" })
        H.wait_until(function() return H.r("LLEN", "spec:timed_out") == 2 end, 10, "the second attempt's timeout")
        H.wait_until(function() return H.r("LLEN", "spec:failed") == 1 end, 5, "the last attempt's failure")
        local _, _, reserved = H.keys()
        assert.are.equal(0, H.r("ZCARD", reserved))
        assert.matches("%(attempt 1%) ran past its timeout of 1s; it was stopped where it waited, and it "
            .. "goes back to its queue with the attempt counted", w:stderr())
        -- the process goes on with the queue
        H.push(spec_job("next", "sleep", 0))
        H.wait_until(function() return #finished() == 1 end, 10, "the next job")
        w:kill("TERM")
        assert.are.equal(0, w:wait())
    end)

    it("ends the process of a job that keeps the CPU past its timeout; its other jobs in flight get "
        .. "the rules of a crash, those not started go back uncharged", function()
        H.push(spec_job("w1", "sleep", 30, { maxTries = 1 }))
        H.push(spec_job("w2", "sleep", 30, { maxTries = 3 }))
        local spinning = spec_job("spin", "spin", 0, { timeout = 1, failOnTimeout = true })
        H.push(spinning)
        for i = 1, 5 do H.push(spec_job("later" .. i, "sleep", 0)) end
        local w = start({ "--concurrency=3", "--retry-after=60" })
        H.wait_until(function() return #finished() == 5 end, 20, "the jobs not started, run by the successor")
        for i = 1, 5 do assert.are.equal("later" .. i, finished()[i]) end
        -- each ran once: none was charged an attempt before it ran
        -- (w2 goes back to the queue's tail, with its attempt counted, and may have run again)
        local handled = H.r("LRANGE", "spec:handle", 0, 7)
        assert.are.same({ "w1", "w2", "spin", "later1", "later2", "later3", "later4", "later5" }, handled)
        local err = w:stderr()
        assert.matches("ran past its timeout of 1s; its process was ended; failed", err)
        -- w1 was on its last attempt: failed now; w2 goes back with its attempt counted
        assert.matches("%[w1%] App\\Jobs\\Spec %(attempt 1%) was running when its worker died %(ended "
            .. "because another of its jobs ran past its timeout of 1s%); its last attempt: failed", err)
        assert.matches("%[w2%] App\\Jobs\\Spec %(attempt 1%) was running when its worker died %(ended "
            .. "because another of its jobs ran past its timeout of 1s%); it goes back to its queue "
            .. "with the attempt counted", err)
        assert.are.same({ "w1", "spin" }, H.r("LRANGE", "spec:failed", 0, -1))
        -- w2's second attempt: reserved, or waiting on the queue for its turn
        local list, _, reserved = H.keys()
        H.wait_until(function() return H.r("ZCARD", reserved) + H.r("LLEN", list) == 1 end, 5, "w2 alone left")
        local both = H.r("EVAL", "return {redis.call('zrange', KEYS[1], 0, -1), "
            .. "redis.call('lrange', KEYS[2], 0, -1)}", 2, reserved, list)
        -- charged: attempts 1 while it waits on the queue, 2 once popped again
        if #both[1] == 1 then
            assert.are.equal(2, H.json.decode(both[1][1]).attempts)
        else
            assert.are.equal(1, H.json.decode(both[2][1]).attempts)
        end
        w:kill("TERM")
        assert.are.equal(0, w:wait())
    end)

    it("stops gracefully with jobs in flight: takes no new one and lets each finish", function()
        for i = 1, 5 do H.push(spec_job("f" .. i, "sleep", 1.5)) end
        for i = 1, 40 do H.push(spec_job("n" .. i, "sleep", 0)) end
        local w = start({ "--concurrency=5" })
        H.wait_until(function() return H.r("LLEN", "spec:handle") >= 5 end, 10, "five jobs in flight")
        w:kill("TERM")
        assert.are.equal(0, w:wait(20))
        assert.are.same({ "f1", "f2", "f3", "f4", "f5" }, H.r("LRANGE", "spec:handle", 0, -1))
        assert.are.equal(5, #finished())
        -- the others are in the queue as they were pushed, none reserved or charged
        local list, _, reserved = H.keys()
        assert.are.equal(0, H.r("ZCARD", reserved))
        local left = H.r("LRANGE", list, 0, -1)
        assert.are.equal(40, #left)
        for i, text in ipairs(left) do
            local p = H.json.decode(text)
            assert.are.same({ "n" .. i, 0 }, { p.id, p.attempts })
        end
    end)

    it("reloads with jobs in flight: they finish on the code they started with, new jobs get the new code", function()
        local v = [[
local luaworker = require "luaworker"
return { handle = function(job) luaworker.sleep(1.5); luaworker.redis("RPUSH", "spec:finished", job:id() .. " VERSION") end }
]]
        H.write_file(handlers .. "/App/Jobs/Versioned.lua", (v:gsub("VERSION", "v1")))
        local w = start({ "--concurrency=4" })
        H.wait_until(function() return #H.children(w.pid) == 1 end, 5, "the worker")
        H.sleep(0.5)
        for i = 1, 2 do H.push(H.class_payload("App\\Jobs\\Versioned", { id = "old" .. i })) end
        H.wait_until(function()
            local _, _, reserved = H.keys()
            return H.r("ZCARD", reserved) == 2
        end, 5, "the two jobs in flight")
        local old = H.children(w.pid)[1]
        H.write_file(handlers .. "/App/Jobs/Versioned.lua", (v:gsub("VERSION", "v2")))
        H.wait_until(function() return w:stderr():match("handlers changed %(.*%): reloading") end, 10,
            "the change to be seen")
        -- a job pushed before the old worker has heard its HUP is still its own (it
        -- ends after the jobs it has; CI saw "new v1" once beside two CPU hogs): the
        -- next job after its successor started, once the two in flight have ended
        H.wait_until(function()
            local now = H.children(w.pid)
            return #now == 1 and now[1] ~= old
        end, 10, "the fresh worker")
        assert.are.equal(2, #finished(), "the jobs in flight ended first")
        H.push(H.class_payload("App\\Jobs\\Versioned", { id = "new" }))
        H.wait_until(function() return #finished() == 3 end, 20, "the three jobs")
        local got = finished()
        table.sort(got)
        assert.are.same({ "new v2", "old1 v1", "old2 v1" }, got)
        w:kill("TERM")
        assert.are.equal(0, w:wait())
    end)
end)

describe("a handler's Redis reply nested deeper than the Redis client reads", function()
    -- App\Jobs\Nest (n = 1): an EVAL that keeps Redis 300 ms, then returns `depth`
    -- nested arrays (hiredis 0.14 reads 8 levels), and records the outcome a second
    -- later. App\Jobs\Nest (n = 2), the job beside it: an INCR sent while that EVAL
    -- runs, its reply recorded in spec:beside.
    local function nest_handlers(depth)
        return H.handlers({ ["App/Jobs/Nest.lua"] = [[
local lw = require "luaworker"
local SCRIPT = "local t0 = redis.call('TIME') local s = t0[1] * 1e6 + t0[2] "
    .. "repeat local t = redis.call('TIME') until t[1] * 1e6 + t[2] - s > 300000 "
    .. "return ]] .. string.rep("{", depth) .. "7" .. string.rep("}", depth) .. [["
return { handle = function(job, command)
    if command.n == 1 then
        local ok, value = pcall(lw.redis, "EVAL", SCRIPT, 0)
        local depth = 0
        while ok and type(value) == "table" do depth, value = depth + 1, value[1] end
        lw.sleep(1)
        lw.redis("RPUSH", "spec:nest", tostring(ok), ok and depth .. ":" .. value or tostring(value))
    else
        lw.sleep(0.1)
        lw.redis("RPUSH", "spec:beside", lw.redis("INCR", "spec:x"))
    end
end }
]] })
    end

    local function run_both(depth)
        H.flush()
        H.push(H.class_payload("App\\Jobs\\Nest", {}, { { "n", "i:2;" } }))
        H.push(H.class_payload("App\\Jobs\\Nest", {}, { { "n", "i:1;" } }))
        local r = H.run({ "work", "--handlers=" .. nest_handlers(depth), "--concurrency=2", "--sleep=0.1",
            "--stop-when-empty", "--no-watch" }, { timeout = 30 })
        assert.are.equal(0, r.status, r.stderr)
        return H.r("LRANGE", "spec:nest", 0, -1), r
    end

    it("fails only the call that asked for it: the INCR of the job beside it gets its reply", function()
        -- before: the beside job failed with "Redis connection to ... lost: No support for
        -- nested multi bulk replies with depth > 7", though its INCR ran, and a
        -- --stop-when-empty run could end at once with "gave up after 10s"
        for _ = 1, 3 do
            local nest, r = run_both(10)
            assert.are.equal("false", nest[1])
            assert.truthy(nest[2]:find("reads arrays nested 8 deep at most; this reply nests deeper: "
                .. "the command ran, its reply is dropped", 1, true), nest[2])
            assert.are.same({ "1" }, H.r("LRANGE", "spec:beside", 0, -1))
            assert.are.equal(0, H.r("ZCARD", H.prefix .. "luaworker:failed_jobs"))
            assert.is_nil(r.stderr:find("lost", 1, true), r.stderr)
        end
    end)

    it("reads a reply 8 levels deep whole", function()
        assert.are.same({ "true", "8:7" }, (run_both(8)))
        assert.are.same({ "1" }, H.r("LRANGE", "spec:beside", 0, -1))
    end)
end)
