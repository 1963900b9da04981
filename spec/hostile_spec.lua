-- `luaworker work` against hostile payloads (spec/fixtures/hostile/corpus.lua):
-- each one is logged with the job and the problem and kept in the failed store
-- (or, when it is valid after all, runs), the worker keeps running, the good jobs
-- pushed between them run, and no payload is lost.
local H = require "spec.helpers"

local corpus = require "spec.fixtures.hostile.corpus"

local HANDLERS = "spec/fixtures/hostile_handlers"
local FAILED_INDEX = H.prefix .. "luaworker:failed_jobs"
local GOOD = 1000  -- good job i records GOOD + i

local function done_set()
    local set = {}
    for _, n in ipairs(H.r("LRANGE", "hostile:done", 0, -1)) do
        set[n] = (set[n] or 0) + 1
    end
    return set
end

local function count(t)
    local n = 0
    for _ in pairs(t) do n = n + 1 end
    return n
end

-- The payload id a log line names the job by (the corpus gives each its own).
local function payload_id(e)
    return e.payload:match('"id":"(hostile%d+)"')
end

-- A line of text holding both a and b (plain text).
local function line_with(text, a, b)
    for line in text:gmatch("[^\n]+") do
        if line:find(a, 1, true) and line:find(b, 1, true) then return line end
    end
    return nil
end

describe("luaworker work on hostile payloads", function()
    local worker, log, records, by_id, done

    setup(function()
        H.flush()
        for i, e in ipairs(corpus) do
            H.push(e.payload)
            H.push(corpus.good(GOOD + i))
        end
        local total = 2 * #corpus
        worker = H.spawn({ "work", "--handlers=" .. HANDLERS, "--sleep=0.05", "--no-watch",
            "--retry-after=30", "--timeout=10", "--memory-limit=256" })
        -- every payload either ran or is in the failed store
        pcall(H.wait_until, function()
            return count(done_set()) + H.r("ZCARD", FAILED_INDEX) >= total
                or worker:status() ~= nil
        end, 45, "every payload to be handled")
        done = done_set()
        records, by_id = {}, {}
        for _, id in ipairs(H.r("ZRANGE", FAILED_INDEX, 0, -1)) do
            local rec = H.failed_record(id)
            rec.id = id
            records[rec.payload or ""] = rec
            local ok, p = pcall(H.json.decode, rec.payload or "")
            if ok and type(p) == "table" and type(p.id) == "string" then by_id[p.id] = rec end
        end
        log = worker:stdout() .. worker:stderr()
    end)

    teardown(function()
        if worker then worker:stop() end
    end)

    it("has a corpus of at least 40 payloads", function()
        assert.is_true(#corpus >= 40)
    end)

    for _, e in ipairs(corpus) do
        if e.outcome == "failed" then
            it("keeps " .. e.name .. " in the failed store, logging the job and '" .. e.log .. "'", function()
                local rec = records[e.payload]
                if e.released then
                    rec = by_id[payload_id(e)]
                    assert.are.equal(1, rec and H.json.decode(rec.payload).attempts)
                end
                assert(rec, "no failed record holds the payload of entry " .. e.n)
                assert(rec.exception:find(e.problem, 1, true),
                    "entry " .. e.n .. ": exception lacks '" .. e.problem .. "': " .. rec.exception)
                local ref = e.by_record and rec.id or payload_id(e)
                assert(line_with(log, ref, e.log), "entry " .. e.n .. ": no log line names " .. ref
                    .. " and '" .. e.log .. "'")
                assert.is_nil(done[tostring(e.n)])
            end)
        else
            it("runs " .. e.name, function()
                assert.are.equal(1, done[tostring(e.n)], "entry " .. e.n .. " did not run once")
                assert.is_nil(records[e.payload])
            end)
        end
    end

    it("never runs a Lua file outside the handler directory", function()
        assert.are.same({}, H.r("LRANGE", "hostile:evil", 0, -1))
    end)

    it("runs every good job pushed between the hostile ones", function()
        for i = 1, #corpus do
            assert.are.equal(1, done[tostring(GOOD + i)], "good job " .. i .. " did not run once")
        end
    end)

    it("loses nothing: each payload ran or is in the failed store, and the queues and :reserved are empty", function()
        local failed, completed = 0, 0
        for _, e in ipairs(corpus) do
            if e.outcome == "failed" then failed = failed + 1 else completed = completed + 1 end
        end
        assert.are.equal(failed, count(records))
        assert.are.equal(completed + #corpus, count(done))
        local list, delayed, reserved = H.keys()
        assert.are.same({ 0, 0, 0 }, { H.r("LLEN", list), H.r("ZCARD", delayed), H.r("ZCARD", reserved) })
    end)

    it("keeps running: no worker died but by a job's timeout, and a job pushed afterwards runs", function()
        assert.is_nil(worker:status(), "the supervisor exited:\n" .. log)
        assert.is_nil(log:match("was killed by signal"), log)
        assert.is_nil(log:match("exited with status"), log)
        assert.is_nil(log:match("internal error"), log)
        H.push(corpus.good(9999))
        H.wait_until(function() return done_set()["9999"] end, 10, "the job pushed afterwards")
        worker:kill("TERM")
        assert.are.equal(0, worker:wait(10))
    end)
end)

describe("luaworker on payload values with control characters", function()
    local FORGED = "App\\Jobs\\Evil\n[2026-01-01 00:00:00][x] Processed:  App\\Jobs\\Forged\27]0;owned\7"

    before_each(function() H.flush() end)

    it("escapes them in its console lines, its error lines and the failed table", function()
        local p = H.payload({ displayName = FORGED, id = "id\r\nwith\27[31mnewline", maxTries = 1 })
        p.data.commandName = FORGED
        H.push(p)
        local r = H.run({ "work", "--handlers=" .. H.handlers({}), "--stop-when-empty", "--no-watch",
            "--sleep=0.05" })
        assert.are.equal(0, r.status, r.stderr)
        local out = r.stdout .. r.stderr
        assert.is_nil(out:find("\27", 1, true))
        assert.is_nil(out:find("\r", 1, true))
        assert.is_nil(out:find("\n[2026-01-01", 1, true))
        assert.matches("][id\\x0d\\x0awith\\x1b[31mnewline] Processing: App\\Jobs\\Evil\\x0a[2026-01-01 "
            .. "00:00:00][x] Processed:  App\\Jobs\\Forged\\x1b]0;owned\\x07\n", r.stdout, 1, true)
        local failed = H.run({ "failed" })
        assert.are.equal(0, failed.status)
        assert.is_nil(failed.stdout:find("\27", 1, true))
        assert.matches("| App\\Jobs\\Evil\\x0a[2026-01-01 00:00:00][x] Processed:  App\\Jobs\\Forged"
            .. "\\x1b]0;owned\\x07 |", failed.stdout, 1, true)
    end)
end)

describe("luaworker on a payload that names no job", function()
    before_each(function() H.flush() end)

    it("prints its name as empty, as Laravel prints a null one, and fails it at --tries", function()
        local p = H.payload({ id = "nameless" })
        p.displayName, p.job, p.data = nil, nil, nil
        H.push(p)
        local r = H.run({ "work", "--handlers=" .. H.handlers({}), "--stop-when-empty", "--no-watch",
            "--sleep=0.05", "--tries=1" })
        assert.are.equal(0, r.status, r.stderr)
        assert.is_nil(r.stdout:find("nil", 1, true), r.stdout)
        assert.matches("[nameless] Failed:     \n", r.stdout, 1, true)
        -- and on stderr: the line of its error
        assert.is_nil(r.stderr:find("nil (attempt", 1, true), r.stderr)
        assert.matches("%]  %(attempt 1%) raised", r.stderr)
        assert.are.equal(1, H.r("ZCARD", H.prefix .. "luaworker:failed_jobs"))
    end)
end)

describe("luaworker on a payload too large for its --memory-limit", function()
    before_each(function() H.flush() end)

    it("keeps it in the failed store byte for byte, with the reason, and runs the jobs behind it",
        function()
        local big = H.json.encode(H.payload({ id = "big", data = { commandName = "App\\Jobs\\Big",
            command = string.rep("x", 24 * 1048576) } }))
        H.push(big)
        for i = 1, 3 do H.push(H.payload({ id = "small" .. i, displayName = "App\\Jobs\\Record" })) end
        local handlers = H.handlers({ ["App/Jobs/Record.lua"] = H.RECORD_ID })
        local w = H.spawn({ "work", "--handlers=" .. handlers, "--memory-limit=16", "--memory=0", "--stop-when-empty",
            "--sleep=0.05", "--no-watch" })
        assert.are.equal(0, w:wait(30), w:stderr())
        assert.are.same({ "small1", "small2", "small3" }, H.r("LRANGE", "spec:ran", 0, -1))
        local ids = H.r("ZRANGE", H.prefix .. "luaworker:failed_jobs", 0, -1)
        assert.are.equal(1, #ids)
        local rec = H.failed_record(ids[1])
        assert.is_true(rec.payload == big, "the payload was not kept byte for byte")
        assert.are.equal("payload of " .. #big .. " bytes is larger than the 4194304 bytes a pop may "
            .. "take under the worker's --memory-limit (a quarter of it: a payload and its reserved copy "
            .. "are handed over together, then decoded)", rec.exception)
        assert.matches("kept as failed job " .. ids[1], w:stderr(), 1, true)
        assert.is_nil(w:stderr():find("worker 1 (pid", 1, true))
        local list, delayed, reserved = H.keys()
        assert.are.same({ 0, 0, 0 }, { H.r("LLEN", list), H.r("ZCARD", delayed), H.r("ZCARD", reserved) })
    end)

    it("takes no more payloads in one pop than its --memory-limit can hold", function()
        -- 1 MB each: fast jobs, which a pop would take up to 32 of at once
        for i = 1, 60 do
            H.push(H.payload({ id = "m" .. i, displayName = "App\\Jobs\\Record", pad = string.rep("p", 1048576) }))
        end
        local handlers = H.handlers({ ["App/Jobs/Record.lua"] = H.RECORD_ID })
        local w = H.spawn({ "work", "--handlers=" .. handlers, "--memory-limit=16", "--memory=0", "--stop-when-empty",
            "--sleep=0.05", "--no-watch" })
        assert.are.equal(0, w:wait(60), w:stderr())
        assert.are.equal(60, H.r("LLEN", "spec:ran"))
        assert.are.equal("", w:stderr())
    end)
end)
