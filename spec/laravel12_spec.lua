-- luaworker --laravel=12.67 beside a real Laravel 12.67 worker (spec/laravel12.lua:
-- ../shared/laravel12, skipped with a plain message where it is absent): the same
-- jobs, dispatched by Laravel 12, from copies of the same Redis state, compared byte
-- for byte: a release, a failure, --stop-when-empty with a job due, and a mixed
-- fleet of both workers on one queue.
local H = require "spec.helpers"
local L12 = require "spec.laravel12"

local app, missing = L12.app()
local QUEUE = H.prefix .. "queues:default"

local handlers, database

-- The worker environment of both: the app's Redis names, failed jobs in its SQLite.
local function env()
    return L12.env({ QUEUE_FAILED_DRIVER = "database-uuids", DB_DATABASE = database })
end

local function luaworker(args)
    local full = { "work", "--laravel=" .. L12.VERSION, "--handlers=" .. handlers, "--sleep=0" }
    for _, a in ipairs(args) do full[#full + 1] = a end
    local r = H.run(full, { env = env() })
    assert.are.equal(0, r.status, r.stderr)
    return r
end

local function php_worker(args)
    local full = { "queue:work", "--sleep=0" }
    for _, a in ipairs(args) do full[#full + 1] = a end
    local r = L12.artisan(full, { QUEUE_FAILED_DRIVER = "database-uuids", DB_DATABASE = database })
    assert.are.equal(0, r.status, r.stdout .. r.stderr)
    return r
end

local function dispatch(php)
    L12.php(php, { DB_DATABASE = database })
end

local snapshot, restore = H.snapshot, H.restore

local function sqlite(sql) return H.sqlite(database, sql) end

describe("luaworker beside a real Laravel 12 worker", function()
    if not app then
        it("is skipped: " .. missing, function() print(missing) end)
        return
    end

    setup(function()
        L12.job("Recorded", L12.RECORDED_PHP)
        handlers = H.handlers({ ["App/Jobs/Recorded.lua"] = L12.RECORDED_LUA })
        database = H.tmpdir() .. "/database.sqlite"
        assert(os.execute("sqlite3 " .. H.quote(database) .. " < " .. H.quote(app .. "/database/schema.sql")))
    end)

    before_each(function()
        H.flush()
        sqlite("delete from failed_jobs")
    end)

    it("releases a job with the bytes and the score Laravel 12 releases it with", function()
        dispatch([[App\Jobs\Recorded::dispatch('r1', 'release');]])
        local state = snapshot()
        local before = os.time()
        php_worker({ "--once" })
        local php = H.zscores(QUEUE .. ":delayed")
        restore(state)
        luaworker({ "--once" })
        local lua = H.zscores(QUEUE .. ":delayed")
        assert.are.equal(1, #php)
        assert.are.equal(1, #lua)
        assert.is_true(php[1][1] == lua[1][1], "released payloads differ:\n" .. php[1][1] .. "\n" .. lua[1][1])
        assert.is_true(math.abs(php[1][2] - lua[1][2]) <= 1 + os.time() - before)
        assert.is_true(lua[1][2] >= before + 3)
    end)

    it("fails a job into failed_jobs with the uuid, connection, queue and payload Laravel 12 "
        .. "records", function()
        dispatch([[App\Jobs\Recorded::dispatch('f1', 'fail');]])
        local state = snapshot()
        php_worker({ "--once" })
        local php = sqlite("select uuid, connection, queue, payload from failed_jobs")
        local php_exception = sqlite("select exception from failed_jobs")
        sqlite("delete from failed_jobs")
        restore(state)
        luaworker({ "--once" })
        local lua = sqlite("select uuid, connection, queue, payload from failed_jobs")
        assert.are_not.equal("", php)
        assert.are.equal(php, lua)
        assert.matches("^RuntimeException: boom", php_exception)
        assert.matches("^RuntimeException: boom", sqlite("select exception from failed_jobs"))
        assert.are.equal(0, H.r("ZCARD", QUEUE .. ":reserved"))
    end)

    it("runs a job released with no delay again before --stop-when-empty ends the run, as "
        .. "Laravel 12 does", function()
        dispatch([[App\Jobs\Recorded::dispatch('s1', 'release_now');]])
        local state = snapshot()
        php_worker({ "--stop-when-empty" })
        local php = L12.runs()
        restore(state)
        luaworker({ "--stop-when-empty" })
        local lua = L12.runs()
        assert.are.same({ { 1, 2 }, { 1, 2 } }, { { php[1].attempt, php[2] and php[2].attempt },
            { lua[1].attempt, lua[2] and lua[2].attempt } })
        assert.are.same({ 0, 0 }, { H.r("ZCARD", QUEUE .. ":delayed"), H.r("LLEN", QUEUE) })
    end)

    it("keeps a long job's lease while Laravel 12's queue:work polls, and leaves it to that worker within "
        .. "seconds once the luaworker group is killed", function()
        L12.leases(assert, { env = L12.env({ DB_DATABASE = database }), short = { REDIS_QUEUE_RETRY_AFTER = "5" },
            short_args = { "--retry-after=5" },
            left = function() return H.r("ZCARD", QUEUE .. ":reserved") + H.r("LLEN", QUEUE) end })
    end)

    it("shares a queue with Laravel 12's worker: 600 jobs, some released, each run to its end "
        .. "once", function()
        dispatch([[
for ($i = 1; $i <= 600; $i++) {
    App\Jobs\Recorded::dispatch('m' . $i, $i % 10 === 0 ? 'release_now' : 'slow');
}]])
        local lua = H.spawn({ "work", "--laravel=" .. L12.VERSION, "--handlers=" .. handlers, "--sleep=0.05",
            "--stop-when-empty", "--concurrency=2" }, { env = env() })
        local php = L12.artisan({ "queue:work", "--stop-when-empty", "--sleep=0" },
            { QUEUE_FAILED_DRIVER = "database-uuids", DB_DATABASE = database })
        assert.are.equal(0, php.status, php.stderr)
        assert.are.equal(0, lua:wait(120), lua:stderr())
        -- the PHP worker may have stopped first: what is left runs in luaworker
        luaworker({ "--stop-when-empty" })
        local seen, by = L12.runs_by_tag()
        for i = 1, 600 do
            local tag = "m" .. i
            local want = i % 10 == 0 and { 1, 2 } or { 1 }
            table.sort(seen[tag] or {})
            assert.are.same(want, seen[tag], tag)
        end
        assert.is_true(by.php > 0 and by.lua > 0, "both workers ran jobs: " .. by.php .. " " .. by.lua)
        assert.are.equal("0", sqlite("select count(*) from failed_jobs"):match("%d+"))
        assert.are.same({ 0, 0, 0 }, { H.r("LLEN", QUEUE), H.r("ZCARD", QUEUE .. ":delayed"),
            H.r("ZCARD", QUEUE .. ":reserved") })
    end)
end)
