-- The worker events Laravel added after 8.83 (JobReleased, WorkerIdle,
-- WorkerInterrupted, WorkerPausing / WorkerResuming, WorkerQueuePaused /
-- WorkerQueueResumed) as hooks, and the lines --json writes, in WorkCommand's order.
local H = require "spec.helpers"
local cjson = require "cjson"

local HANDLERS = {
    ["App/Jobs/Ev.lua"] = [[
return { handle = function(job)
    if job:payload().data.release then job:release(60) end
end }
]],
    -- sleeps 0.05 s at a time until 4 s (whole seconds of os.time: 3 to 4) passed,
    -- unless its interrupted() was called (with it, up to 20 s: a spec stalled on a
    -- loaded machine still finds it in flight); records how many sleeps it took
    ["App/Jobs/Long.lua"] = [[
local luaworker = require "luaworker"
local stop = {}
return {
    handle = function(job)
        luaworker.redis("RPUSH", "spec:events", "long:started")
        local sleeps, deadline = 0, os.time() + (os.getenv("SPEC_INTERRUPTIBLE") == "1" and 20 or 4)
        while os.time() < deadline do
            if stop[job:id()] then
                luaworker.redis("RPUSH", "spec:events", "long:ended_early:" .. stop[job:id()])
                return
            end
            luaworker.sleep(0.05)
            sleeps = sleeps + 1
        end
        luaworker.redis("RPUSH", "spec:events", "long:ended")
        luaworker.redis("SET", "spec:sleeps", sleeps)
    end,
    interrupted = os.getenv("SPEC_INTERRUPTIBLE") == "1" and function(job, command, signal)
        stop[job:id()] = signal
    end or nil,
}
]],
    -- Each runs until the spec sets spec:end:<its name> (20 s at most: a stop signal
    -- ends a handler's sleep, not its job); its interrupted() raises at once (Trouble)
    -- or waits a minute (Stuck): jobs in trouble.
    ["App/Jobs/Trouble.lua"] = [[
local luaworker = require "luaworker"
return {
    handle = function(job) require("held")("trouble") end,
    interrupted = function(job, command, signal)
        error("interrupted() of a job in trouble")
    end,
}
]],
    ["App/Jobs/Stuck.lua"] = [[
local luaworker = require "luaworker"
return {
    handle = function(job) require("held")("stuck") end,
    interrupted = function(job, command, signal)
        luaworker.redis("RPUSH", "spec:events", "stuck:interrupted")
        luaworker.sleep(60)
    end,
}
]],
    ["held.lua"] = [[
local luaworker = require "luaworker"
return function(name)
    luaworker.redis("RPUSH", "spec:events", name .. ":started")
    local deadline = os.time() + 20
    while os.time() < deadline and luaworker.redis("EXISTS", "spec:end:" .. name) == 0 do
        luaworker.sleep(0.05)
    end
    luaworker.redis("RPUSH", "spec:events", name .. ":ended")
end
]],
    ["init.lua"] = [[
local luaworker = require "luaworker"
local function log(name)
    return function(e)
        local what = name
        if e.job then what = what .. ":" .. e.job:id() end
        if name:match("interrupted$") then what = what .. ":" .. tostring(e.signal) end
        if name:match("^queue_") then what = what .. ":" .. e.queue end
        luaworker.redis("RPUSH", "spec:events", what)
    end
end
for _, n in ipairs({ "before", "after", "released", "idle", "interrupted", "job_interrupted", "pausing",
                     "resuming", "queue_paused", "queue_resumed", "stopping" }) do
    luaworker[n](log(n))
end
]],
}

local PAUSED_LOW = "laravel_database_laravel_cache_illuminate:queue:paused:redis:low"

local function job(id, release)
    return H.payload({ id = id, displayName = "App\\Jobs\\Ev",
        data = { commandName = "App\\Jobs\\Ev", command = 'O:11:"App\\Jobs\\Ev":0:{}', release = release } })
end

describe("the newer worker events", function()
    local handlers
    -- (a worker a failed case leaves is stopped)
    local workers = H.worker_set()
    setup(function() handlers = H.handlers(HANDLERS) end)
    before_each(function() H.flush() end)
    after_each(workers.stop_all)

    local function events() return H.r("LRANGE", "spec:events", 0, -1) end
    local function seen(what)
        H.wait_until(function()
            for _, e in ipairs(events()) do if e == what then return true end end
        end, 10, what)
    end

    it("fire as hooks: released, idle, pausing and resuming, queue paused and resumed, interrupted", function()
        H.push(job("a"))
        H.push(job("r", true))
        local w = workers.spawn({ "work", "--handlers=" .. handlers, "--sleep=0.05", "--queue=default,low",
            "--laravel=12.40" })
        seen("idle")
        local e = events()
        assert.are.same({ "before:a", "after:a", "before:r", "after:r", "released:r", "idle" },
            { e[1], e[2], e[3], e[4], e[5], e[6] })
        w:kill("USR2")
        seen("pausing")
        w:kill("CONT")
        seen("resuming")
        H.rdb(1, "SET", PAUSED_LOW, "b:1;")
        seen("queue_paused:low")
        H.rdb(1, "DEL", PAUSED_LOW)
        seen("queue_resumed:low")
        w:kill("TERM")
        assert.are.equal(0, w:wait())
        e = events()
        -- interrupted as the signal arrives (as PHP's async signal handler), stopping last;
        -- a poll under way when it came may still say idle in between
        assert.are.equal("stopping", e[#e])
        local at
        for i, name in ipairs(e) do if name == "interrupted:15" then at = i end end
        assert.is_truthy(at, table.concat(e, " "))
        for i = at + 1, #e - 1 do assert.are.equal("idle", e[i], table.concat(e, " ")) end
        -- each announced once
        local count = {}
        for _, name in ipairs(e) do count[name] = (count[name] or 0) + 1 end
        assert.are.same({ 1, 1, 1, 1, 1 }, { count.pausing, count.resuming, count["queue_paused:low"],
            count["queue_resumed:low"], count["interrupted:15"] })
    end)

    local function long_job(id)
        return H.payload({ id = id, displayName = "App\\Jobs\\Long",
            data = { commandName = "App\\Jobs\\Long", command = 'O:13:"App\\Jobs\\Long":0:{}' } })
    end

    it("keep a job that sleeps again after a stop signal woke it sleeping, and let it end", function()
        -- (a signal ended every wakeable sleep, including those it started: such a job
        -- kept the worker in that loop for good)
        H.push(long_job("l1"))
        local w = workers.spawn({ "work", "--handlers=" .. handlers, "--sleep=0.05" })
        seen("long:started")
        w:kill("TERM")
        assert.are.equal(0, w:wait(10), w:stderr())
        seen("long:ended")
        assert.are.equal(0, H.r("LLEN", "queues:default"))
        -- each sleep slept (the one the signal ended aside): at most 4 s / 0.05 s
        assert.is_true(tonumber(H.r("GET", "spec:sleeps")) <= 81, H.r("GET", "spec:sleeps") .. " sleeps")
    end)

    it("JobInterrupted: a stop signal calls interrupted() of each job in flight whose handler has it, "
        .. "after WorkerInterrupted", function()
        H.push(long_job("l2"))
        H.push(long_job("l3"))
        local w = workers.spawn({ "work", "--handlers=" .. handlers, "--sleep=0.05", "--concurrency=2" },
            { env = { SPEC_INTERRUPTIBLE = "1" } })
        H.wait_until(function()
            local n = 0
            for _, e in ipairs(events()) do if e == "long:started" then n = n + 1 end end
            return n == 2
        end, 10, "both jobs to start")
        w:kill("TERM")
        assert.are.equal(0, w:wait(10), w:stderr())
        local e = table.concat(events(), " ")
        assert.matches("interrupted:15 job_interrupted:l2:15 job_interrupted:l3:15", e, 1, true)
        assert.matches("long:ended_early:15", e, 1, true)
        assert.is_nil(e:find("long:ended ", 1, true) or e:find("long:ended$"), e)
        assert.are.equal("stopping", events()[#events()])
    end)

    -- A job of App\Jobs\<class> (id) in trouble and a Long one (long_id) in flight,
    -- then TERM; the worker has exited 0. Returns it and the events, in a line.
    local function interrupt_beside(class, id, long_id)
        H.push(H.payload({ id = id, displayName = "App\\Jobs\\" .. class, data = {
            commandName = "App\\Jobs\\" .. class,
            command = string.format('O:%d:"App\\Jobs\\%s":0:{}', #class + 9, class) } }))
        H.push(long_job(long_id))
        local w = workers.spawn({ "work", "--handlers=" .. handlers, "--sleep=0.05", "--concurrency=2" },
            { env = { SPEC_INTERRUPTIBLE = "1" } })
        seen(class:lower() .. ":started")
        seen("long:started")
        w:kill("TERM")
        -- the job in trouble ends once the job beside it was told and ended
        seen("long:ended_early:15")
        H.r("SET", "spec:end:" .. class:lower(), "1")
        assert.are.equal(0, w:wait(10), w:stderr())
        return w, table.concat(events(), " ")
    end

    it("JobInterrupted: an interrupted() that raises is that job's alone: it is logged, the job beside "
        .. "it is interrupted, both end and the worker stops", function()
        local w, e = interrupt_beside("Trouble", "t1", "l4")
        assert.matches("job_interrupted:t1:15 job_interrupted:l4:15", e, 1, true)
        assert.matches("long:ended_early:15", e, 1, true)
        assert.matches("trouble:ended", e, 1, true)
        assert.matches("error in interrupted() of App\\Jobs\\Trouble: ", w:stderr(), 1, true)
        assert.matches("interrupted() of a job in trouble", w:stderr(), 1, true)
        -- both ran to their end once: deleted, none released or failed
        assert.are.equal(0, H.r("LLEN", "queues:default"))
        assert.are.equal(0, H.r("ZCARD", "queues:default:reserved"))
        assert.are.equal(0, H.r("ZCARD", "queues:default:delayed"))
        assert.is_nil(next(H.failed_record("t1")))
        assert.are.equal("stopping", events()[#events()])
    end)

    it("JobInterrupted: an interrupted() that waits holds up neither the job beside it nor the "
        .. "worker's stop", function()
        -- (it was: each interrupted() ran in turn in one task, so the job after it was
        -- told only when the first returned, a minute later, after it had ended)
        local _, e = interrupt_beside("Stuck", "s1", "l5")
        assert.matches("job_interrupted:s1:15 stuck:interrupted job_interrupted:l5:15", e, 1, true)
        assert.matches("long:ended_early:15", e, 1, true)
        assert.matches("stuck:ended", e, 1, true)
        assert.are.equal(0, H.r("LLEN", "queues:default"))
        assert.are.equal(0, H.r("ZCARD", "queues:default:reserved"))
        assert.are.equal("stopping", events()[#events()])
    end)

    it("are written by --json in WorkCommand's key order, with a queue's pause and resume", function()
        H.rdb(1, "SET", PAUSED_LOW, "b:1;")
        local p = job("j1")
        H.push(p)
        local r = H.run({ "work", "--handlers=" .. handlers, "--stop-when-empty", "--sleep=0",
            "--queue=default,low", "--laravel=13.26", "--json" })
        assert.are.equal(0, r.status, r.stderr)
        local lines = {}
        for line in r.stdout:gmatch("[^\n]+") do lines[#lines + 1] = line end
        local ts = '"timestamp":"%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d%.%d%d%d%d%d%d[%+%-]%d%d:%d%d"'
        local function exact(s) return (s:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0")) end
        local head = exact('{"level":"info","id":"j1","uuid":"' .. p.uuid
            .. '","connection":"redis","queue":"default","job":"App\\\\Jobs\\\\Ev","status":')
        assert.matches("^" .. head .. exact('"starting","attempts":1,') .. ts .. "}$", lines[1])
        assert.matches("^" .. head .. exact('"success","result":"deleted","attempts":1,') .. ts
            .. ',"duration":[%d.e-]+}$', lines[2])
        assert.matches('^{"level":"warning","queue":"low","status":"paused",' .. ts .. "}$", lines[3])
        assert.are.equal(3, #lines)
        assert.is_table(cjson.decode(lines[2]))
    end)
end)
