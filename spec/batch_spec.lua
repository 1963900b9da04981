-- Bus::batch: a Batchable job's row in the app's job_batches table (the Laravel 8
-- app in examples/laravel, SQLite), kept by luaworker as by PHP's worker.
local H = require "spec.helpers"

local APP_ENV = "--env-file=" .. H.app .. "/.env"
local APP_DB = H.app .. "/database/database.sqlite"
local BATCHED = [[
local luaworker = require "luaworker"
return { handle = function(job, command)
    local b = job:batch()
    luaworker.redis("RPUSH", "spec:seen", string.format("%s %s %s %s", command.n, tostring(b and b.id),
        tostring(b and b.cancelled), tostring(b and b.allows_failures)))
    if command.fail == true then error("batched job " .. command.n .. " failed") end
end }
]]

local function sqlite(sql) return H.sqlite(APP_DB, sql) end

-- The batch's row, its failed_job_ids with each uuid replaced by the job's number.
local function row(numbers)
    local r = sqlite("select total_jobs, pending_jobs, failed_jobs, failed_job_ids, "
        .. "cancelled_at is not null, finished_at is not null from job_batches")
    for uuid, n in pairs(numbers) do r = r:gsub(uuid:gsub("%-", "%%-"), "job" .. n) end
    return r
end

-- Dispatches a batch of Batched jobs, failing those in fails; returns uuid -> n.
local function dispatch(kind, count, fails)
    local items = {}
    for n = 1, count do
        items[n] = string.format('{"job":"Batched","args":[%d,%s]}', n, fails[n] and "true" or "false")
    end
    local numbers = {}
    for n, j in ipairs(H.dispatch(kind, "--args=[" .. table.concat(items, ",") .. "]")) do
        numbers[j.uuid] = n
    end
    return numbers
end

local handlers

local function luaworker_run(args)
    local full = { "work", "--handlers=" .. handlers, APP_ENV, "--stop-when-empty", "--sleep=0" }
    for _, a in ipairs(args or {}) do full[#full + 1] = a end
    local r = H.run(full, { timeout = 120 })
    assert.are.equal(0, r.status, r.stderr)
    return r
end

local function php_run()
    local p = H.spawn_artisan({ "queue:work", "--stop-when-empty", "--sleep=0" })
    assert.are.equal(0, p.wait(60), p.output())
end

describe("Bus::batch jobs", function()
    setup(function()
        H.laravel_setup()
        handlers = H.handlers({ ["App/Jobs/Batched.lua"] = BATCHED })
    end)
    before_each(function()
        H.flush()
        H.artisan({ "queue:flush" })
        sqlite("delete from job_batches")
    end)

    for _, case in ipairs({
        { "all succeed", "batch", {} },
        { "one fails: the batch is cancelled", "batch", { [2] = true } },
        { "one fails, failures allowed", "batch-allow-failures", { [2] = true } },
        { "two fail, failures allowed", "batch-allow-failures", { [1] = true, [3] = true } },
    }) do
        it("update the row as PHP's worker does: " .. case[1], function()
            local numbers = dispatch(case[2], 3, case[3])
            php_run()
            local php_row = row(numbers)
            sqlite("delete from job_batches")
            numbers = dispatch(case[2], 3, case[3])
            luaworker_run()
            assert.are.equal(php_row, row(numbers))
        end)
    end

    it("count exactly with 4 processes and jobs in flight", function()
        local fails = {}
        for n = 1, 200, 10 do fails[n] = true end
        dispatch("batch-allow-failures", 200, fails)
        luaworker_run({ "--processes=4", "--concurrency=8", "--quiet" })
        assert.are.equal("200|20|20|0|0\n", sqlite("select total_jobs, pending_jobs, failed_jobs, "
            .. "cancelled_at is not null, finished_at is not null from job_batches"))
        local ids = require("cjson").decode(sqlite("select failed_job_ids from job_batches"))
        local unique = {}
        for _, id in ipairs(ids) do unique[id] = true end
        local n = 0
        for _ in pairs(unique) do n = n + 1 end
        assert.are.equal(20, n)
        assert.are.equal(20, #ids)
    end)

    it("give the handler its batch with job:batch()", function()
        dispatch("batch-allow-failures", 2, { [1] = true })
        local id = sqlite("select id from job_batches"):match("%S+")
        luaworker_run()
        local seen = H.r("LRANGE", "spec:seen", 0, -1)
        table.sort(seen)
        assert.same({ "1 " .. id .. " false true", "2 " .. id .. " false true" }, seen)
    end)

    it("leave a batch alone whose row is gone", function()
        dispatch("batch", 2, {})
        sqlite("delete from job_batches")
        local r = luaworker_run()
        assert.are.equal(2, H.r("LLEN", "spec:seen"))
        assert.is_nil(r.stderr:find("batch", 1, true))
    end)

    it("take jobs luaworker.dispatch adds to a batch, which PHP's worker runs and counts", function()
        dispatch("batch", 1, {})
        local id = sqlite("select id from job_batches"):match("%S+")
        local script = H.tmpdir() .. "/add.lua"
        H.write_file(script, [[
local luaworker = require "luaworker"
luaworker.dispatch("App\\Jobs\\Batched", { n = 2, fail = false }, { batch = "]] .. id .. [[" })
print(pcall(luaworker.dispatch, "App\\Jobs\\Batched", { n = 3 }, { batch = "no-such-batch" }))
-- inside a handler's transaction, the batch's bookkeeping is a savepoint of it
luaworker.db():transaction(function()
    luaworker.dispatch("App\\Jobs\\Batched", { n = 4, fail = false }, { batch = "]] .. id .. [[" })
end)
]])
        local r = H.run({ "lua", APP_ENV, script })
        assert.are.equal(0, r.status, r.stderr)
        assert.matches("^false\tluaworker.dispatch: batch no%-such%-batch has no row in job_batches", r.stdout)
        assert.are.equal("3|3|0\n", sqlite("select total_jobs, pending_jobs, finished_at is not null "
            .. "from job_batches"))
        php_run()
        assert.are.equal("3|0|1|[]\n", sqlite("select total_jobs, pending_jobs, finished_at is not null, "
            .. "failed_job_ids from job_batches"))
    end)

    it("run a cancelled batch's jobs, as Laravel does, unless the handler skips them as "
        .. "SkipIfBatchCancelled does (counted as successes)", function()
        dispatch("batch", 2, {})
        sqlite("update job_batches set cancelled_at = 1")
        luaworker_run()
        assert.are.equal(2, H.r("LLEN", "spec:seen"))
        sqlite("delete from job_batches")
        H.flush()
        dispatch("batch", 2, {})
        sqlite("update job_batches set cancelled_at = 1")
        local saved = handlers
        handlers = H.handlers({ ["App/Jobs/Batched.lua"] = BATCHED:gsub("return {", "return { skip_if_batch_cancelled = true,") })
        luaworker_run()
        handlers = saved
        assert.are.equal(0, H.r("LLEN", "spec:seen"))
        assert.are.equal("0|1\n", sqlite("select pending_jobs, finished_at is not null from job_batches"))
    end)

    it("say once per batch that its PHP callbacks are not run", function()
        dispatch("batch-callbacks", 3, { [2] = true })
        local r = luaworker_run()
        local _, said = r.stderr:gsub("callbacks: they are PHP closures, which luaworker cannot run", "")
        assert.are.equal(1, said)
    end)
end)
