-- The jobs a worker process holds, accounted for in Redis (runtime/worker/reservations.lua):
-- scripts/pop.lua records them against the worker, scripts/give_back.lua gives back
-- those it did not start, whoever asks; and the worker around them: a whole process
-- group killed, a worker whose lease ran out.
local H = require "spec.helpers"
local cjson = H.json

local POP, GIVE_BACK = H.read_file(H.root .. "/scripts/pop.lua"), H.read_file(H.root .. "/scripts/give_back.lua")

local W = "host:123:abcdef"
local list, delayed, reserved, notify = H.keys()
local RECORD = H.prefix .. "queues:default:luaworker:" .. W
local WORKERS = H.prefix .. "queues:default:luaworker:workers"
local ALIVE = RECORD .. ":alive"

-- scripts/pop.lua for worker W: up to count jobs numbered from number; its record
-- lives ttl seconds (150 by default).
local function pop(count, number, ttl, ...)
    local now = os.time()
    return H.r("EVAL", POP, 8, list, reserved, notify, H.prefix .. "luaworker:failed_jobs",
        H.prefix .. "luaworker:failed_jobs:x", RECORD, WORKERS, ALIVE, now + 90, "x", "redis",
        "default", now, "2026-01-01 00:00:00", count, W, number, ttl or 150, 5000, "default", ...)
end

local function give_back(mode, worker)
    worker = worker or W
    local record = H.prefix .. "queues:default:luaworker:" .. worker
    return H.r("EVAL", GIVE_BACK, 6, list, reserved, notify, record, WORKERS, record .. ":alive",
        worker, mode)
end

local function push(n)
    local pushed = {}
    for i = 1, n do pushed[i] = H.push(H.payload({ id = "p" .. i })) end
    return pushed
end

describe("scripts/pop.lua with a worker's keys", function()
    before_each(H.flush)

    it("records each job it takes against the worker, sets its heartbeat and adds it to the queue's workers", function()
        local pushed = push(3)
        local r = pop(3, 7)
        assert.are.same({ pushed[1], r[2], pushed[2], r[4], pushed[3], r[6] }, r)
        local record = H.hash(RECORD)
        assert.are.same({ pushed[1], r[2], pushed[2], r[4], pushed[3], r[6] },
            { record.p7, record.r7, record.p8, record.r8, record.p9, record.r9 })
        assert.are.same({ W }, H.r("SMEMBERS", WORKERS))
        assert.are.equal("default", H.r("GET", ALIVE))
        local pttl = H.r("PTTL", ALIVE)
        assert.is_true(pttl > 4000 and pttl <= 5000, tostring(pttl))
        assert.is_true(H.r("TTL", RECORD) > 140)
        -- each as by its own Laravel pop
        assert.are.equal(3, H.r("ZCARD", reserved))
        assert.are.equal(0, H.r("LLEN", notify))
    end)

    it("never shortens the life of the queue's set of workers (one may have a longer retry_after)", function()
        push(2)
        pop(1, 1, 1000)
        pop(1, 2, 70)
        assert.is_true(H.r("TTL", WORKERS) > 900)
        assert.is_true(H.r("TTL", RECORD) <= 70)
    end)

    it("drops the entries numbered below the number the worker says it finished all jobs below", function()
        push(5)
        pop(3, 1)
        H.r("HSET", RECORD, "started", 3)
        -- job 1 finished, job 2 still runs (and job 3, started after it)
        pop(2, 4, nil, 2)
        local fields = H.r("HKEYS", RECORD)
        table.sort(fields)
        assert.are.same({ "p2", "p3", "p4", "p5", "r2", "r3", "r4", "r5", "started" }, fields)
    end)
end)

describe("scripts/give_back.lua", function()
    before_each(H.flush)

    it("puts the jobs a worker did not start back at the head of the queue, in order and as they were, with their tokens", function()
        local pushed = push(5)
        pop(4, 1)
        H.r("HSET", RECORD, "started", 1)
        H.r("DEL", notify)
        assert.are.same({ 3 }, give_back("own"))
        assert.are.same({ pushed[2], pushed[3], pushed[4], pushed[5] }, H.r("LRANGE", list, 0, -1))
        assert.are.equal(3, H.r("LLEN", notify))
        -- the started job stays reserved; the worker's record and heartbeat stay
        assert.are.equal(1, H.r("ZCARD", reserved))
        assert.are.same({ W }, H.r("SMEMBERS", WORKERS))
        assert.are.equal(1, H.r("EXISTS", ALIVE))
        -- run twice, it gives back nothing more
        assert.are.same({ 0 }, give_back("own"))
        assert.are.equal(4, H.r("LLEN", list))
    end)

    it("gives back everything when the worker started nothing, and removes its record when it retires", function()
        local pushed = push(2)
        pop(2, 1)
        assert.are.same({ 2 }, give_back("retire"))
        assert.are.same(pushed, H.r("LRANGE", list, 0, -1))
        assert.are.same({ 0, 0, 0, 0 }, { H.r("ZCARD", reserved), H.r("EXISTS", RECORD),
            H.r("EXISTS", ALIVE), H.r("SCARD", WORKERS) })
    end)

    it("does nothing for a dead worker while its heartbeat is there, and gives back once it is gone", function()
        push(3)
        pop(3, 1)
        assert.are.equal(-1, give_back("dead"))
        assert.are.equal(3, H.r("ZCARD", reserved))
        H.r("DEL", ALIVE)
        assert.are.same({ 3 }, give_back("dead"))
        assert.are.same({ 3, 0, 0, 0 }, { H.r("LLEN", list), H.r("ZCARD", reserved),
            H.r("EXISTS", RECORD), H.r("SCARD", WORKERS) })
    end)

    it("returns, for a dead worker, each job it started that is still reserved, and leaves them reserved", function()
        local pushed = push(3)
        local r = pop(3, 1)
        H.r("HSET", RECORD, "started", 2)
        assert.are.same({ 1, 1, pushed[1], r[2], 2, pushed[2], r[4] }, give_back("killed"))
        assert.are.same({ pushed[3] }, H.r("LRANGE", list, 0, -1))
        assert.are.same({ 1, 1, 2 }, { H.r("ZSCORE", reserved, r[2]) and 1, H.r("ZSCORE", reserved, r[4]) and 1,
            H.r("ZCARD", reserved) })
        -- once its outcome is in Redis, nothing is returned for it
        push(2)
        r = pop(2, 3)
        H.r("HSET", RECORD, "started", 3)
        H.r("ZREM", reserved, r[2])
        H.r("DEL", ALIVE)
        assert.are.same({ 1 }, give_back("dead"))
    end)

    it("leaves alone a job whose reservation expired or was settled meanwhile", function()
        local pushed = push(3)
        local r = pop(3, 1)
        H.r("ZREM", reserved, r[4])          -- settled (deleted, or migrated back)
        assert.are.same({ 2 }, give_back("retire"))
        assert.are.same({ pushed[1], pushed[3] }, H.r("LRANGE", list, 0, -1))
    end)
end)

-- Records each run as {id, attempts, pid}. The command's action: "slow" waits
-- spec:slow seconds; "spin" computes spec:spin seconds without yielding; "pause"
-- does what a machine paused for a while finds (see pause below).
local HANDLER = [[
local luaworker = require "luaworker"
local pid = io.open("/proc/self/stat"):read("*l"):match("^(%d+)")
local P = luaworker.prefix .. "queues:default"

local function script(name)
    local f = assert(io.open(luaworker.redis("GET", "spec:root") .. "/scripts/" .. name .. ".lua"))
    local text = f:read("*a")
    f:close()
    return text
end

-- The worker's process was paused for spec:pause seconds: libfaketime moves its
-- wall clock on (its monotonic clock stood still, as a paused virtual machine's
-- does), and what another luaworker did meanwhile, by the clock Redis keeps, is done
-- here: spec:meanwhile "migrate", Laravel's migrate of the reservations that
-- expired (this job's own spared, as a lease would), or "dead", the give-back of a
-- worker whose heartbeat is gone. spec:held: how many jobs the worker held then.
local function pause(job)
    luaworker.redis("SET", "spec:held", luaworker.redis("ZCARD", P .. ":reserved") - 1)
    local f = assert(io.open(luaworker.redis("GET", "spec:faketime"), "w"))
    f:write("+" .. luaworker.redis("GET", "spec:pause"))
    f:close()
    local meanwhile = luaworker.redis("GET", "spec:meanwhile")
    if meanwhile == "migrate" then
        luaworker.redis("ZADD", P .. ":reserved", "XX", os.time() + 60, job:reserved_body())
        luaworker.redis("EVAL", script("migrate"), 3, P .. ":reserved", P, P .. ":notify", os.time())
    elseif meanwhile == "dead" then
        local worker = luaworker.redis("SMEMBERS", P .. ":luaworker:workers")[1]
        local record = P .. ":luaworker:" .. worker
        luaworker.redis("DEL", record .. ":alive")
        luaworker.redis("EVAL", script("give_back"), 6, P, P .. ":reserved", P .. ":notify", record,
            P .. ":luaworker:workers", record .. ":alive", worker, "dead")
    end
end

return {
    handle = function(job, command)
        luaworker.redis("RPUSH", "spec:ran", luaworker.json.encode({ id = job:id(),
            attempts = job:attempts(), pid = pid }))
        if command.action == "slow" then
            luaworker.sleep(tonumber(luaworker.redis("GET", "spec:slow")) or 1)
        elseif command.action == "spin" then
            local stop = os.clock() + tonumber(luaworker.redis("GET", "spec:spin"))
            while os.clock() < stop do end
        elseif command.action == "pause" then
            pause(job)
        elseif command.action == "slow-fail" then
            luaworker.sleep(tonumber(luaworker.redis("GET", "spec:slow")) or 1)
            error("failing on purpose")
        end
    end,
}
]]

-- libfaketime (Debian's libfaketime, installed by make deps): the wall clock of the
-- processes it is preloaded in reads FILE's offset ("+100": 100 s on), the monotonic
-- clock stays true.
local FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
local function faketime_env(file)
    -- under AddressSanitizer its runtime must come first, which a preload breaks
    local asan = os.getenv("ASAN_OPTIONS")
    return { LD_PRELOAD = FAKETIME, FAKETIME_TIMESTAMP_FILE = file, FAKETIME_NO_CACHE = "1",
        DONT_FAKE_MONOTONIC = "1",
        ASAN_OPTIONS = (asan and asan ~= "" and asan .. ":" or "") .. "verify_asan_link_order=0" }
end

local function spec_job(action, id)
    return H.payload({ id = id, data = { commandName = "App\\Jobs\\Spec", command = string.format(
        'O:13:"App\\Jobs\\Spec":1:{s:6:"action";s:%d:"%s";}', #action, action) } })
end

local function ran() return H.json_list("spec:ran") end

describe("luaworker work's jobs reserved ahead", function()
    local handlers, workers

    before_each(function()
        H.flush()
        handlers = H.handlers({ ["App/Jobs/Spec.lua"] = HANDLER })
        workers = {}
    end)

    after_each(function()
        for _, w in ipairs(workers) do w:stop() end
    end)

    local function start(args, opts)
        local full = { "work", "--handlers=" .. handlers, "--sleep=0.05", "--heartbeat=1",
            "--retry-after=60" }
        for _, a in ipairs(args or {}) do full[#full + 1] = a end
        local w = H.spawn(full, opts)
        workers[#workers + 1] = w
        return w
    end

    -- Pushes the payloads at once (one RPUSH), with their notify tokens.
    local function push_all(payloads)
        local texts, tokens = {}, {}
        for i, p in ipairs(payloads) do texts[i], tokens[i] = cjson.encode(p), "1" end
        H.r("RPUSH", list, unpack(texts))
        H.r("RPUSH", notify, unpack(tokens))
    end

    -- 40 quick jobs (the worker then takes batches), then a job doing action and 20
    -- quick ones at once: the worker holds some of those behind it. Returns how many
    -- it holds (reserved, not started) once the action started.
    local function push_batch(action)
        local warm = {}
        for i = 1, 40 do warm[i] = spec_job("ok", "w" .. i) end
        push_all(warm)
        H.wait_until(function() return #ran() == 40 end, 20, "the first jobs")
        local batch = { spec_job(action, "j1") }
        for i = 2, 21 do batch[i] = spec_job("ok", "j" .. i) end
        push_all(batch)
        H.wait_until(function() return #ran() == 41 end, 10, "the " .. action .. " job to start")
        H.sleep(0.2)
        local held = H.r("ZCARD", reserved) - 1
        assert.is_true(held >= 2, "the worker reserved " .. held .. " jobs ahead")
        return held
    end

    -- Each job ran once, as its first attempt.
    local function each_ran_once(count)
        local runs, seen = ran(), {}
        assert.are.equal(count, #runs)
        for _, r in ipairs(runs) do
            assert.is_nil(seen[r.id], r.id .. " ran twice")
            seen[r.id] = true
            assert.are.equal(1, r.attempts, r.id)
        end
    end

    it("go back uncharged when the whole process group is killed, given back by another luaworker within two heartbeats; the job running comes back charged", function()
        -- j1 keeps the CPU: the worker cannot give back the jobs held a second behind
        -- it before the kill
        H.r("SET", "spec:spin", "30")
        local w = start(nil, { group = true })
        local held = push_batch("spin")
        -- what a machine crash or an OOM kill does: no TERM, every process at once (one
        -- kill of the group: killed one after the other, the supervisor first, the
        -- worker would hear TERM in between and give back the rest itself)
        local pids = H.children(w.pid)
        w:kill_group("KILL")
        local killed_at = os.time()
        start()
        H.wait_until(function() return #ran() >= 61 end, 10, "the jobs the dead worker had not started")
        assert.is_true(os.time() - killed_at <= 5)
        assert.matches("worker [^ ]+:" .. pids[1] .. ":%w+ stopped beating: " .. held .. " jobs it had "
            .. "not started went back to queue default", workers[2]:stderr())
        -- the job that was running: its reservation ends a heartbeat after the dead
        -- worker was found (two after its last renewal, if it had one), and it comes
        -- back charged: its
        -- second attempt, past --tries=1, fails it, as Laravel's worker does
        each_ran_once(61)
        assert.matches("died while App\\Jobs\\Spec %(attempt 1%) ran: it goes back to its queue with the "
            .. "attempt counted once its lease runs out", workers[2]:stderr())
        H.wait_until(function() return workers[2]:stderr():match("%[j1%] App\\Jobs\\Spec %(attempt 2%) failed: "
            .. "Illuminate\\Queue\\MaxAttemptsExceededException") end, 10, "j1's second attempt")
        assert.is_true(os.time() - killed_at <= 6, (os.time() - killed_at) .. " s")
        H.wait_until(function() return H.r("ZCARD", reserved) == 0 end, 5, "j1's end")
    end)

    it("keep their worker's heartbeat while a handler computes without yielding: no other process takes them", function()
        -- the heartbeat lives 0.4 s; the spinning handler keeps the CPU 0.7 s, less
        -- than the second a batch is held: the heartbeat's own thread beats on
        -- (worker/lease_keeper.h), so another luaworker finds the worker alive
        H.r("SET", "spec:spin", "0.7")
        start({ "--heartbeat=0.4" })
        local held = push_batch("spin")
        assert.is_true(held >= 2, "held " .. held)
        local id = H.r("SMEMBERS", WORKERS)[1]
        local alive = H.prefix .. "queues:default:luaworker:" .. id .. ":alive"
        local socket = require "socket"
        local deadline = socket.gettime() + 0.4
        while socket.gettime() < deadline do
            assert.are.equal(1, H.r("EXISTS", alive), "the heartbeat stopped while the handler computed")
            assert.are.equal(-1, give_back("dead", id))
        end
        H.wait_until(function() return #ran() == 61 end, 10, "the other jobs")
        H.wait_until(function() return H.r("ZCARD", reserved) == 0 end, 10, "the last job's end")
        H.sleep(0.5)
        each_ran_once(61)
    end)

    it("go back, uncharged, once they waited a second behind a slow job, and another worker runs them while it runs on", function()
        H.r("SET", "spec:slow", "8")
        start()
        local warm = {}
        for i = 1, 40 do warm[i] = spec_job("ok", "w" .. i) end
        push_all(warm)
        H.wait_until(function() return #ran() == 40 end, 20, "the first jobs")
        local batch = { spec_job("slow", "j1") }
        for i = 2, 21 do batch[i] = spec_job("ok", "j" .. i) end
        push_all(batch)
        H.wait_until(function() return #ran() == 41 end, 10, "the slow job to start")
        start()
        H.wait_until(function() return #ran() == 61 end, 15, "the jobs behind the slow one")
        local j1_reserved = false
        for _, member in ipairs(H.r("ZRANGE", reserved, 0, -1)) do
            if cjson.decode(member).id == "j1" then j1_reserved = true end
        end
        assert.is_true(j1_reserved, "the slow job ended before the jobs behind it ran")
        each_ran_once(61)
    end)

    -- Runs push_batch's jobs with a worker under libfaketime (more arguments: args)
    -- whose job j1 pauses its process for `seconds` (see HANDLER's pause), another
    -- luaworker doing `meanwhile`. Returns each job's runs: id -> list of attempts.
    local function paused_batch(seconds, meanwhile, args)
        local file = os.tmpname()
        H.write_file(file, "+0")
        H.r("MSET", "spec:root", H.root, "spec:faketime", file, "spec:pause", seconds,
            "spec:meanwhile", meanwhile)
        start(args, { env = faketime_env(file) })
        local warm = {}
        for i = 1, 40 do warm[i] = spec_job("ok", "w" .. i) end
        push_all(warm)
        H.wait_until(function() return #ran() == 40 end, 20, "the first jobs")
        -- tries 5: a job put back by a migrate is charged the attempt, as Laravel's migrate does
        local batch = { spec_job("pause", "j1") }
        for i = 2, 21 do batch[i] = spec_job("ok", "j" .. i) end
        for _, p in ipairs(batch) do p.maxTries = 5 end
        push_all(batch)
        H.wait_until(function() return #ran() >= 61 and H.r("LLEN", list) == 0
            and H.r("ZCARD", reserved) == 0 end, 20, "the jobs")
        H.sleep(0.3)
        os.remove(file)
        local held = tonumber(H.r("GET", "spec:held"))
        assert.is_true(held >= 2, "the worker held " .. held .. " jobs ahead")
        local runs = {}
        for _, r in ipairs(ran()) do
            runs[r.id] = runs[r.id] or {}
            table.insert(runs[r.id], r.attempts)
        end
        return runs
    end

    it("are not run when the machine was paused past their reservations, whose expiry is by the wall clock", function()
        -- a pause of 100 s, its monotonic clock stood still: by Redis' clock the jobs
        -- held ahead had expired, and another luaworker's migrate put them back on the
        -- queue, charged, as Laravel's does: this worker must not run them from its
        -- hands. (A heartbeat of 300 s: its lease, 150 s, outlives the pause.)
        local runs = paused_batch(100, "migrate", { "--heartbeat=300" })
        for id, attempts in pairs(runs) do
            assert.are.equal(1, #attempts, id .. " ran " .. #attempts .. " times")
        end
        assert.are.same({ 1 }, runs.j1)
    end)

    it("are not run when the machine was paused past its lease by the wall clock, once another process gave them back", function()
        -- a pause of 0.75 s (the lease is half the 1 s heartbeat; less than the second a
        -- batch is held): another luaworker found the heartbeat gone and gave back the
        -- jobs held ahead, uncharged
        local runs = paused_batch(0.75, "dead")
        for id, attempts in pairs(runs) do
            assert.are.same({ 1 }, attempts, id)
        end
    end)

    it("go back when the worker stops, and it leaves no record behind", function()
        -- (j1 keeps the CPU: the jobs behind it are still held when the TERM comes)
        H.r("SET", "spec:spin", "1.5")
        local w = start()
        push_batch("spin")
        w:kill("TERM")
        assert.are.equal(0, w:wait(10))
        assert.are.equal(20, H.r("LLEN", list))
        assert.are.same({ 0, 0 }, { H.r("ZCARD", reserved), #H.r("KEYS", H.prefix .. "queues:default:luaworker*") })
    end)
end)

describe("luaworker work's release of a job it no longer holds", function()
    before_each(function() H.flush() end)

    it("adds no second copy of the job: its reservation expired and was taken meanwhile", function()
        H.push(spec_job("slow-fail", "rel"))
        local w = H.spawn({ "work", "--handlers=" .. H.handlers({ ["App/Jobs/Spec.lua"] = HANDLER }),
            "--sleep=0.05", "--tries=3", "--backoff=60", "--stop-when-empty" })
        local _, delayed, reserved = H.keys()
        H.wait_until(function() return H.r("ZCARD", reserved) == 1 end, 10, "the job to start")
        -- another worker's migrate took the expired reservation, and its run ended
        H.r("DEL", reserved)
        assert.are.equal(0, w:wait(20), w:stderr())
        -- Laravel's release script would add it to the delayed set all the same
        assert.are.equal(0, H.r("ZCARD", delayed))
    end)
end)
