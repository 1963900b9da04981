-- A handler's job middleware (runtime/worker/job_middleware.lua): the handler's list
-- runs around handle as a PHP job's middleware() does, and Laravel's own take
-- Laravel's keys in the app's stores, so that PHP's queue:work (the Laravel 8 app)
-- and luaworker honour one limit.
local H = require "spec.helpers"
local cjson = H.json

local TRAIL = H.prefix .. "overlap:trail"
local LOCK = H.cache_prefix .. "laravel-queue-overlap:App\\Jobs\\Overlapping:shared"

local function runs_without_overlap()
    return H.runs_without_overlap(H.r("LRANGE", TRAIL, 0, -1))
end

local fleet = H.worker_set()

local function work(handlers, args)
    local full = { "work", "--handlers=" .. handlers, "--sleep=0.05", "--no-watch", "--tries=100" }
    for _, a in ipairs(args or {}) do full[#full + 1] = a end
    return fleet.spawn(full)
end

describe("job middleware", function()
    setup(H.laravel_setup)
    before_each(H.flush)
    after_each(fleet.stop_all)

    it("without_overlapping shares WithoutOverlapping's lock with PHP's queue:work: no two jobs of one key "
        .. "ever run at once, whichever runtime runs them", function()
        H.dispatch("Overlapping", "--count=16", '--args={"n":"{i}","ms":150}')
        work(H.root .. "/spec/fixtures/middleware_handlers", { "--processes=2", "--concurrency=4" })
        fleet.artisan({ "queue:work", "--sleep=0", "--tries=100" })
        fleet.artisan({ "queue:work", "--sleep=0", "--tries=100" })
        local runs, by = H.overlap_runs(TRAIL, 16, 60)
        assert.are.equal(16, #runs)
        assert.is_true(by.lua > 0, cjson.encode(by))
        assert.are.equal(0, H.r("EXISTS", LOCK))
    end)

    it("without_overlapping holds Laravel's key, with the owner and time to live Laravel's lock has, and "
        .. "releases the job for release_after while another holds it", function()
        local handlers = H.handlers({ ["App/Jobs/Overlapping.lua"] = [[
local luaworker = require "luaworker"
return {
    middleware = { luaworker.middleware.without_overlapping("shared", { release_after = 7, expire_after = 60 }) },
    handle = function(job, command)
        luaworker.redis("RPUSH", luaworker.prefix .. "overlap:trail", "s " .. command.n .. " lua")
        luaworker.sleep(command.ms / 1000)
        luaworker.redis("RPUSH", luaworker.prefix .. "overlap:trail", "e " .. command.n .. " lua")
    end,
}
]] })
        H.dispatch("Overlapping", "--count=2", '--args={"n":"{i}","ms":3000}')
        work(handlers, { "--concurrency=2" })
        H.wait_until(function() return H.r("EXISTS", LOCK) == 1 end, 10, "the lock")
        local owner, ttl = H.r("GET", LOCK), H.r("TTL", LOCK)
        assert.matches("^[A-Za-z0-9]+$", owner)
        assert.are.equal(16, #owner)
        assert.is_true(ttl > 50 and ttl <= 60, tostring(ttl))
        -- the second job, held back: released for 7 s with its attempt counted
        local _, delayed = H.keys()
        H.wait_until(function() return H.r("ZCARD", delayed) == 1 end, 10, "the second job's release")
        local held = H.r("ZRANGE", delayed, 0, -1, "WITHSCORES")
        assert.are.equal(1, cjson.decode(held[1]).attempts)
        local wait = tonumber(held[2]) - os.time()
        assert.is_true(wait >= 5 and wait <= 7, tostring(wait))
        -- the lock goes when the job's code ends
        H.wait_until(function() return H.r("EXISTS", LOCK) == 0 end, 10, "the lock's release")
    end)

    it("without_overlapping with dont_release deletes the job held back, as Laravel's dontRelease()", function()
        local handlers = H.handlers({ ["App/Jobs/Overlapping.lua"] = [[
local luaworker = require "luaworker"
return {
    middleware = { luaworker.middleware.without_overlapping("shared", { dont_release = true }) },
    handle = function(job, command)
        luaworker.redis("RPUSH", luaworker.prefix .. "overlap:trail", "s " .. command.n .. " lua")
        luaworker.redis("RPUSH", luaworker.prefix .. "overlap:trail", "e " .. command.n .. " lua")
    end,
}
]] })
        -- held by another process: a PHP worker's lock, as Laravel writes it
        H.r("SET", LOCK, "someoneelse00000")
        H.dispatch("Overlapping", "--count=1", '--args={"n":"1","ms":0}')
        local r = H.run({ "work", "--handlers=" .. handlers, "--stop-when-empty" })
        assert.are.equal(0, r.status, r.stderr)
        assert.are.equal(0, H.r("LLEN", TRAIL))
        local list, delayed, reserved = H.keys()
        assert.are.same({ 0, 0, 0 }, { H.r("LLEN", list), H.r("ZCARD", delayed), H.r("ZCARD", reserved) })
        -- another owner's lock is not released
        assert.are.equal("someoneelse00000", H.r("GET", LOCK))
    end)

    -- RateLimited's key: md5 of the limiter's name and the limit's by
    local function md5(text)
        local f = io.popen("printf %s " .. H.quote(text) .. " | md5sum")
        local sum = f:read("*l"):match("^%x+")
        f:close()
        return sum
    end

    local RUNS = H.prefix .. "limited:runs"

    -- Jobs of App\Jobs\Limited (args: their arguments but n) run in turns, each to the
    -- end: 2 by luaworker (both run), 2 by PHP's queue:work (one runs, one is held
    -- back), 2 by luaworker (both held back). Returns the runs and the jobs released
    -- (ZRANGE WITHSCORES of the delayed set).
    -- (env: the environment of both, CACHE_DRIVER=file for the app's file store)
    local function limited(args, env)
        local function turn(n, run)
            args.n = "t" .. n
            H.dispatch("Limited", "--count=2", "--args=" .. cjson.encode(args))
            run()
        end
        local function lua()
            local r = H.run({ "work", "--handlers=" .. H.root .. "/spec/fixtures/middleware_handlers",
                "--stop-when-empty", "--tries=100", "--env-file=" .. H.app .. "/.env" }, { env = env })
            assert.are.equal(0, r.status, r.stderr)
        end
        turn(1, lua)
        turn(2, function() H.artisan({ "queue:work", "--stop-when-empty", "--tries=100" }, env) end)
        turn(3, lua)
        local runs = {}
        for i, r in ipairs(H.r("LRANGE", RUNS, 0, -1)) do runs[i] = r:match("^(%S+ %a+)") end
        local _, delayed = H.keys()
        return runs, H.r("ZRANGE", delayed, 0, -1, "WITHSCORES")
    end

    it("rate_limited_with_redis counts in RateLimitedWithRedis's limiter with PHP's queue:work: 3 a minute "
        .. "in all, the rest released until the window ends, plus 3 s", function()
        local runs, held = limited({ redis = true })
        assert.are.same({ "t1 lua", "t1 lua", "t2 php" }, runs)
        assert.are.equal(6, #held)
        local window = H.hash(H.prefix .. md5("paymentsacme"))
        -- every job's try counted in the one window, PHP's and luaworker's
        assert.are.equal("6", window.count)
        for i = 2, #held, 2 do
            assert.is_true(math.abs(tonumber(held[i]) - (tonumber(window["end"]) + 3)) <= 1, held[i])
        end
    end)

    it("rate_limited counts in RateLimited's cache-store limiter with PHP's queue:work: 3 a minute in all, "
        .. "the rest released until its timer ends, plus 3 s", function()
        local before = os.time()
        local runs, held = limited({ redis = false })
        assert.are.same({ "t1 lua", "t1 lua", "t2 php" }, runs)
        assert.are.equal(6, #held)
        local key = H.cache_prefix .. md5("paymentsacme")
        assert.are.equal("3", H.rdb(1, "GET", key))
        -- set a minute after the first hit, in the first turn (a busy machine's turns take long)
        local timer = tonumber(H.rdb(1, "GET", key .. ":timer"))
        assert.is_true(timer >= before + 60 and timer <= os.time() + 60,
            timer .. " not within " .. (before + 60) .. ".." .. (os.time() + 60))
        for i = 2, #held, 2 do
            assert.is_true(math.abs(tonumber(held[i]) - (timer + 3)) <= 1, held[i])
        end
    end)

    it("luaworker.throttle shares Redis::throttle's limit with PHP (2 every 10 s): held back, the fallback "
        .. "releases the job, which runs once the window passed", function()
        local function lua()
            local r = H.run({ "work", "--handlers=" .. H.root .. "/spec/fixtures/middleware_handlers",
                "--stop-when-empty", "--tries=100" })
            assert.are.equal(0, r.status, r.stderr)
        end
        local function dispatch(n)
            H.dispatch("Limited", '--args={"n":"' .. n .. '","throttle":true}')
        end
        dispatch("a")
        lua()
        dispatch("b")
        H.artisan({ "queue:work", "--stop-when-empty", "--tries=100" })
        dispatch("c")
        lua()
        local runs = {}
        for i, r in ipairs(H.r("LRANGE", RUNS, 0, -1)) do runs[i] = r:match("^(%S+ %a+)") end
        -- the three tries in one window, PHP's and luaworker's
        assert.are.equal("3", H.hash(H.prefix .. "api").count)
        assert.are.same({ "a lua", "b php" }, runs)
        local _, delayed = H.keys()
        assert.are.equal(1, H.r("ZCARD", delayed))
        -- the window passes; the job held back runs
        H.wait_until(function()
            lua()
            return H.r("LLEN", RUNS) == 3
        end, 20, "the job held back")
        assert.matches("^c lua ", H.r("LRANGE", RUNS, 2, 2)[1])
    end)

    it("luaworker.funnel takes Redis::funnel's slots (<name>1..<limit>, a 20-character holder, release_after "
        .. "seconds), waits block seconds for one, and calls the fallback when none comes free", function()
        local handlers = H.handlers({ ["App/Jobs/Overlapping.lua"] = [[
local luaworker = require "luaworker"
return {
    handle = function(job, command)
        local trail = luaworker.prefix .. "overlap:trail"
        local got = luaworker.funnel("gate", { limit = 1, release_after = 30, block = 3,
            fallback = function() luaworker.redis("RPUSH", trail, "f " .. command.n .. " lua") end },
            function()
                luaworker.redis("RPUSH", trail, "s " .. command.n .. " lua")
                luaworker.sleep(command.ms / 1000)
                luaworker.redis("RPUSH", trail, "e " .. command.n .. " lua")
                return "ran"
            end)
        luaworker.redis("RPUSH", trail, "r " .. command.n .. " " .. tostring(got))
    end,
}
]] })
        local SLOT = H.prefix .. "gate1"
        -- held by another holder (PHP's funnel on the same name): held back past block
        H.r("SET", SLOT, "phpholder0000000000x", "EX", 30)
        H.dispatch("Overlapping", '--args={"n":"1","ms":0}')
        local r = H.run({ "work", "--handlers=" .. handlers, "--stop-when-empty" })
        assert.are.equal(0, r.status, r.stderr)
        assert.are.same({ "f 1 lua", "r 1 false" }, H.r("LRANGE", TRAIL, 0, -1))
        -- free: taken while fn runs, then released; a second job meanwhile waits for it
        H.r("DEL", SLOT, TRAIL)
        H.dispatch("Overlapping", "--count=2", '--args={"n":"{i}","ms":600}')
        local w = work(handlers, { "--concurrency=2" })
        H.wait_until(function() return H.r("EXISTS", SLOT) == 1 end, 10, "the slot")
        local holder, ttl = H.r("GET", SLOT), H.r("TTL", SLOT)
        assert.are.equal(20, #holder)
        assert.is_true(ttl > 25 and ttl <= 30, tostring(ttl))
        H.wait_until(function() return H.r("LLEN", TRAIL) == 6 end, 10, "both jobs")
        local trail = H.r("LRANGE", TRAIL, 0, -1)
        -- the second waited for the first's slot, then ran
        assert.are.equal(2, #H.runs_without_overlap(trail))
        local results = {}
        for _, e in ipairs(trail) do
            if e:match("^r ") then results[#results + 1] = e:match("%S+$") end
        end
        assert.are.same({ "ran", "ran" }, results)
        assert.are.equal(0, H.r("EXISTS", SLOT), w:stderr())
    end)

    it("gives back the attempt of a job a limit held back with LUAWORKER_LIMITS_KEEP_ATTEMPTS=true: "
        .. "--tries=1 jobs all run in the end, each as its first attempt", function()
        local handlers = H.handlers({ ["App/Jobs/Overlapping.lua"] = [[
local luaworker = require "luaworker"
return {
    middleware = { luaworker.middleware.without_overlapping("shared", { release_after = 1, expire_after = 60 }) },
    handle = function(job, command)
        local trail = luaworker.prefix .. "overlap:trail"
        luaworker.redis("RPUSH", trail, "s " .. command.n .. " lua")
        luaworker.redis("RPUSH", luaworker.prefix .. "overlap:attempts", job:attempts())
        luaworker.sleep(command.ms / 1000)
        luaworker.redis("RPUSH", trail, "e " .. command.n .. " lua")
    end,
}
]] })
        H.dispatch("Overlapping", "--count=4", '--args={"n":"{i}","ms":300}')
        fleet.spawn({ "work", "--handlers=" .. handlers, "--sleep=0.05", "--no-watch", "--tries=1",
            "--concurrency=4" }, { env = { LUAWORKER_LIMITS_KEEP_ATTEMPTS = "true" } })
        H.wait_until(function() return #runs_without_overlap() == 4 and H.r("LLEN", TRAIL) == 8 end, 20,
            "the 4 jobs")
        assert.are.same({ "1", "1", "1", "1" }, H.r("LRANGE", H.prefix .. "overlap:attempts", 0, -1))
        assert.are.equal(0, H.r("ZCARD", H.prefix .. "luaworker:failed_jobs"))
        -- (without it, each held back would come back as its second attempt, past --tries=1)
    end)

    it("counts the attempt of a job a limit held back, as Laravel does, when not told to give it back",
        function()
        local handlers = H.handlers({ ["App/Jobs/Overlapping.lua"] = [[
local luaworker = require "luaworker"
return {
    middleware = { luaworker.middleware.without_overlapping("shared", { release_after = 30 }) },
    handle = function() end,
}
]] })
        H.r("SET", LOCK, "someoneelse00000")
        H.dispatch("Overlapping", "--count=1", '--args={"n":"1","ms":0}')
        local r = H.run({ "work", "--handlers=" .. handlers, "--stop-when-empty" })
        assert.are.equal(0, r.status, r.stderr)
        local _, delayed = H.keys()
        assert.are.equal(1, cjson.decode(H.r("ZRANGE", delayed, 0, 0)[1]).attempts)
        H.r("DEL", H.prefix .. "queues:default:delayed")
        H.dispatch("Overlapping", "--count=1", '--args={"n":"2","ms":0}')
        r = H.run({ "work", "--handlers=" .. handlers, "--stop-when-empty" },
            { env = { LUAWORKER_LIMITS_KEEP_ATTEMPTS = "true" } })
        assert.are.equal(0, r.status, r.stderr)
        assert.are.equal(0, cjson.decode(H.r("ZRANGE", delayed, 0, 0)[1]).attempts)
    end)

    -- Flaky jobs (always raising) under ThrottlesExceptions(2, 1) by "flaky", in two
    -- turns: one job run by luaworker until it is held back (it raised twice, then
    -- the limit released it), then one by PHP's queue:work, held back by the count
    -- luaworker's runs left. Returns the runs and the delayed jobs with their scores.
    local function flaky(redis)
        local args = cjson.encode({ n = "lua", redis = redis })
        H.dispatch("Flaky", "--args=" .. args)
        local r = H.run({ "work", "--handlers=" .. H.root .. "/spec/fixtures/middleware_handlers",
            "--stop-when-empty", "--tries=100" })
        assert.are.equal(0, r.status, r.stderr)
        H.dispatch("Flaky", "--args=" .. cjson.encode({ n = "php", redis = redis }))
        H.artisan({ "queue:work", "--stop-when-empty", "--tries=100" })
        local _, delayed = H.keys()
        return H.r("LRANGE", H.prefix .. "flaky:runs", 0, -1), H.r("ZRANGE", delayed, 0, -1, "WITHSCORES")
    end

    it("throttles_exceptions counts the exceptions in ThrottlesExceptions's cache-store key with PHP: two "
        .. "runs raise, then luaworker's job and PHP's are held back until the timer ends, plus 3 s", function()
        local runs, held = flaky(false)
        assert.are.same({ "lua lua", "lua lua" }, runs)
        local key = H.cache_prefix .. "laravel_throttles_exceptions:flaky"
        assert.are.equal("2", H.rdb(1, "GET", key))
        local timer = tonumber(H.rdb(1, "GET", key .. ":timer"))
        assert.are.equal(4, #held)
        for i = 2, #held, 2 do
            assert.is_true(math.abs(tonumber(held[i]) - (timer + 3)) <= 1, held[i] .. " vs " .. timer)
        end
        -- luaworker's job ran twice and was held back on its third try; PHP's never ran
        local attempts = {}
        for i = 1, #held, 2 do attempts[#attempts + 1] = cjson.decode(held[i]).attempts end
        table.sort(attempts)
        assert.are.same({ 1, 3 }, attempts)
    end)

    it("throttles_exceptions_with_redis counts them in ThrottlesExceptionsWithRedis's DurationLimiter with "
        .. "PHP: held back until its window ends", function()
        local runs, held = flaky(true)
        assert.are.same({ "lua lua", "lua lua" }, runs)
        local window = H.hash(H.prefix .. "laravel_throttles_exceptions:flaky")
        assert.are.equal("2", window.count)
        assert.are.equal(4, #held)
        for i = 2, #held, 2 do
            assert.is_true(math.abs(tonumber(held[i]) - tonumber(window["end"])) <= 1, held[i])
        end
    end)

    it("php.md5 and php.xxh128 give PHP's md5() and hash('xxh128') byte for byte", function()
        local texts = { "", "paymentsacme", "App\\Jobs\\Flaky", "Custom Name", string.rep("ü", 300) }
        local script = H.tmpdir() .. "/hash.lua"
        local lines = { 'local php = require "luaworker.php"' }
        for _, t in ipairs(texts) do
            lines[#lines + 1] = string.format("print(php.md5(%q) .. ' ' .. php.xxh128(%q))", t, t)
        end
        H.write_file(script, table.concat(lines, "\n"))
        local r = H.run({ "lua", script })
        assert.are.equal(0, r.status, r.stderr)
        local php_lines = {}
        for _, t in ipairs(texts) do
            local f = io.popen("php -r 'echo md5($argv[1]), \" \", hash(\"xxh128\", $argv[1]);' -- " .. H.quote(t))
            php_lines[#php_lines + 1] = f:read("*a")
            f:close()
        end
        assert.are.equal(table.concat(php_lines, "\n") .. "\n", r.stdout)
    end)

    it("throttles_exceptions keys a job without by as the --laravel version does: md5 of its class before "
        .. "12.0, its xxh128 from 12.0, that of its own displayName() from 12.41; releases after an exception "
        .. "for backoff minutes", function()
        local handlers = H.handlers({ ["App/Jobs/Flaky.lua"] = [[
local luaworker = require "luaworker"
return {
    middleware = { luaworker.middleware.throttles_exceptions(5, 60, { backoff = 2 }) },
    handle = function() error("flaky") end,
}
]] })
        local function hash(algo, text)
            local f = io.popen("php -r 'echo hash($argv[1], $argv[2]);' -- " .. algo .. " " .. H.quote(text))
            local v = f:read("*a")
            f:close()
            return v
        end
        local function key_after(version, display_name)
            H.flush()
            local payload = H.class_payload("App\\Jobs\\Flaky", { maxTries = 1 })
            if display_name then payload.displayName = display_name end
            H.push(payload)
            local r = H.run({ "work", "--handlers=" .. handlers, "--stop-when-empty", "--laravel=" .. version })
            assert.are.equal(0, r.status, r.stderr)
            -- released after it raised, for backoff minutes, not failed
            local _, delayed = H.keys()
            local wait = tonumber(H.r("ZRANGE", delayed, 0, 0, "WITHSCORES")[2]) - os.time()
            assert.is_true(wait >= 118 and wait <= 120, tostring(wait))
            -- (the cache prefix is the version's: laravel_cache: before 11, laravel_cache_ after)
            local keys = H.rdb(1, "KEYS", "*laravel_throttles_exceptions:*")
            table.sort(keys)
            assert.is_truthy(keys[1], "no key of ThrottlesExceptions")
            return keys[1]:match("laravel_throttles_exceptions:.*$")
        end
        local class = "App\\Jobs\\Flaky"
        assert.are.equal("laravel_throttles_exceptions:" .. hash("md5", class), key_after("11"))
        assert.are.equal("laravel_throttles_exceptions:" .. hash("xxh128", class), key_after("12"))
        assert.are.equal("laravel_throttles_exceptions:" .. hash("xxh128", "Nice Name"),
            key_after("12.41", "Nice Name"))
    end)

    it("lets a job through Laravel's middleware in luaworker run, touching no store, and says so", function()
        H.r("SET", LOCK, "someoneelse00000")
        local payload = H.class_payload("App\\Jobs\\Overlapping", {},
            { { "n", 's:1:"1";' }, { "ms", "i:0;" }, { "key", 's:6:"shared";' } })
        local file = H.tmpdir() .. "/payload.json"
        H.write_file(file, cjson.encode(payload))
        local r = H.run({ "run", "--handlers=" .. H.root .. "/spec/fixtures/middleware_handlers", "--json", file })
        assert.are.equal(0, r.status, r.stderr)
        local report = cjson.decode(r.stdout)
        assert.are.same({ "without_overlapping" }, report.middleware_passed)
        assert.are.equal("deleted", report.outcome)
        -- it ran, and the lock is the other owner's still
        assert.are.same({ "s 1 lua", "e 1 lua" }, H.r("LRANGE", TRAIL, 0, -1))
        assert.are.equal("someoneelse00000", H.r("GET", LOCK))
    end)

    it("keeps RateLimited's counts and WithoutOverlapping's lock in the app's file cache store as PHP does "
        .. "(FileStore::add, the file flock'ed): PHP's worker is held back by luaworker's", function()
        local env = { CACHE_DRIVER = "file" }
        local runs, held = limited({ redis = false }, env)
        assert.are.same({ "t1 lua", "t1 lua", "t2 php" }, runs)
        assert.are.equal(6, #held)
        -- a Lua job holding the overlap lock (60 s) in the file store; PHP's job released
        H.flush()
        H.dispatch("Overlapping", '--args={"n":"a","ms":8000}')
        fleet.spawn({ "work", "--handlers=" .. H.root .. "/spec/fixtures/middleware_handlers",
            "--sleep=0.05", "--no-watch", "--env-file=" .. H.app .. "/.env" }, { env = env })
        H.wait_until(function() return H.r("LLEN", TRAIL) == 1 end, 10, "the Lua run")
        -- (luaworker, one job at a time, is busy with a: PHP's worker takes b)
        H.dispatch("Overlapping", '--args={"n":"b","ms":0}')
        H.artisan({ "queue:work", "--stop-when-empty", "--tries=100" }, env)
        assert.are.same({ "s a lua" }, H.r("LRANGE", TRAIL, 0, -1))
        local _, delayed = H.keys()
        assert.are.equal(1, H.r("ZCARD", delayed), "PHP did not release b")
        -- a ends and lets the lock go; b, released by PHP, runs then
        H.wait_until(function() return H.r("LLEN", TRAIL) == 4 end, 20, "b's run")
        assert.are.same({ "s a lua", "e a lua", "s b lua", "e b lua" }, H.r("LRANGE", TRAIL, 0, -1))
    end)

    it("throttles_exceptions with report, delete_when and fail_when (Laravel 11.3, 12.14, 12.20): an error "
        .. "picked is logged, deletes or fails the job, and is not counted", function()
        local handlers = H.handlers({ ["App/Jobs/Flaky.lua"] = [[
local luaworker = require "luaworker"
return {
    middleware = function(_, command)
        return { luaworker.middleware.throttles_exceptions(5, 60, { by = "picked", report = true, backoff = 1,
            delete_when = { "DeletableException", function(err) return err.class == "GoneException" end },
            fail_when = function(err) return luaworker.is_exception(err) and err.class == "FatalException" end }) }
    end,
    handle = function(_, command)
        error(luaworker.exception(command.n, "raised " .. command.n), 0)
    end,
}
]] })
        for _, class in ipairs({ "DeletableException", "GoneException", "FatalException", "OtherException" }) do
            H.push(H.class_payload("App\\Jobs\\Flaky", { maxTries = 5 }, { { "n", string.format('s:%d:"%s";', #class, class) } }))
        end
        local r = H.run({ "work", "--handlers=" .. handlers, "--stop-when-empty" })
        assert.are.equal(0, r.status, r.stderr)
        local _, reported = r.stderr:gsub("reported by throttles_exceptions: ", "")
        assert.are.equal(4, reported)
        -- the deletable jobs are gone (either test of the list), the fatal one failed, the other
        -- released and counted once
        local _, delayed = H.keys()
        local held = H.r("ZRANGE", delayed, 0, -1)
        assert.are.equal(1, #held)
        assert.matches("OtherException", held[1], 1, true)
        local failed = H.r("ZRANGE", H.prefix .. "luaworker:failed_jobs", 0, -1)
        assert.are.equal(1, #failed)
        assert.matches("^FatalException", H.failed_record(failed[1]).exception)
        assert.are.equal("1", H.rdb(1, "GET", H.cache_prefix .. "laravel_throttles_exceptions:picked"))
    end)
end)
