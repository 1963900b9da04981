-- What Laravel's database queue does with the app's database cache store alone, with
-- no Redis at all: WithoutOverlapping's lock as DatabaseLock takes it, the attempts a
-- limit gives back, maxExceptions' counts, the restart signal, and a job whose
-- failed-job table is gone. spec/database_queue_*_spec.lua calls it after
-- spec/database_queue_contract.lua's contract, in the same describe, whose
-- before_each empties the tables; server as there.
local H = require "spec.helpers"
local C = require "spec.database_queue_contract"

local M = {}

local HANDLERS = C.HANDLERS

function M.contract(server, it, assert)
    local env, _, _, count = C.tools(server, assert)

    it("takes WithoutOverlapping's lock as DatabaseLock does in the app's database cache store, with no "
        .. "Redis at all: held back by another owner's row, taking an expired one", function()
        server.sql("delete from cache_locks")
        local name = "laravel_cachelaravel-queue-overlap:App\\Jobs\\Overlapping:shared"
        local e = env({ REDIS_PORT = tostring(H.free_port()), CACHE_STORE = "database" })
        local handlers = H.handlers({ ["App/Jobs/Overlapping.lua"] = [[
local luaworker = require "luaworker"
return {
    middleware = { luaworker.middleware.without_overlapping("shared", { release_after = 30, expire_after = 60 }) },
    handle = function()
        local d = luaworker.db()
        local rows = d:select("select owner, expiration from cache_locks where " .. d:wrap("key") .. " = ?",
            { "laravel_cachelaravel-queue-overlap:App\\Jobs\\Overlapping:shared" })
        local now = os.time()
        if #rows ~= 1 or #rows[1].owner ~= 16 or tonumber(rows[1].expiration) < now + 55 then
            error("not the lock Laravel takes: " .. luaworker.json.encode(rows))
        end
    end,
}
]] })
        server.sql("insert into cache_locks (" .. server.key_column .. ", owner, expiration) values ("
            .. server.literal(name) .. ", 'another', " .. (os.time() + 100) .. ")")
        local pushed = H.run({ "push", "App\\Jobs\\Overlapping", '{"n":1,"ms":0,"key":"shared"}' }, { env = e })
        assert.are.equal(0, pushed.status, pushed.stderr)
        local args = { "work", "database", "--handlers=" .. handlers, "--stop-when-empty", "--tries=3" }
        local before = os.time()
        local r = H.run(args, { env = e })
        assert.are.equal(0, r.status, r.stderr)
        -- released for 30 s, its attempt counted; the other owner's row as it was
        assert.matches("^1|", server.sql("select attempts, available_at from jobs"))
        local available = tonumber(server.sql("select available_at from jobs"):match("%d+"))
        assert.is_true(available >= before + 30 and available <= os.time() + 30,
            available .. " not within " .. (before + 30) .. ".." .. (os.time() + 30))
        assert.matches("^another", server.sql("select owner from cache_locks"))
        -- an expired lock is taken (updated), held while the job runs, and released
        server.sql("update cache_locks set expiration = " .. (os.time() - 1))
        server.sql("update jobs set available_at = 0")
        r = H.run(args, { env = e })
        assert.are.equal(0, r.status, r.stderr)
        assert.are.equal(0, count())
        assert.are.equal("", server.sql("select * from failed_jobs"))
        assert.are.equal("", server.sql("select * from cache_locks"))
    end)

    it("gives back the attempt of a job a limit held back with keep_attempts: its row comes back with "
        .. "the attempts it had", function()
        server.sql("delete from cache_locks")
        local e = env({ REDIS_PORT = tostring(H.free_port()), CACHE_STORE = "database" })
        local handlers = H.handlers({ ["App/Jobs/Overlapping.lua"] = [[
local luaworker = require "luaworker"
return {
    middleware = { luaworker.middleware.without_overlapping("shared", { release_after = 30, keep_attempts = true }) },
    handle = function() error("held back: not run") end,
}
]] })
        server.sql("insert into cache_locks (" .. server.key_column .. ", owner, expiration) values ("
            .. server.literal("laravel_cachelaravel-queue-overlap:App\\Jobs\\Overlapping:shared")
            .. ", 'another', " .. (os.time() + 100) .. ")")
        local pushed = H.run({ "push", "App\\Jobs\\Overlapping", '{"n":1,"ms":0,"key":"shared"}' }, { env = e })
        assert.are.equal(0, pushed.status, pushed.stderr)
        local r = H.run({ "work", "database", "--handlers=" .. handlers, "--stop-when-empty", "--tries=1" },
            { env = e })
        assert.are.equal(0, r.status, r.stderr)
        assert.matches("^0|", server.sql("select attempts, available_at from jobs"))
        assert.are.equal("", server.sql("select * from failed_jobs"))
    end)

    it("counts maxExceptions in the app's database cache store, with no Redis at all", function()
        server.sql("delete from cache")
        local e = env({ REDIS_PORT = tostring(H.free_port()), CACHE_STORE = "database" })
        local pushed = H.run({ "push", "App\\Jobs\\Quiet", "{}", "--max-exceptions=2", "--tries=5" },
            { env = e })
        assert.are.equal(0, pushed.status, pushed.stderr)
        local r = H.run({ "work", "database", "--handlers=" .. HANDLERS, "--stop-when-empty" }, { env = e })
        assert.are.equal(0, r.status, r.stderr)
        assert.matches("attempt 2", r.stderr)
        assert.are.equal(0, count())
        -- failed by its second exception (of five tries), with that exception, as Laravel
        assert.matches("^[^\n]*quietly failing", server.sql("select exception from failed_jobs"))
        assert.is_nil(r.stderr:find("attempt 3", 1, true))
        -- the counter is forgotten once it failed the job
        assert.are.equal("0", server.sql("select count(*) from cache"):match("%d+"))
    end)

    -- an app of the database queue may have no Redis: the job is kept in the jobs
    -- table, where luaworker failed / retry find it
    it("keeps a job whose failed-job table is dropped after the start in the jobs table, with no Redis "
        .. "at all, and runs the jobs behind it", function()
        server.sql("drop table if exists " .. server.quote("gone_failed"))
        server.copy_table("failed_jobs", "gone_failed")
        local e = env({ REDIS_PORT = tostring(H.free_port()), CACHE_STORE = "database",
            LUAWORKER_FAILED_TABLE = "gone_failed" })
        local function push_job(class, ...)
            local r = H.run({ "push", class, "{}", ... }, { env = e })
            assert.are.equal(0, r.status, r.stderr)
        end
        local w = H.spawn({ "work", "database", "--handlers=" .. HANDLERS, "--sleep=0.05", "--tries=1" },
            { env = e })
        push_job("App\\Jobs\\Done")
        H.wait_until(function() return count() == 0 end, 15, "the worker to run a job: " .. w:stderr())
        server.sql("drop table " .. server.quote("gone_failed"))
        push_job("App\\Jobs\\Quiet")
        for _ = 1, 3 do push_job("App\\Jobs\\Done") end
        local ran = pcall(H.wait_until, function() return count("queue = 'default'") == 0 end, 15)
        w:stop()
        assert.is_true(ran, "the jobs behind it did not run: " .. w:stderr())
        local _, said = w:stderr():gsub("cannot record failed jobs in gone_failed", "")
        assert.are.equal(1, said, w:stderr())
        assert.matches("kept in table jobs %(queue luaworker:failed%)", w:stderr())
        local kept = env({ QUEUE_FAILED_DRIVER = "luaworker-database" })
        local listed = H.run({ "failed" }, { env = kept })
        assert.are.equal(0, listed.status, listed.stderr)
        assert.is_truthy(listed.stdout:find("App\\Jobs\\Quiet", 1, true), listed.stdout)
        local r = H.run({ "retry", "all" }, { env = kept })
        assert.are.equal(0, r.status, r.stderr)
        assert.are.equal(1, count("queue = 'default' and attempts = 0"))
        assert.are.equal(0, count("queue = 'luaworker:failed'"))
    end)

    it("stops on queue:restart's signal in the app's database cache store, with no Redis at all", function()
        server.sql("delete from cache")
        local e = env({ REDIS_PORT = tostring(H.free_port()), CACHE_STORE = "database" })
        local w = H.spawn({ "work", "database", "--handlers=" .. HANDLERS, "--sleep=0.1" }, { env = e })
        H.sleep(1.2)
        assert.is_nil(w:status())
        if server.php then
            H.artisan({ "queue:restart" }, env({ CACHE_DRIVER = "database" }))
        else
            local r = H.run({ "restart" }, { env = e })
            assert.are.equal(0, r.status, r.stderr)
        end
        assert.are.equal(0, w:wait(10), w:stderr())
        assert.matches("^laravel_cacheilluminate:queue:restart|i:%d+;|%d+\n$",
            server.sql("select " .. server.key_column .. ", value, expiration from cache"))
    end)
end

return M
