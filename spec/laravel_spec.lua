-- Interop with a real Laravel 8.83 app (examples/laravel): Laravel dispatches,
-- luaworker runs Lua handlers (spec/fixtures/laravel_handlers), and Laravel's own
-- `queue:work` / `queue:restart` share the queues, the failed-job retry path, the
-- maxExceptions counter and the restart signal with luaworker.
local H = require "spec.helpers"
local socket = require "socket"
local cjson = H.json

local HANDLERS = "spec/fixtures/laravel_handlers"
local RAN = H.prefix .. "luaworker:ran"
local FAILED_INDEX = H.prefix .. "luaworker:failed_jobs"

local TITLE = "Café/Crème — 日本語 🎙"

local dispatch = H.dispatch

-- luaworker work over the fixture handlers (--stop-when-empty unless args say otherwise).
local function work(args, opts)
    local full = { "work", "--handlers=" .. HANDLERS, "--sleep=0.05" }
    for _, a in ipairs(args or { "--stop-when-empty" }) do full[#full + 1] = a end
    return H.run(full, opts)
end

local decoded_list = H.json_list

-- What the Lua handlers saw (spec_record.lua), and PHP's run records.
local function seen() return decoded_list("spec:seen") end
local function ran() return decoded_list(RAN) end

local function queue_sizes()
    local list, delayed, reserved = H.keys()
    return { list = H.r("LLEN", list), delayed = H.r("ZCARD", delayed),
             reserved = H.r("ZCARD", reserved) }
end

local function describe_run(r)
    return "status " .. tostring(r.status) .. "\nstdout:\n" .. tostring(r.stdout)
        .. "\nstderr:\n" .. tostring(r.stderr)
end

local spawn_artisan = H.spawn_artisan

describe("Laravel 8 interop", function()
    local procs

    setup(function()
        H.laravel_setup()
    end)

    before_each(function()
        H.flush()
        procs = {}
        H.artisan({ "queue:flush" })
    end)

    after_each(function()
        for _, p in ipairs(procs) do p.stop(p) end
    end)

    local function track_lua(p)
        procs[#procs + 1] = { stop = function() p:stop() end }
        return p
    end

    local function track_php(p)
        procs[#procs + 1] = p
        return p
    end

    it("gives a Lua handler every property of a Laravel-dispatched ProcessPodcast, exactly", function()
        local pushed = dispatch("ProcessPodcast")
        assert.are.equal(1, #pushed)
        local list = H.keys()
        local raw = H.r("LRANGE", list, 0, -1)[1]
        local payload = cjson.decode(raw)

        local r = work()
        assert.are.equal(0, r.status, describe_run(r))
        local s = seen()
        assert.are.equal(1, #s, describe_run(r))
        s = s[1]

        local NULL = "<null>"
        assert.are.same({
            ["<class>"] = "App\\Jobs\\ProcessPodcast",
            tries = 3, maxExceptions = 2, timeout = 30, backoff = { 1, 5, 10 },
            podcast = "My Podcast",
            episode = 42,          -- protected
            secret = "s3cr3t",     -- private
            meta = {
                tags = { "php", "lua", "redis" },
                stats = { plays = 1200, ratio = 0.5, live = false },
                nested = { list = { 1, "two", 3, NULL }, map = { a = { b = "c" } } },
                empty = "<empty>",
            },
            nothing = NULL,
            published = true,
            rating = 4.75,
            bigId = { int64 = "9007199254740993" },
            title = TITLE,
            job = NULL, connection = NULL, queue = NULL, chainConnection = NULL,
            chainQueue = NULL, chainCatchCallbacks = NULL, delay = NULL, afterCommit = NULL,
            middleware = "<empty>", chained = "<empty>",
        }, s.command)

        -- Bare names only: no mangled "\0*\0episode" or "\0Class\0secret" keys.
        local names = { "tries", "maxExceptions", "timeout", "backoff", "podcast", "episode",
            "secret", "meta", "nothing", "published", "rating", "bigId", "title", "job",
            "connection", "queue", "chainConnection", "chainQueue", "chainCatchCallbacks",
            "delay", "afterCommit", "middleware", "chained" }
        table.sort(names)
        assert.are.same(names, s.keys)

        -- Types as Lua sees them: null is a value distinct from a missing property,
        -- the big integer is an exact int64 cdata (arithmetic stays exact).
        assert.are.equal("null", s.types.nothing)
        assert.is_true(s.nothing_is_null)
        assert.is_true(s.nothing_is_present)
        assert.is_true(s.missing_is_nil)
        assert.are.equal("boolean", s.types.published)
        assert.are.equal("number", s.types.rating)
        assert.are.equal("cdata", s.types.bigId)
        assert.are.equal("9007199254740994", s.big_id_plus_one)
        assert.are.equal("string", s.types.title)
        assert.are.equal(31, s.title_bytes)

        -- Class names: the command's, and none for the PHP arrays inside it.
        assert.are.equal("App\\Jobs\\ProcessPodcast", s.class)
        assert.are.equal("App\\Jobs\\ProcessPodcast", s.classes["$"])
        assert.are.equal("<array>", s.classes["$.meta"])
        assert.are.equal("<array>", s.classes["$.meta.nested.map"])

        -- The job as Laravel built it.
        assert.are.equal(1, s.attempts)
        assert.are.equal(pushed[1].uuid, s.uuid)
        assert.are.equal(payload.uuid, s.uuid)
        assert.are.equal(pushed[1].id, s.id)
        assert.are.equal("App\\Jobs\\ProcessPodcast", s.display_name)
        assert.are.equal("App\\Jobs\\ProcessPodcast", s.name)
        assert.are.equal("default", s.queue)
        assert.are.equal(3, s.max_tries)
        assert.are.equal(2, s.max_exceptions)
        assert.are.equal(30, s.timeout)
        assert.are.equal("1,5,10", s.backoff)
        assert.are.equal(raw, s.raw_body)
        assert.are.equal(1, cjson.decode(s.reserved_body).attempts)
        assert.are.equal(1, s.reserved_count)

        -- Done: nothing left reserved, delayed or pending, nothing failed.
        assert.are.same({ list = 0, delayed = 0, reserved = 0 }, queue_sizes())
        assert.are.equal(0, H.r("ZCARD", FAILED_INDEX))
    end)

    it("runs a job dispatched with --delay=3 only once it is due", function()
        local w = track_lua(H.spawn({ "work", "--handlers=" .. HANDLERS, "--sleep=0.2" }))
        -- 3 s, so that artisan's start-up cannot use up the delay before it is checked
        local pushed = dispatch("Simple", "--delay=3", "--args=[7]")
        assert.are.equal(1, #pushed)
        local _, delayed = H.keys()
        local members = H.r("ZRANGE", delayed, 0, -1)
        assert.are.equal(1, #members, "the job should wait in :delayed")
        local due = tonumber(H.r("ZSCORE", delayed, members[1]))
        assert.are.equal(pushed[1].uuid, cjson.decode(members[1]).uuid)

        -- While it is not due, the running worker leaves it alone. (The clock PHP's and
        -- luaworker's time() read: Lua's os.time() here lags it at a second's start.)
        while socket.gettime() < due do
            assert.are.equal(0, H.r("LLEN", "spec:simple"), "ran before it was due")
            assert.are.equal(1, H.r("ZCARD", delayed))
            H.sleep(0.05)
        end
        H.wait_until(function() return H.r("LLEN", "spec:simple") > 0 end, 10, "the delayed job to run")
        local s = seen()
        assert.are.equal(1, #s)
        assert.are.equal(pushed[1].uuid, s[1].uuid)
        assert.are.equal(7, s[1].command.n)
        assert.is_true(s[1].time >= due, "ran at " .. s[1].time .. ", due at " .. due)
        assert.are.equal(1, s[1].attempts)

        w:kill("TERM")
        assert.are.equal(0, w:wait(10), w:stderr())
        assert.are.same({ list = 0, delayed = 0, reserved = 0 }, queue_sizes())
    end)

    it("calls the string job's method with the data Laravel pushed", function()
        local data = { a = 1, s = "x/y é", list = { 1, "two", 3.5, true }, nested = { k = "v", n = -2 } }
        local pushed = dispatch("App\\Handlers\\StringHandler@handle", "--args=" .. cjson.encode(data))
        assert.are.equal(1, #pushed)
        local payload = cjson.decode(H.r("LRANGE", (H.keys()), 0, -1)[1])
        assert.are.equal("App\\Handlers\\StringHandler@handle", payload.job)

        local r = work()
        assert.are.equal(0, r.status, describe_run(r))
        local s = seen()
        assert.are.equal(1, #s, describe_run(r))
        assert.are.same(data, s[1].command)
        assert.are.same(payload.data, s[1].command)
        assert.are.equal("<none>", s[1].class)
        assert.are.equal(pushed[1].uuid, s[1].uuid)
        assert.are.equal(1, s[1].attempts)
        -- The handler deleted it; nothing ran in PHP, nothing failed.
        assert.are.same({ list = 0, delayed = 0, reserved = 0 }, queue_sizes())
        assert.are.equal(0, H.r("LLEN", RAN))
        assert.are.equal(0, H.r("ZCARD", FAILED_INDEX))
    end)

    it("releases a job whose Lua handler raised with its backoff, and PHP then runs attempt 2", function()
        local pushed = dispatch("ProcessPodcast")
        H.r("SET", "spec:action:ProcessPodcast", "error")
        local before = os.time()
        local r = work()
        local after = os.time()
        assert.are.equal(0, r.status, describe_run(r))
        assert.are.equal(1, #seen(), describe_run(r))

        local _, delayed, reserved = H.keys()
        assert.are.equal(0, H.r("ZCARD", reserved))
        assert.are.equal(0, H.r("LLEN", (H.keys())))
        local members = H.r("ZRANGE", delayed, 0, -1)
        assert.are.equal(1, #members, describe_run(r))
        local copy = cjson.decode(members[1])
        assert.are.equal(pushed[1].uuid, copy.uuid)
        assert.are.equal(1, copy.attempts)
        -- backoff "1,5,10": 1 second after the first attempt.
        local due = tonumber(H.r("ZSCORE", delayed, members[1]))
        assert.is_true(due >= before + 1 and due <= after + 1,
            string.format("score %d, expected now+1 with now in [%d, %d]", due, before, after))
        assert.are.equal(0, H.r("ZCARD", FAILED_INDEX))

        -- Laravel's own worker takes it once it is due.
        H.wait_until(function() return os.time() >= due end, 5, "the job to be due")
        H.wait_until(function()
            H.artisan({ "queue:work", "--once", "--sleep=0" })
            return H.r("LLEN", RAN) > 0
        end, 20, "php artisan queue:work --once to run the released job")
        local ran_records = ran()
        assert.are.equal(1, #ran_records)
        local rec = ran_records[1]
        assert.are.equal("php", rec.runner)
        assert.are.equal("App\\Jobs\\ProcessPodcast", rec.class)
        assert.are.equal(pushed[1].uuid, rec.uuid)
        assert.are.equal(pushed[1].id, rec.id)
        assert.are.equal(2, rec.attempts)
        assert.are.equal(TITLE, rec.props.title)
        assert.are.same({ list = 0, delayed = 0, reserved = 0 }, queue_sizes())
    end)

    it("fails a job in its store with the original payload; luaworker retry hands it to PHP", function()
        local pushed = dispatch("Simple", "--args=[5]")
        local uuid = pushed[1].uuid
        local original = H.r("LRANGE", (H.keys()), 0, -1)[1]
        H.r("SET", "spec:action:Simple", "error")
        local r = work()
        assert.are.equal(0, r.status, describe_run(r))
        assert.are.equal(1, #seen(), describe_run(r))
        assert.are.same({ list = 0, delayed = 0, reserved = 0 }, queue_sizes())

        -- Recorded once, with the payload exactly as Laravel pushed it.
        assert.are.same({ uuid }, H.r("ZRANGE", FAILED_INDEX, 0, -1))
        local key = FAILED_INDEX .. ":" .. uuid
        assert.are.equal(original, H.r("HGET", key, "payload"))
        assert.are.equal("default", H.r("HGET", key, "queue"))
        assert.are.equal("redis", H.r("HGET", key, "connection"))
        assert.matches("spec handler asked to error", H.r("HGET", key, "exception"), 1, true)
        -- The handler's failed() ran.
        local failed = decoded_list("spec:failed")
        assert.are.equal(1, #failed)
        assert.are.equal(uuid, failed[1].uuid)

        local listing = H.run({ "failed" })
        assert.are.equal(0, listing.status, describe_run(listing))
        assert.matches(uuid, listing.stdout, 1, true)
        assert.matches("App\\Jobs\\Simple", listing.stdout, 1, true)

        local retry = H.run({ "retry", uuid })
        assert.are.equal(0, retry.status, describe_run(retry))
        assert.matches("The failed job [" .. uuid .. "] has been pushed back onto the queue!",
            retry.stdout, 1, true)
        assert.are.equal(0, H.r("ZCARD", FAILED_INDEX))
        local back = H.r("LRANGE", (H.keys()), 0, -1)
        assert.are.equal(1, #back)
        local p = cjson.decode(back[1])
        assert.are.equal(uuid, p.uuid)
        assert.are.equal(0, p.attempts)
        assert.are.equal(cjson.decode(original).data.command, p.data.command)

        H.artisan({ "queue:work", "--stop-when-empty", "--sleep=0" })
        local rec = ran()
        assert.are.equal(1, #rec)
        assert.are.equal("php", rec[1].runner)
        assert.are.equal("App\\Jobs\\Simple", rec[1].class)
        assert.are.equal(uuid, rec[1].uuid)
        assert.are.equal(1, rec[1].attempts)
        assert.are.same({ n = 5 }, rec[1].props)
        assert.are.same({ list = 0, delayed = 0, reserved = 0 }, queue_sizes())
        assert.matches("No failed jobs!", H.run({ "failed" }).stdout, 1, true)
    end)

    it("counts a Lua handler's exception in Laravel's job-exceptions cache key (DB 1)", function()
        local pushed = dispatch("ProcessPodcast")
        local key = H.cache_prefix .. "job-exceptions:" .. pushed[1].uuid
        H.r("SET", "spec:action:ProcessPodcast", "error")
        local r = work()
        assert.are.equal(0, r.status, describe_run(r))
        assert.are.equal(1, #seen(), describe_run(r))
        assert.are.equal("1", H.rdb(1, "GET", key))
        local ttl = H.rdb(1, "TTL", key)
        assert.is_true(ttl > 86300 and ttl <= 86400, "TTL " .. tostring(ttl))
        assert.are.equal(0, H.r("EXISTS", key), "the counter belongs in the cache database")
        assert.are.equal(1, H.r("ZCARD", (select(2, H.keys()))))
    end)

    it("fails the job at its second exception (maxExceptions 2) and deletes the counter", function()
        local pushed = dispatch("ProcessPodcast")
        local uuid = pushed[1].uuid
        local key = H.cache_prefix .. "job-exceptions:" .. uuid
        H.r("SET", "spec:action:ProcessPodcast", "error")
        local r = work()
        assert.are.equal(0, r.status, describe_run(r))
        assert.are.equal("1", H.rdb(1, "GET", key))
        local _, delayed = H.keys()
        local due = tonumber(H.r("ZSCORE", delayed, H.r("ZRANGE", delayed, 0, -1)[1]))
        H.wait_until(function() return os.time() >= due end, 5, "the job to be due")
        r = work()
        assert.are.equal(0, r.status, describe_run(r))
        local s = seen()
        assert.are.equal(2, #s, describe_run(r))
        assert.are.equal(2, s[2].attempts)
        -- attempts 2 < tries 3, but 2 exceptions reach maxExceptions.
        assert.are.same({ uuid }, H.r("ZRANGE", FAILED_INDEX, 0, -1))
        assert.are.equal(0, H.rdb(1, "EXISTS", key))
        assert.are.same({ list = 0, delayed = 0, reserved = 0 }, queue_sizes())
    end)

    it("exits 0 when php artisan queue:restart is broadcast", function()
        dispatch("Simple", "--args=[1]")
        local w = track_lua(H.spawn({ "work", "--handlers=" .. HANDLERS, "--sleep=0.1" }))
        -- Once it ran a job it has read the restart key's value at start.
        H.wait_until(function() return H.r("LLEN", "spec:simple") > 0 end, 10, "the worker to run a job")
        assert.is_nil(w:status())
        H.artisan({ "queue:restart" })
        assert.is_truthy(H.rdb(1, "GET", H.cache_prefix .. "illuminate:queue:restart"))
        assert.are.equal(0, w:wait(5), w:stderr())
    end)

    it("makes a running php artisan queue:work exit with luaworker restart", function()
        dispatch("Simple", "--args=[1]")
        local php = track_php(spawn_artisan({ "queue:work", "--sleep=1" }))
        H.wait_until(function() return H.r("LLEN", RAN) > 0 end, 15, "queue:work to run a job")
        assert.is_nil(php.status(), php.output())
        local r = H.run({ "restart" })
        assert.are.equal(0, r.status, describe_run(r))
        assert.are.equal(0, php.wait(10), php.output())
    end)

    it("shares a queue of 2000 jobs between php queue:work and luaworker, each run once", function()
        local N = 2000
        local pushed = dispatch("Simple", "--count=" .. N, '--args=["{i}"]')
        assert.are.equal(N, #pushed)
        -- Lua jobs take 2 ms, so luaworker alone would need 4 s: PHP (which boots in
        -- a fraction of that) gets its share, and luaworker starts first anyway.
        H.r("SET", "spec:simple:delay", "0.002")
        local lua = track_lua(H.spawn({ "work", "--handlers=" .. HANDLERS, "--stop-when-empty",
            "--sleep=0.05" }))
        local php = track_php(spawn_artisan({ "queue:work", "--stop-when-empty", "--sleep=0" }))
        assert.are.equal(0, lua:wait(60), lua:stderr())
        assert.are.equal(0, php.wait(60), php.output())

        local count, by = {}, { lua = 0, php = 0 }
        local function saw(n, who)
            local k = string.format("%d", n)
            count[k] = (count[k] or 0) + 1
            by[who] = by[who] + 1
        end
        for _, n in ipairs(H.r("LRANGE", "spec:simple", 0, -1)) do saw(tonumber(n), "lua") end
        for _, rec in ipairs(ran()) do
            assert.are.equal("php", rec.runner)
            saw(rec.props.n, "php")
        end
        for i = 1, N do
            assert.are.equal(1, count[string.format("%d", i)], "job n=" .. i .. " ran "
                .. tostring(count[string.format("%d", i)] or 0) .. " times")
        end
        assert.are.equal(N, by.lua + by.php)
        assert.is_true(by.lua > 0, "luaworker ran no job")
        assert.is_true(by.php > 0, "php queue:work ran no job")
        assert.are.same({ list = 0, delayed = 0, reserved = 0 }, queue_sizes())
        assert.are.equal(0, H.r("ZCARD", FAILED_INDEX))
    end)
end)
