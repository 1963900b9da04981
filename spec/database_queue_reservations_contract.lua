-- How a worker on Laravel's database queue holds the jobs it runs, alike on every
-- server: leases renewed while a job runs (worker/database_lease_keeper.h), the
-- rules for a job past its timeout, and a job that ran past retry_after.
-- spec/database_queue_*_spec.lua calls it after spec/database_queue_contract.lua's
-- contract, in the same describe, whose before_each empties the tables; server as
-- there.
local H = require "spec.helpers"
local C = require "spec.database_queue_contract"
local cjson = H.json

local M = {}

local HANDLERS = C.HANDLERS
local runs = C.runs

function M.contract(server, it, assert)
    local env, work, push, count = C.tools(server, assert)

    if server.mixed then
        it("keeps the reservation of a job running four times retry_after while PHP's queue:work and "
            .. "another luaworker poll the queue: it runs once", function()
            push("long")
            local e = env({ DB_QUEUE_RETRY_AFTER = "3" })
            local args = { "work", "database", "--handlers=" .. HANDLERS, "--sleep=0.2", "--no-watch", "--tries=3" }
            local first = H.spawn(args, { env = e })
            local others = {}
            local ok, err = pcall(function()
                H.wait_until(function() return count("reserved_at is not null") == 1 end, 10, "the job's start")
                others[1] = H.spawn_artisan({ "queue:work", "database", "--sleep=1", "--tries=3" }, e)
                others[2] = H.spawn(args, { env = e })
                H.wait_until(function() return #runs() > 0 end, 30, "the job's end")
                H.sleep(1)
                -- (PHP's run is recorded as it starts, luaworker's starts on long_starts)
                assert.are.same({ "1" }, H.r("LRANGE", H.prefix .. "luaworker:long_starts", 0, -1))
                assert.are.same({ { "lua", 1 } }, { { runs()[1].runner, runs()[1].attempts } })
                assert.are.equal(1, #runs(), cjson.encode(runs()))
                assert.are.equal(0, count())
                assert.are.equal("", server.sql("select id from failed_jobs"))
            end)
            first:kill("TERM")
            if others[1] then others[1].stop() end
            if others[2] then others[2]:kill("TERM") end
            first:wait()
            if others[2] then others[2]:wait() end
            if not ok then error(err, 0) end
        end)
    end

    -- Leases (worker/database_lease_keeper.h): a worker spawned on the queue, stopped
    -- after fn(worker) however it ends; those fn adds to others too.
    local function leasing(args, fn)
        local full = { "work", "database", "--handlers=" .. HANDLERS, "--sleep=0.2", "--no-watch", "--tries=3" }
        for _, a in ipairs(args.args or {}) do full[#full + 1] = a end
        local w = H.spawn(full, { env = env(args.env), group = args.group })
        local others = {}
        local function other(php)
            local o = php and H.spawn_artisan({ "queue:work", "database", "--sleep=1", "--tries=3" }, env(args.env))
                or H.spawn({ "work", "database", "--handlers=" .. HANDLERS, "--sleep=0.2", "--no-watch",
                    "--tries=3" }, { env = env(args.env) })
            others[#others + 1] = { o = o, php = php }
        end
        local ok, err = pcall(fn, w, other)
        if args.group and not w:status() then w:kill_group("KILL") end
        w:stop()
        for _, o in ipairs(others) do
            if o.php then o.o.stop() else o.o:stop() end
        end
        if not ok then error(err, 0) end
    end

    local function starts()
        return H.r("LRANGE", H.prefix .. "luaworker:long_starts", 0, -1)
    end

    it("keeps the reservation of a job whose handler computes without yielding past retry_after while "
        .. "another worker polls the queue: it runs once", function()
        push("crunch")
        leasing({ env = { DB_QUEUE_RETRY_AFTER = "2" } }, function(w, other)
            H.wait_until(function() return #starts() == 1 end, 10, "the job's start")
            other(false)
            if server.mixed then other(true) end
            H.wait_until(function() return #runs() > 0 end, 30, "the job's end")
            H.sleep(1.5)
            assert.are.same({ "1" }, starts(), w:stderr())
            assert.are.same({ { "lua", 1 } }, { { runs()[1].runner, runs()[1].attempts } })
            assert.are.equal(1, #runs(), cjson.encode(runs()))
            assert.are.equal(0, count())
        end)
    end)

    it("lets another worker take a job within seconds once its worker group is killed, the attempt "
        .. "counted", function()
        push("minute")
        leasing({ args = { "--heartbeat=1", "--timeout=120" }, group = true }, function(w, other)
            H.wait_until(function() return #starts() == 1 end, 10, "the job's start")
            -- renewed to expire two heartbeats on: reserved_at + retry_after (90)
            H.sleep(2.5)
            local reserved_at = tonumber(server.sql("select reserved_at from jobs"):match("%d+"))
            assert.is_true(reserved_at + 90 <= os.time() + 3, "not renewed: " .. tostring(reserved_at))
            w:kill_group("KILL")
            local killed = os.time()
            other(server.mixed)
            H.wait_until(function() return #runs() == 1 or #starts() == 2 end, 15, "the job to run again")
            assert.is_true(os.time() - killed <= 5, "took " .. (os.time() - killed) .. " s")
            local attempts = server.mixed and runs()[1].attempts or tonumber(starts()[2])
            assert.are.equal(2, attempts)
        end)
    end)

    -- The Lua dispatches lua makes (luaworker pre-required).
    local function dispatch(lua)
        local file = H.tmpdir() .. "/push.lua"
        H.write_file(file, 'local luaworker = require "luaworker"\n' .. lua)
        assert.are.equal(0, H.run({ "lua", file }, { env = env() }).status)
    end

    -- The runs of quick jobs (a number n), as they ended.
    local function quick()
        local list = {}
        for _, run in ipairs(runs()) do
            if type(run.props.n) == "number" then list[#list + 1] = run end
        end
        return list
    end

    -- 20 quick jobs are pushed; the function returned, called once a worker runs,
    -- waits for them (they set its pace: it holds the rows ahead that it can start
    -- within 0.05 s), then pushes the job long and 10 quick ones behind it (21 to
    -- 30), which the pop that takes it holds.
    local function paced(long)
        dispatch([[for n = 1, 20 do luaworker.dispatch("App\\Jobs\\Simple", { n = n }) end]])
        return function()
            H.wait_until(function() return #quick() == 20 end, 15, "the first jobs to run")
            dispatch([[luaworker.dispatch("App\\Jobs\\Simple", { n = "]] .. long .. [[" })
for n = 21, 30 do luaworker.dispatch("App\\Jobs\\Simple", { n = n }) end]])
        end
    end

    -- Each quick job ran once, on its first attempt.
    local function each_quick_once()
        local seen = {}
        for _, run in ipairs(quick()) do
            assert.is_nil(seen[run.props.n], run.props.n .. " ran twice")
            seen[run.props.n] = true
            assert.are.equal(1, run.attempts, cjson.encode(run))
        end
    end

    -- The rows held ahead (reserved, their attempts uncounted), checked by server.
    local function held_ahead(w)
        local held = count("reserved_at is not null and attempts = 0")
        if server.holds_ahead then
            assert.is_true(held > 0, "no row held ahead: " .. w:stderr())
        else
            assert.are.equal(0, held)
        end
    end

    it("holds the rows ahead of a worker running one job at a time with their attempts uncounted "
        .. "(not on SQLite): its worker group killed in a job's middle, that job comes back counted, "
        .. "the rows held uncounted, within seconds", function()
        -- (a job that keeps the CPU: the loop cannot give back the rows held a second
        -- behind it before the kill)
        local rest = paced("crunch-minute")
        leasing({ args = { "--heartbeat=1", "--timeout=120" }, group = true }, function(w, other)
            rest()
            H.wait_until(function() return #starts() == 1 end, 15, "the long job's start")
            -- (its start is sent before it runs, and may commit a moment after)
            H.wait_until(function() return count("reserved_at is not null and attempts = 1") == 1 end, 5,
                "the long job's start to count its attempt")
            held_ahead(w)
            w:kill_group("KILL")
            local killed = os.time()
            other(server.mixed)
            H.wait_until(function() return #quick() == 30 end, 20, "the rows held to run")
            assert.is_true(os.time() - killed <= 7, "took " .. (os.time() - killed) .. " s")
            each_quick_once()
            -- (PHP's run is recorded as it starts, luaworker's start on long_starts)
            local function again()
                for _, run in ipairs(runs()) do
                    if run.props.n == "crunch-minute" then return run.attempts end
                end
                return tonumber(starts()[2])
            end
            H.wait_until(again, 15, "the long job to run again")
            assert.are.equal(2, again())
        end)
    end)

    it("gives back the rows it held, uncounted, once they waited a second behind a long job, so that "
        .. "another worker runs them while it runs on", function()
        local rest = paced("six")
        leasing({ args = { "--heartbeat=1", "--timeout=60" } }, function(w, other)
            rest()
            H.wait_until(function() return #starts() == 1 end, 15, "the long job's start")
            other(false)
            H.wait_until(function() return #quick() == 30 end, 15, "the quick jobs")
            -- (the long job's run is recorded as it ends)
            assert.are.equal(30, #runs(), "the long job ended before the quick ones behind it: " .. w:stderr())
            each_quick_once()
        end)
    end)

    it("gives back the rows it held, uncounted, when their leases ran out as they waited their turn "
        .. "(the database out of reach), and takes them again", function()
        -- (a job that keeps the CPU 5 s: the loop cannot give back the rows held a
        -- second behind it; the leases run out meanwhile)
        local rest = paced("crunch")
        leasing({ args = { "--heartbeat=1", "--timeout=60" } }, function(w)
            rest()
            H.wait_until(function() return #starts() == 1 end, 15, "the long job's start")
            held_ahead(w)
            H.sleep(0.5)
            -- the jobs table locked for 3.5 s: the renewals wait, and the leases (2 s)
            -- run out, the long job's and those of the rows held behind it
            local lock = io.popen(server.locking(3.5) .. " >/dev/null 2>&1")
            lock:close()
            H.wait_until(function() return #quick() == 30 and #runs() == 31 end, 30, "every job's end")
            each_quick_once()
            -- (said as the long job ends and the rows wait no more, or at the next one's turn)
            local _, said = w:stderr():gsub("its row's reservation [^\n]*while it waited its turn "
                .. "[^\n]*: the rows held ahead go back, uncharged, and the worker takes them again", "")
            assert.are.equal(server.holds_ahead and 1 or 0, said, w:stderr())
        end)
    end)

    it("starts no other job after a TERM that came while a handler kept the CPU, and gives back the row "
        .. "it held or popped, uncounted", function()
        push("busy-last")
        push(2)
        local w = H.spawn({ "work", "database", "--handlers=" .. HANDLERS, "--sleep=0.2", "--no-watch" },
            { env = env() })
        local ok, err = pcall(function()
            H.wait_until(function() return #runs() == 1 end, 10, "the busy job's start")
            w:kill("TERM")
            assert.are.equal(0, w:wait(15), w:stderr())
            assert.are.same({ "busy-last" }, { runs()[1].props.n, runs()[2] and runs()[2].props.n }, w:stderr())
            assert.are.equal(1, count("attempts = 0 and reserved_at is null"))
            assert.are.equal(1, count())
        end)
        w:stop()
        if not ok then error(err, 0) end
    end)

    it("says once, naming the job, that a lease ran out while the database did not take its renewals",
        function()
        push("six")
        leasing({ args = { "--heartbeat=1", "--timeout=60" } }, function(w)
            H.wait_until(function() return #starts() == 1 end, 10, "the job's start")
            H.sleep(1)
            -- the jobs table locked for 3.5 s: the renewals wait, and the lease (2 s) runs out
            local lock = io.popen(server.locking(3.5) .. " >/dev/null 2>&1")
            lock:close()
            H.wait_until(function() return #runs() == 1 end, 30, "the job's end")
            H.sleep(1.5)
            local _, said = w:stderr():gsub("could not renew the reservation of App\\Jobs\\Simple %(attempt 1%) "
                .. "before it expired %(the database out of reach[^)]*%): another worker may run it too", "")
            assert.are.equal(1, said, w:stderr())
        end)
    end)

    it("fails at once a job whose process was ended for running past its timeout, on its last try",
        function()
        push("busy", "--timeout=1", "--tries=1")
        local r = work()
        assert.matches("ran past its timeout of 1s; its process was ended; failed", r.stderr)
        assert.are.equal(0, count())
        local exception = server.sql("select exception from failed_jobs")
        -- (Laravel before 10.10 words a timeout as MaxAttemptsExceededException)
        assert.matches("^Illuminate\\Queue\\MaxAttemptsExceededException: App\\Jobs\\Simple has been "
            .. "attempted too many times", exception)
        assert.matches('s:4:\\"busy', server.sql("select payload from failed_jobs"), 1, true)
        assert.is_nil(runs()[1], "the job never got to record its run")
    end)

    it("gives a job stopped past its timeout back at once, its attempt counted, until its last try fails "
        .. "it", function()
        push("slow-timeout", "--timeout=1", "--tries=3")
        -- (--concurrency=2: stopped where it waits, its process going on)
        local w = H.spawn({ "work", "database", "--handlers=" .. HANDLERS, "--sleep=0.05", "--no-watch",
            "--concurrency=2" }, { env = env() })
        local failed = pcall(H.wait_until, function()
            return server.sql("select count(*) from failed_jobs"):match("%d+") == "1"
        end, 20)
        w:stop()
        assert.is_true(failed, "not failed within 20 s: " .. w:stderr())
        local _, back = w:stderr():gsub("ran past its timeout of 1s; it was stopped where it waited, and it goes "
            .. "back to its queue with the attempt counted", "")
        assert.are.equal(2, back, w:stderr())
        assert.matches("%(attempt 3%) ran past its timeout of 1s; it was stopped where it waited; failed", w:stderr())
        assert.are.equal(0, count())
        assert.is_nil(runs()[1], "no run got to its end")
    end)

    it("does not pop again a job that ran past retry_after and ended, its delete going with that pop",
        function()
        push("slow1")
        push("next")
        -- --concurrency=1: no pop while the slow job runs (1.5 s, past retry_after 1)
        work({ "--concurrency=1" }, { env = { DB_QUEUE_RETRY_AFTER = "1" } })
        local n = {}
        for _, r in ipairs(runs()) do n[#n + 1] = r.props.n .. ":" .. r.attempts end
        assert.are.same({ "slow1:1", "next:1" }, n)
        assert.are.equal(0, count())
    end)
end

return M
