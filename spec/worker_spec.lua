-- `luaworker work`: Laravel's worker rules, checked in Redis after real runs.
local H = require "spec.helpers"
local cjson = H.json

local recorder = require "spec.recorder"
local RECORDER, spec_job, ran = recorder.HANDLER, recorder.spec_job, recorder.ran

local handlers

local function work(args, opts)
    local full = { "work", "--handlers=" .. handlers, "--sleep=0.05" }
    for _, a in ipairs(args or { "--stop-when-empty" }) do full[#full + 1] = a end
    return H.run(full, opts)
end

describe("luaworker work", function()
    before_each(function()
        H.flush()
        handlers = H.handlers({ ["App/Jobs/Spec.lua"] = RECORDER })
    end)

    it("runs a job, deletes its reservation and prints Laravel 8's console lines", function()
        local p = spec_job("ok")
        H.push(p)
        local r = work()
        assert.are.equal(0, r.status)
        assert.are.equal(1, #ran())
        local list, delayed, reserved = H.keys()
        assert.are.equal(0, H.r("LLEN", list))
        assert.are.equal(0, H.r("ZCARD", reserved))
        assert.are.equal(0, H.r("ZCARD", delayed))
        assert.matches("^%[%d%d%d%d%-%d%d%-%d%d %d%d:%d%d:%d%d%]%[" .. p.id .. "%] Processing: App\\Jobs\\Spec\n"
            .. "%[[^%]]+%]%[" .. p.id .. "%] Processed:  App\\Jobs\\Spec\n$", r.stdout)
    end)

    it("fails a job whose handler raised, with --tries=1, keeping the payload and traceback", function()
        local p = spec_job("error")
        local text = H.push(p)
        local r = work()
        assert.are.equal(0, r.status)
        local _, _, reserved = H.keys()
        assert.are.equal(0, H.r("ZCARD", reserved))
        local record = H.failed_record(p.uuid)
        assert.are.equal(text, record.payload)
        assert.are.equal("redis", record.connection)
        assert.are.equal("default", record.queue)
        assert.matches("boom from the handler", record.exception)
        assert.matches("stack traceback", record.exception)
        assert.matches("^%d%d%d%d%-%d%d%-%d%d %d%d:%d%d:%d%d$", record.failed_at)
        assert.are.same({ p.uuid }, H.r("ZRANGE", "laravel_database_luaworker:failed_jobs", 0, -1))
        assert.matches("Failed:     App\\Jobs\\Spec", r.stdout)
        assert.are.same({ "boom from the handler" }, (function()
            local list = H.r("LRANGE", "spec:failed", 0, -1)
            return { list[1]:match("boom from the handler") }
        end)())
    end)

    it("releases a job that raised while attempts remain, with the backoff for its attempt", function()
        local p = spec_job("error", { maxTries = 3, backoff = "1,5,10", attempts = 1 })
        H.push(p)
        local before = os.time()
        work()
        local _, delayed, reserved = H.keys()
        assert.are.equal(0, H.r("ZCARD", reserved))
        local members = H.zscores(delayed)
        assert.are.equal(1, #members)
        local copy, score = members[1][1], tonumber(members[1][2])
        assert.are.equal(2, cjson.decode(copy).attempts)
        -- attempt 2 of "1,5,10" -> 5 seconds
        assert.is_true(score >= before + 5 and score <= os.time() + 5)
        assert.are.equal(0, H.r("EXISTS", "laravel_database_luaworker:failed_jobs:" .. p.uuid))
    end)

    it("uses the last backoff entry past the end of the list, and --backoff when the payload has none", function()
        H.push(spec_job("error", { maxTries = 9, backoff = "1,2", attempts = 4 }))
        H.push(spec_job("error", { maxTries = 9 }))
        local before = os.time()
        work({ "--stop-when-empty", "--backoff=30,60" })
        local _, delayed = H.keys()
        local scores = {}
        for _, m in ipairs(H.zscores(delayed)) do
            scores[cjson.decode(m[1]).attempts] = tonumber(m[2]) - before
        end
        assert.is_true(scores[5] >= 1 and scores[5] <= 3)     -- "1,2", attempt 5 -> 2
        assert.is_true(scores[1] >= 29 and scores[1] <= 31)   -- --backoff 30,60, attempt 1 -> 30
    end)

    it("fails without running the handler a job that already used its attempts", function()
        local p = spec_job("ok", { maxTries = 2, attempts = 2 })
        H.push(p)
        local r = work()
        assert.are.equal(0, #ran())
        local record = H.failed_record(p.uuid)
        assert.are.equal("Illuminate\\Queue\\MaxAttemptsExceededException: App\\Jobs\\Spec has been "
            .. "attempted too many times or run too long. The job may have previously timed out.",
            record.exception)
        assert.matches("Processing: App\\Jobs\\Spec\n.*Failed:     App\\Jobs\\Spec\n", r.stdout)
    end)

    it("takes --tries when the payload has no maxTries, 0 meaning unlimited", function()
        H.push(spec_job("ok", { attempts = 5 }))
        work({ "--stop-when-empty", "--tries=0" })
        assert.are.equal(1, #ran())
        H.push(spec_job("ok", { attempts = 5 }))
        work({ "--stop-when-empty", "--tries=5" })
        assert.are.equal(1, #ran())
    end)

    it("lets retryUntil replace maxTries: a future one allows a run, a past one fails at once", function()
        H.push(spec_job("error", { maxTries = 1, attempts = 3, retryUntil = os.time() + 300, backoff = "60" }))
        work()
        assert.are.equal(1, #ran())
        local _, delayed = H.keys()
        assert.are.equal(1, H.r("ZCARD", delayed))

        H.flush()
        local p = spec_job("ok", { retryUntil = os.time() - 5 })
        H.push(p)
        work()
        assert.are.equal(0, #ran())
        assert.are.equal(1, H.r("EXISTS", "laravel_database_luaworker:failed_jobs:" .. p.uuid))
    end)

    it("counts exceptions in the cache store's job-exceptions key and fails at maxExceptions", function()
        local p = spec_job("error", { maxTries = 10, maxExceptions = 2, backoff = "60" })
        H.push(p)
        work()
        local key = H.cache_prefix .. "job-exceptions:" .. p.uuid
        assert.are.equal("1", H.rdb(1, "GET", key))
        local ttl = H.rdb(1, "TTL", key)
        assert.is_true(ttl > 86000 and ttl <= 86400)
        -- make the released job due again and run it: the second exception fails it
        local _, delayed = H.keys()
        local copy = H.r("ZRANGE", delayed, 0, -1)[1]
        H.r("ZADD", delayed, 0, copy)
        work()
        assert.are.equal(2, #ran())
        assert.are.equal(0, H.rdb(1, "EXISTS", key))
        assert.are.equal(1, H.r("EXISTS", "laravel_database_luaworker:failed_jobs:" .. p.uuid))
        assert.are.equal(0, H.r("ZCARD", delayed))
    end)

    it("lets a handler release, delete or fail its job", function()
        local released, deleted, failed = spec_job("release"), spec_job("delete"), spec_job("fail")
        H.push(released); H.push(deleted); H.push(failed)
        local before = os.time()
        local r = work()
        assert.are.equal(3, #ran())
        local list, delayed, reserved = H.keys()
        assert.are.equal(0, H.r("ZCARD", reserved))
        local members = H.zscores(delayed)
        assert.are.equal(1, #members)
        assert.are.equal(released.id, cjson.decode(members[1][1]).id)
        assert.is_true(tonumber(members[1][2]) >= before + 7)
        local record = H.failed_record(failed.uuid)
        assert.matches("^failed by the handler", record.exception)
        assert.are.equal(0, H.r("EXISTS", "laravel_database_luaworker:failed_jobs:" .. deleted.uuid))
        -- a job that failed itself prints Failed: then Processed:, as Laravel 8 does
        assert.matches("%[" .. failed.id .. "%] Failed:     App\\Jobs\\Spec\n[^\n]*%[" .. failed.id
            .. "%] Processed:  App\\Jobs\\Spec", r.stdout)
    end)

    it("fails a job whose handler is missing, naming the class and the paths tried", function()
        local p = H.payload({ displayName = "App\\Jobs\\Nowhere",
            data = { commandName = "App\\Jobs\\Elsewhere", command = 'O:8:"Nowhere1":0:{}' } })
        H.push(p)
        local r = work()
        assert.are.equal(0, r.status)
        local record = H.failed_record(p.uuid)
        assert.are.equal("no handler for App\\Jobs\\Nowhere: tried " .. handlers
            .. "/App/Jobs/Nowhere.lua, " .. handlers .. "/App/Jobs/Elsewhere.lua", record.exception:match("^[^\n]*"))
    end)

    it("falls back to data.commandName when no handler matches displayName", function()
        local p = spec_job("ok", { displayName = "Custom display name" })
        H.push(p)
        work()
        assert.are.equal(1, #ran())
    end)

    it("calls the method of a string job with its data, and leaves it reserved unless it deletes itself", function()
        handlers = H.handlers({ ["App/Handlers/Str.lua"] = [[
            local luaworker = require "luaworker"
            return { run = function(job, data)
                luaworker.redis("RPUSH", "spec:ran", luaworker.json.encode(data))
                if data.delete then job:delete() end
            end }
        ]] })
        local a = H.payload({ displayName = "App\\Handlers\\Str", job = "App\\Handlers\\Str@run",
            data = { x = 1, delete = true } })
        local b = H.payload({ displayName = "App\\Handlers\\Str", job = "App\\Handlers\\Str@run",
            data = { x = 2 } })
        a.retryUntil, b.retryUntil = nil, nil
        H.push(a); H.push(b)
        local r = work()
        local seen = ran()
        assert.are.same({ { x = 1, delete = true }, { x = 2 } }, seen)
        local _, _, reserved = H.keys()
        assert.are.equal(1, H.r("ZCARD", reserved))
        assert.matches("App\\Handlers\\Str@run returned without job:delete%(%) or job:release%(%)", r.stderr)
    end)

    it("raises a clear error when a handler writes a global, failing that job only", function()
        handlers = H.handlers({ ["App/Jobs/Spec.lua"] = "return { handle = function() counter = 1 end }",
            ["App/Jobs/Other.lua"] = RECORDER })
        local p = spec_job("ok")
        H.push(p)
        H.push(spec_job("ok", { displayName = "App\\Jobs\\Other" }))
        work()
        local record = H.failed_record(p.uuid)
        assert.matches("Spec.lua:1: assignment to global 'counter': handlers may not set globals "
            .. "%(declare it local%)", record.exception)
        assert.are.equal(1, #ran())
    end)

    it("keeps payloads that are not JSON or lack a numeric attempts in the failed store and goes on", function()
        local list = H.keys()
        H.r("RPUSH", list, "{not json")
        H.r("RPUSH", list, '{"uuid":"x","job":"y"}')
        H.push(spec_job("ok"))
        local r = work()
        assert.are.equal(0, r.status)
        assert.are.equal(1, #ran())
        local ids = H.r("ZRANGE", "laravel_database_luaworker:failed_jobs", 0, -1)
        assert.are.equal(2, #ids)
        local payloads = {}
        for _, id in ipairs(ids) do
            local rec = H.failed_record(id)
            payloads[rec.payload] = rec.exception
        end
        assert.matches('^payload is not a JSON object with a numeric "attempts"', payloads["{not json"])
        assert.matches('^payload is not a JSON object with a numeric "attempts"', payloads['{"uuid":"x","job":"y"}'])
        assert.matches("kept as failed job [%w%-]+ %(see luaworker failed%)", r.stderr)
    end)

    it("works queues in --queue priority order", function()
        H.push(spec_job("ok", { id = "low1" }), "low")
        H.push(spec_job("ok", { id = "high1" }), "high")
        H.push(spec_job("ok", { id = "high2" }), "high")
        work({ "--stop-when-empty", "--queue=high,low" })
        local order = {}
        for i, j in ipairs(ran()) do order[i] = j.id end
        assert.are.same({ "high1", "high2", "low1" }, order)
    end)

    it("moves due delayed jobs and expired reservations back to the queue before popping", function()
        local list, delayed, reserved = H.keys()
        local d = spec_job("ok", { id = "delayed-due" })
        local x = spec_job("ok", { id = "reserved-expired", attempts = 1, maxTries = 3 })
        local f = spec_job("ok", { id = "delayed-future" })
        H.r("ZADD", delayed, os.time() - 1, cjson.encode(d))
        H.r("ZADD", delayed, os.time() + 100, cjson.encode(f))
        H.r("ZADD", reserved, os.time() - 1, cjson.encode(x))
        work()
        local got = {}
        for _, j in ipairs(ran()) do got[j.id] = j.attempts end
        assert.are.same({ ["delayed-due"] = 1, ["reserved-expired"] = 2 }, got)
        assert.are.equal(1, H.r("ZCARD", delayed))
        assert.are.equal(0, H.r("LLEN", list))
    end)

    it("runs a job released with no delay again before --stop-when-empty ends the run, as "
        .. "Laravel's pop moves due jobs first", function()
        for _ = 1, 5 do
            H.flush()
            local p = spec_job("release_now")
            H.push(p)
            local r = work({ "--stop-when-empty", "--tries=2" })
            assert.are.equal(0, r.status, r.stderr)
            local runs = ran()
            assert.are.same({ 1, 2 }, { runs[1] and runs[1].attempts, runs[2] and runs[2].attempts })
            local list, delayed, reserved = H.keys()
            assert.are.same({ 0, 0, 0 }, { H.r("LLEN", list), H.r("ZCARD", delayed), H.r("ZCARD", reserved) })
        end
    end)

    it("reserves a job for --retry-after seconds while it runs", function()
        handlers = H.handlers({ ["App/Jobs/Spec.lua"] = [[
            local luaworker = require "luaworker"
            return { handle = function(job)
                local r = luaworker.redis("ZRANGE", luaworker.prefix .. "queues:default:reserved", 0, -1, "WITHSCORES")
                luaworker.redis("SET", "spec:reserved", luaworker.json.encode(r))
            end }
        ]] })
        H.push(spec_job("ok"))
        local before = os.time()
        work({ "--stop-when-empty", "--retry-after=500" })
        local r = cjson.decode(H.r("GET", "spec:reserved"))
        assert.are.equal(2, #r) -- member, score
        assert.are.equal(1, cjson.decode(r[1]).attempts)
        assert.is_true(tonumber(r[2]) >= before + 500 and tonumber(r[2]) <= os.time() + 500)
    end)

    it("fires the hooks registered in init.lua in Laravel's order", function()
        handlers = H.handlers({
            ["App/Jobs/Spec.lua"] = RECORDER,
            ["init.lua"] = [[
                local luaworker = require "luaworker"
                local function log(name)
                    return function(e)
                        local what = name
                        if e.job then what = what .. ":" .. e.job:id() end
                        if e.exception then what = what .. ":" .. tostring(e.exception):match("boom") end
                        luaworker.redis("RPUSH", "spec:events", what)
                    end
                end
                for _, n in ipairs({ "starting", "before", "after", "failing", "exception_occurred",
                                     "released_after_exception", "stopping" }) do
                    luaworker[n](log(n))
                end
            ]],
        })
        H.push(spec_job("ok", { id = "a" }))
        H.push(spec_job("error", { id = "b" }))
        H.push(spec_job("error", { id = "c", maxTries = 2, backoff = "60" }))
        work()
        assert.are.same({ "starting", "before:a", "after:a",
            "before:b", "failing:b:boom", "exception_occurred:b:boom",
            "before:c", "exception_occurred:c:boom", "released_after_exception:c:boom",
            "stopping" }, H.r("LRANGE", "spec:events", 0, -1))
    end)

    it("pauses the loop while a looping hook returns false", function()
        handlers = H.handlers({ ["App/Jobs/Spec.lua"] = RECORDER, ["init.lua"] = [[
            local luaworker = require "luaworker"
            luaworker.looping(function() return luaworker.redis("GET", "spec:go") == "1" end)
        ]] })
        H.push(spec_job("ok"))
        local w = H.spawn({ "work", "--handlers=" .. handlers, "--sleep=0.05" })
        H.sleep(0.5)
        assert.are.equal(0, #ran())
        H.r("SET", "spec:go", "1")
        H.wait_until(function() return #ran() == 1 end, 10, "the job to run")
        w:kill("TERM")
        assert.are.equal(0, w:wait())
    end)

    it("takes no job while the app is down for maintenance, unless --force", function()
        local app = H.tmpdir()
        H.write_file(app .. "/.env", "APP_NAME=Laravel\n")
        H.write_file(app .. "/storage/framework/down", "{}")
        H.push(spec_job("ok"))
        local w = H.spawn({ "work", "--handlers=" .. handlers, "--sleep=0.05", "--env-file=" .. app .. "/.env" })
        H.sleep(0.5)
        assert.are.equal(0, #ran())
        assert.are.equal(0, work({ "--once", "--sleep=0", "--env-file=" .. app .. "/.env" }).status)
        assert.are.equal(0, #ran())
        assert.are.equal(0, work({ "--once", "--force", "--env-file=" .. app .. "/.env" }).status)
        assert.are.equal(1, #ran())
        H.push(spec_job("ok"))
        os.remove(app .. "/storage/framework/down")
        H.wait_until(function() return #ran() == 2 end, 10, "the job after the app is up")
        w:stop()
    end)

    it("pauses on USR2 and resumes on CONT", function()
        local w = H.spawn({ "work", "--handlers=" .. handlers, "--sleep=0.05" })
        H.sleep(0.3)
        w:kill("USR2")
        H.sleep(0.2)
        H.push(spec_job("ok"))
        H.sleep(0.5)
        assert.are.equal(0, #ran())
        w:kill("CONT")
        H.wait_until(function() return #ran() == 1 end, 10, "the job after CONT")
        w:kill("TERM")
        assert.are.equal(0, w:wait())
    end)

    it("falls back to a current Laravel payload's dispatch delay when it has no backoff", function()
        -- Laravel 12.11+ adds createdAt and delay; backoff() is backoff ?? delay
        local p = spec_job("error", { maxTries = 3, createdAt = os.time(), delay = 40 })
        p.data.batchId = cjson.null
        H.push(p)
        local before = os.time()
        work()
        local _, delayed = H.keys()
        local members = H.zscores(delayed)
        assert.are.equal(1, #members)
        assert.is_true(members[1][2] >= before + 40 and members[1][2] <= os.time() + 40)
    end)

    it("raises Redis error replies from luaworker.redis in the handler, and gives handlers cjson", function()
        handlers = H.handlers({ ["App/Jobs/Spec.lua"] = [[
            local luaworker = require "luaworker"
            local cjson = require "cjson"
            return { handle = function(job)
                luaworker.redis("SET", "spec:json", cjson.encode({ ok = true }))
                luaworker.redis("INCR", "spec:json")
            end }
        ]] })
        local p = spec_job("ok")
        H.push(p)
        work()
        assert.are.equal('{"ok":true}', H.r("GET", "spec:json"))
        assert.matches("^ERR value is not an integer or out of range", H.failed_record(p.uuid).exception)
    end)

    it("dispatches jobs from a handler, taking the payload fields from the job's properties", function()
        handlers = H.handlers({ ["App/Jobs/Spec.lua"] = [[
            local luaworker = require "luaworker"
            return { handle = function(job, command)
                if command.action == "dispatch" then
                    luaworker.dispatch("App\\Jobs\\Next", { n = 1, tries = 3, backoff = { 1, 5, 10 },
                        timeout = 30, maxExceptions = 2, retryUntil = 2000000000, failOnTimeout = true },
                        { queue = "next" })
                elseif command.action == "bad-connection" then
                    luaworker.dispatch("App\\Jobs\\Next", {}, { connection = "sqs" })
                else
                    luaworker.dispatch("App\\Jobs\\Next", { 1, 2 })
                end
            end }
        ]] })
        H.push(spec_job("dispatch"))
        local bad, keyed = spec_job("bad-connection"), spec_job("list")
        H.push(bad); H.push(keyed)
        work()
        local list = H.keys("next")
        local p = cjson.decode(H.r("LRANGE", list, 0, -1)[1])
        assert.are.same({ "App\\Jobs\\Next", 3, 2, true, "1,5,10", 30, 2000000000, 0 },
            { p.displayName, p.maxTries, p.maxExceptions, p.failOnTimeout, p.backoff, p.timeout,
              p.retryUntil, p.attempts })
        assert.matches('^O:13:"App\\Jobs\\Next":17:{s:7:"backoff";a:3:{i:0;i:1;i:1;i:5;i:2;i:10;}',
            p.data.command)
        assert.matches('s:5:"queue";s:4:"next";', p.data.command)
        assert.matches("luaworker.dispatch: luaworker can only dispatch on its own connection "
            .. "'redis', not 'sqs'", H.failed_record(bad.uuid).exception)
        assert.matches("properties must be a table of named properties, got key 1",
            H.failed_record(keyed.uuid).exception)
    end)

    it("dispatches the next link of a chain on chainQueue, carrying the rest, before deleting the job", function()
        local function str(v) return string.format('s:%d:"%s";', #v, v) end
        -- an App\Jobs\Spec object with Queueable's properties, in 8.83's order
        local function job_object(queue, delay, chained, chain_queue)
            local props = { str("action") .. str("ok"), str("connection") .. "N;",
                str("queue") .. (queue and str(queue) or "N;"), str("chainConnection") .. "N;",
                str("chainQueue") .. (chain_queue and str(chain_queue) or "N;"),
                str("chainCatchCallbacks") .. "N;", str("delay") .. (delay and ("i:" .. delay .. ";") or "N;"),
                str("chained") .. "a:" .. #chained .. ":{" }
            for i, link in ipairs(chained) do props[#props] = props[#props] .. "i:" .. (i - 1) .. ";" .. str(link) end
            props[#props] = props[#props] .. "}"
            return 'O:13:"App\\Jobs\\Spec":8:{' .. table.concat(props) .. "}"
        end
        local link3 = job_object(nil, nil, {})
        local link2 = job_object(nil, 30, {})
        local head = job_object(nil, nil, { link2, link3 }, "next-q")
        local p = H.payload({ data = { commandName = "App\\Jobs\\Spec", command = head } })
        H.push(p)
        local before = os.time()
        work()
        assert.are.equal(1, #ran())
        local _, delayed = H.keys("next-q")
        local members = H.zscores(delayed)
        assert.are.equal(1, #members)
        assert.is_true(members[1][2] >= before + 30)
        local nxt = cjson.decode(members[1][1])
        assert.are.equal("App\\Jobs\\Spec", nxt.displayName)
        assert.are.equal(0, nxt.attempts)
        assert.are_not.equal(p.uuid, nxt.uuid)
        -- what PHP's Queueable::dispatchNextJobInChain makes of link2
        assert.are.equal(job_object("next-q", 30, { link3 }, "next-q"), nxt.data.command)
        local _, _, reserved = H.keys()
        assert.are.equal(0, H.r("ZCARD", reserved))
    end)

    it("rejects a negative, endless or too long release delay with a clear error", function()
        for _, delay in ipairs({ "-1", "math.huge", "2^31" }) do
            H.flush()
            handlers = H.handlers({ ["App/Jobs/Spec.lua"] = "return { handle = function(job) job:release("
                .. delay .. ") end }" })
            local p = spec_job("ok")
            H.push(p)
            work()
            assert.matches("Spec.lua:1: job:release%(delay%): expected a number of seconds from 0 to "
                .. "2147483647, got ", H.failed_record(p.uuid).exception)
            local _, delayed = H.keys()
            assert.are.equal(0, H.r("ZCARD", delayed))
        end
    end)

    it("does not warn when --timeout is not below --retry-after, on either queue: a job in flight keeps its "
        .. "reservation however long it runs", function()
        assert.is_nil(work({ "--stop-when-empty", "--timeout=90" }).stderr:match("warning"))
        local db = H.tmpdir() .. "/db.sqlite"
        H.sqlite(db, "CREATE TABLE jobs (id INTEGER PRIMARY KEY AUTOINCREMENT, queue TEXT NOT NULL, "
            .. "payload TEXT NOT NULL, attempts INTEGER NOT NULL, reserved_at INTEGER, "
            .. "available_at INTEGER NOT NULL, created_at INTEGER NOT NULL)")
        local env = { DB_CONNECTION = "sqlite", DB_DATABASE = db }
        local r = work({ "database", "--stop-when-empty", "--timeout=120" }, { env = env })
        assert.is_nil(r.stderr:match("warning"), r.stderr)
    end)

    it("warns when --heartbeat is over half of --retry-after", function()
        local r = work({ "--stop-when-empty", "--heartbeat=46" })
        assert.matches("warning: %-%-heartbeat=46 is over half of %-%-retry%-after=90: the jobs a dead "
            .. "worker reserved ahead may come back by retry_after, each with an attempt counted", r.stderr)
        assert.is_nil(work({ "--stop-when-empty", "--heartbeat=45" }).stderr:match("warning"))
    end)

    it("authenticates with REDIS_PASSWORD, and as an ACL user with REDIS_USERNAME, never printing them", function()
        H.r("ACL", "SETUSER", "specworker", "on", ">s3cret-pw", "~*", "&*", "+@all")
        H.r("CONFIG", "SET", "requirepass", "top-secret")
        local ok, err = pcall(function()
            H.push(spec_job("ok"))
            assert.are.equal(0, work({ "--stop-when-empty" }, { env = { REDIS_PASSWORD = "top-secret" } }).status)
            assert.are.equal(1, #ran())
            H.push(spec_job("ok"))
            assert.are.equal(0, work({ "--stop-when-empty" },
                { env = { REDIS_USERNAME = "specworker", REDIS_PASSWORD = "s3cret-pw" } }).status)
            assert.are.equal(2, #ran())
            local r = H.run({ "size" }, { env = { REDIS_PASSWORD = "wrong-pw" } })
            assert.are.equal(2, r.status)
            assert.are.equal("luaworker: Redis at 127.0.0.1:" .. H.port .. "/0 refused AUTH: WRONGPASS "
                .. "invalid username-password pair or user is disabled.\n", r.stderr)
            assert.is_nil((r.stdout .. r.stderr):match("wrong%-pw"))
            r = H.run({ "size" }, { env = { REDIS_PASSWORD = "top-secret", REDIS_DB = "999" } })
            assert.matches("/999 refused SELECT: ERR DB index is out of range", r.stderr)
        end)
        H.r("CONFIG", "SET", "requirepass", "")
        H.r("ACL", "DELUSER", "specworker")
        assert(ok, err)
    end)

    it("refuses to start, with status 2 and at once, where Redis refuses its login or an ACL forbids what "
        .. "the queue needs, naming the refusal and never the user or password", function()
        local users = {
            { "specnoscript", "-script", "refused SCRIPT LOAD: NOPERM this user has no permissions to run the "
                .. "'script|load' command" },
            { "specnoeval", "-evalsha", "NOPERM this user has no permissions to run the 'evalsha' command" },
            { "specotherkeys", "+@all", "NOPERM this user has no permissions to access one of the keys used "
                .. "as arguments", "~other:*" },
        }
        for _, u in ipairs(users) do
            H.r("ACL", "SETUSER", u[1], "on", ">s3cret-pw", u[4] or "~*", "&*", "+@all", u[2])
        end
        local ok, err = pcall(function()
            H.push(spec_job("ok"))
            for _, u in ipairs(users) do
                local started = os.time()
                local r = work({ "--stop-when-empty" }, { env = { REDIS_USERNAME = u[1], REDIS_PASSWORD = "s3cret-pw" } })
                assert.are.equal(2, r.status, r.stderr)
                assert.is_true(os.time() - started < 5, u[1] .. " was waited for")
                assert.matches("cannot start: Redis refuses the commands of queue default: .*" .. u[3]:gsub("%p", "%%%0"),
                    r.stderr)
                assert.is_nil(r.stderr:find("s3cret", 1, true))
                assert.is_nil(r.stderr:find(u[1], 1, true))
            end
            -- a worker meant to go on refuses the same, and so does a command
            local r = work({}, { env = { REDIS_USERNAME = "specnoeval", REDIS_PASSWORD = "wrong-pw" }, timeout = 20 })
            assert.are.equal(2, r.status, r.stderr)
            assert.matches("cannot start: Redis refuses the commands of queue default: Redis at [^ ]+ refused "
                .. "AUTH: WRONGPASS", r.stderr)
            assert.are.equal(0, #ran())
        end)
        for _, u in ipairs(users) do H.r("ACL", "DELUSER", u[1]) end
        assert(ok, err)
    end)

    it("skips a queue paused with Laravel 12.40+'s queue:pause key, with --laravel-version=12", function()
        local key = "laravel_database_laravel_cache_illuminate:queue:paused:redis:low"
        H.rdb(1, "SET", key, "b:1;")
        H.push(spec_job("ok", { id = "low" }), "low")
        H.push(spec_job("ok", { id = "high" }), "high")
        work({ "--stop-when-empty", "--queue=high,low", "--laravel-version=12" })
        assert.are.same({ "high" }, (function()
            local ids = {}
            for i, j in ipairs(ran()) do ids[i] = j.id end
            return ids
        end)())
        H.rdb(1, "DEL", key)
        work({ "--stop-when-empty", "--queue=high,low", "--laravel-version=12" })
        assert.are.equal(2, #ran())
    end)

    it("prints one JSON object per event with --json", function()
        local p = spec_job("ok")
        H.push(p)
        local r = work({ "--stop-when-empty", "--json" })
        local lines = {}
        for line in r.stdout:gmatch("[^\n]+") do lines[#lines + 1] = cjson.decode(line) end
        assert.are.equal(2, #lines)
        assert.are.equal("starting", lines[1].status)
        assert.are.equal("success", lines[2].status)
        assert.are.equal("deleted", lines[2].result)
        assert.are.equal(p.id, lines[2].id)
        assert.are.equal(p.uuid, lines[2].uuid)
        assert.are.equal("App\\Jobs\\Spec", lines[2].job)
        assert.are.equal("default", lines[2].queue)
        assert.are.equal("redis", lines[2].connection)
        assert.are.equal(1, lines[2].attempts)
        assert.is_number(lines[2].duration)
    end)

    it("uses EVALSHA and loads a script again after SCRIPT FLUSH", function()
        H.r("CONFIG", "RESETSTAT")
        local w = H.spawn({ "work", "--handlers=" .. handlers, "--sleep=0.05" })
        H.push(spec_job("ok"))
        H.wait_until(function() return #ran() == 1 end, 10, "the first job")
        H.r("SCRIPT", "FLUSH")
        H.push(spec_job("ok"))
        H.wait_until(function() return #ran() == 2 end, 10, "the job after SCRIPT FLUSH")
        w:stop()
        local stats = H.r("INFO", "commandstats")
        assert.matches("cmdstat_evalsha:", stats)
        assert.is_nil(stats:match("cmdstat_eval:"))
    end)
end)
