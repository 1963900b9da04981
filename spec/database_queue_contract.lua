-- What Laravel's database queue does alike on every server (how a worker holds its
-- jobs: spec/database_queue_reservations_contract.lua; the app's database cache store
-- with no Redis: spec/database_queue_cache_store_contract.lua): spec/database_queue_*_spec.lua
-- calls it inside the describe of each (a real SQLite file, MariaDB and PostgreSQL
-- server), with busted's it, before_each and assert of its file. server: luaworker's
-- environment (env), a SQL query's rows as text (sql), a string as an SQL literal
-- (literal), the cache table's key column as the server's grammar quotes it
-- (key_column), a table name as the server quotes it (quote), a table made as the
-- migration made another (copy_table(from, to)), and whether PHP can run beside it
-- (php) and run jobs at the same time as luaworker (mixed).
local H = require "spec.helpers"
local socket = require "socket"
local cjson = H.json

local M = {}

M.HANDLERS = "spec/fixtures/database_handlers"
local HANDLERS = M.HANDLERS
local RAN = H.prefix .. "luaworker:ran"

-- The runs recorded by both runtimes (luaworker's fixture, PHP's RunRecorder).
function M.runs()
    return H.json_list(RAN)
end
local runs = M.runs

-- A string as an SQL literal, in the standard's quoting.
function M.standard_literal(text)
    return "'" .. text:gsub("'", "''") .. "'"
end

-- The contracts' tools on server: env(extra) (luaworker's environment on the
-- database queue), work(args, opts) (a run until the queue is empty, asserted to
-- end well), push(n, ...) (an App\Jobs\Simple job; returns its row id) and
-- count(where) (the jobs table's rows).
function M.tools(server, assert)
    local function env(extra)
        local e = server.env({ QUEUE_CONNECTION = "database" })
        for k, v in pairs(extra or {}) do e[k] = v end
        return e
    end

    local function work(args, opts)
        local full = { "work", "database", "--handlers=" .. HANDLERS, "--sleep=0.05", "--stop-when-empty",
            "--tries=3" }
        for _, a in ipairs(args or {}) do full[#full + 1] = a end
        local r = H.run(full, { env = env(opts and opts.env) })
        assert.are.equal(0, r.status, r.stderr)
        return r
    end

    local function push(n, ...)
        local args = { "push", "App\\Jobs\\Simple", cjson.encode({ n = n }) }
        for _, a in ipairs({ ... }) do args[#args + 1] = a end
        local r = H.run(args, { env = env() })
        assert.are.equal(0, r.status, r.stderr)
        return r.stdout:match("%d+")
    end

    local function count(where)
        return tonumber(server.sql("select count(*) from jobs" .. (where and " where " .. where or ""))
            :match("%d+"))
    end

    return env, work, push, count
end

function M.contract(server, it, before_each, assert)
    local env, work, push, count = M.tools(server, assert)

    before_each(function()
        H.flush()
        server.sql("delete from jobs")
        server.sql("delete from failed_jobs")
    end)

    it("runs the jobs pushed to the jobs table, deleting each row, attempts counted in the row", function()
        for n = 1, 3 do push(n) end
        assert.are.equal(3, count("reserved_at is null and attempts = 0"))
        work()
        local seen = runs()
        assert.are.equal(3, #seen)
        for i, r in ipairs(seen) do
            assert.are.same({ "lua", i, 1 }, { r.runner, r.props.n, r.attempts })
        end
        assert.are.equal(0, count())
    end)

    it("deletes a job that ends while the worker waits for another at once, not after --sleep",
        function()
        push("slow-alone")
        local w = H.spawn({ "work", "database", "--handlers=" .. HANDLERS, "--concurrency=2", "--sleep=6" },
            { env = env() })
        H.wait_until(function() return #runs() == 1 end, 15, "the job to run: " .. w:stderr())
        local ok = pcall(H.wait_until, function() return count() == 0 end, 2)
        w:stop()
        assert.is_true(ok, "the row of the job that ended is still there")
    end)

    it("looks again at once after an empty poll with --sleep=0, as queue:work's sleep(0), not after a "
        .. "second", function()
        local w = H.spawn({ "work", "database", "--handlers=" .. HANDLERS, "--sleep=0" }, { env = env() })
        H.sleep(0.5)  -- (idle)
        local quick, took = 0, {}
        for i = 1, 5 do
            push(i)
            local pushed = socket.gettime()
            H.wait_until(function() return #runs() == i end, 15, "job " .. i .. " to run: " .. w:stderr())
            local waited = socket.gettime() - pushed
            took[i] = string.format("%.2f", waited)
            if waited < 0.3 then quick = quick + 1 end
            H.sleep(0.1 + 0.17 * i)  -- (pushes at other phases of a second)
        end
        w:stop()
        -- (before, it slept a second: about one in 30 runs had four of five this quick)
        assert.is_true(quick >= 4, "picked up after " .. table.concat(took, ", ") .. " s")
    end)

    -- --rest=4 is longer than --retry-after=2: a row left reserved through the rest
    -- expires and the other process takes it again. (With --retry-after=1, a loaded
    -- machine took more than a second from the pop to the delete's commit, once in CI:
    -- the other process took the job again, then, and failed it for its tries.)
    it("deletes a finished job's row before --rest, so that no other process runs it again", function()
        push("quick")
        local w = H.spawn({ "work", "database", "--handlers=" .. HANDLERS, "--processes=2", "--rest=4",
            "--retry-after=2", "--sleep=0.05", "--tries=1" }, { env = env() })
        H.wait_until(function() return #runs() == 1 end, 15, "the job to run: " .. w:stderr())
        local deleted = pcall(H.wait_until, function() return count() == 0 end, 1)
        H.sleep(2.5)
        w:stop()
        assert.is_true(deleted, "the row of the job that ended is still there during the rest")
        assert.are.equal(1, #runs(), w:stderr())
        assert.are.equal(0, count())
        assert.are.equal("0", server.sql("select count(*) from failed_jobs"):match("%d+"))
    end)

    -- a job popped and not started would wait out the rest with its attempt charged
    it("takes one job at a time with --rest, and deletes a job that ends during the rest at once",
        function()
        local slow = push("slow-rest")
        push("quick")
        local w = H.spawn({ "work", "database", "--handlers=" .. HANDLERS, "--concurrency=2", "--rest=4",
            "--sleep=0.05" }, { env = env() })
        H.wait_until(function() return #runs() == 1 end, 15, "the slow job to run: " .. w:stderr())
        local deleted = pcall(H.wait_until, function() return count("id = " .. slow) == 0 end, 1)
        local waiting = count("reserved_at is null and attempts = 0")
        H.wait_until(function() return #runs() == 2 end, 15, "the quick job to run: " .. w:stderr())
        w:stop()
        assert.is_true(deleted, "the row of the job that ended during the rest is still there")
        assert.are.equal(1, waiting, "the job behind was popped before the rest ended")
        assert.are.same({ "slow-rest", "quick" }, { runs()[1].props.n, runs()[2].props.n })
    end)

    it("pushes Laravel's database payload: no id and no attempts, the row's id the job's", function()
        local id = push(4)
        local payload = cjson.decode(server.sql("select payload from jobs where id = " .. id))
        assert.is_nil(payload.id)
        assert.is_nil(payload.attempts)
        assert.are.equal("App\\Jobs\\Simple", payload.displayName)
        work()
        assert.are.equal(tonumber(id), runs()[1].id)
    end)

    it("releases a job as a new row with its attempts so far and the payload unchanged", function()
        local id = push("release")
        local before = server.sql("select payload from jobs where id = " .. id)
        work()
        assert.are.equal(1, count())
        local row = server.sql("select id, attempts, reserved_at is null from jobs")
        local new_id, attempts, unreserved = row:match("^(%d+)|(%d+)|(%S+)")
        assert.are_not.equal(id, new_id)
        assert.are.equal("1", attempts)
        assert.is_truthy(unreserved == "1" or unreserved == "t")
        assert.are.equal(before, server.sql("select payload from jobs where id = " .. new_id))
        -- released for 30 s (a loaded worker would take it again after a short delay):
        -- due now
        server.sql("update jobs set available_at = available_at - 30")
        work()
        local seen = runs()
        assert.are.same({ 1, 2 }, { seen[1].attempts, seen[2].attempts })
        assert.are.same({ tonumber(id), tonumber(new_id) }, { seen[1].id, seen[2].id })
        assert.are.equal(0, count())
    end)

    it("does not release a job whose reservation another worker took meanwhile: it would run twice", function()
        local id = push("slow-release")
        local w = H.spawn({ "work", "database", "--handlers=" .. HANDLERS, "--sleep=0.05", "--stop-when-empty" },
            { env = env() })
        H.wait_until(function() return count("reserved_at is not null") == 1 end, 10, "the job to start")
        -- its reservation expired and another worker took it: a new reserved_at, one
        -- attempt more (as every pop counts one)
        server.sql("update jobs set reserved_at = reserved_at + 1, attempts = attempts + 1")
        assert.are.equal(0, w:wait(20), w:stderr())
        -- the row is the other worker's, reserved, as it was: no second copy
        assert.are.equal(1, count())
        assert.are.equal(id, server.sql("select id from jobs where reserved_at is not null"):match("%d+"))
    end)

    it("shows its rows with peek, waiting then delayed, with their ids, attempts and times, taking none", function()
        local first = push(1)
        local later = push(2, "--delay=600")
        local r = H.run({ "peek", "database" }, { env = env() })
        assert.are.equal(0, r.status, r.stderr)
        local created = tonumber(server.sql("select created_at from jobs where id = " .. first):match("%d+"))
        local due = tonumber(server.sql("select available_at from jobs where id = " .. later):match("%d+"))
        assert.matches("^pending  " .. first .. "  App\\Jobs\\Simple  attempts 0  pushed "
            .. os.date("%Y-%m-%d %H:%M:%S", created):gsub("%-", "%%-") .. "\nApp\\Jobs\\Simple {\n    n = 1,", r.stdout)
        assert.matches("\n\ndelayed  " .. later .. "  App\\Jobs\\Simple  attempts 0  pushed [%d: -]+  due "
            .. os.date("%Y-%m-%d %H:%M:%S", due):gsub("%-", "%%-") .. "\n", r.stdout)
        assert.are.equal(2, count("reserved_at is null"))
        -- a reserved row last, until its reservation expires (DB_QUEUE_RETRY_AFTER, 90 s)
        server.sql("update jobs set reserved_at = 1893456000, attempts = 1 where id = " .. first)
        r = H.run({ "peek", "database" }, { env = env() })
        assert.matches("\n\nreserved  " .. first .. "  App\\Jobs\\Simple  attempts 1  pushed [%d: -]+  reserved until "
            .. os.date("%Y-%m-%d %H:%M:%S", 1893456090):gsub("%-", "%%-") .. "\n", r.stdout)
        assert.is_nil(r.stdout:find("pending", 1, true))
    end)

    it("records a failed job with the row's payload and deletes the row", function()
        local id = push("fail", "--tries=1")
        local payload = server.sql("select payload from jobs where id = " .. id)
        local r = work()
        assert.matches("failing on purpose", r.stderr)
        assert.are.equal(0, count())
        assert.are.equal(payload, server.sql("select payload from failed_jobs"))
        assert.are.equal("database|default\n", server.sql("select connection, queue from failed_jobs"))
    end)

    it("pushes a failed job back onto the jobs table with luaworker retry, as queue:retry, a "
        .. "retryUntil already past made null", function()
        local id = push("fail", "--tries=1")
        local payload = server.sql("select payload from jobs where id = " .. id):gsub("\n$", "")
        work()
        local past = payload:gsub('"retryUntil":null', '"retryUntil":1000')
        assert.are_not.equal(payload, past)
        server.sql("insert into failed_jobs (uuid, connection, queue, payload, exception, failed_at) values "
            .. "('past-retry-until', 'database', 'default', " .. server.literal(past)
            .. ", 'x', '2026-01-01 00:00:00')")
        local r = H.run({ "retry", "all" }, { env = env() })
        assert.are.equal(0, r.status, r.stderr)
        assert.are.equal("", server.sql("select id from failed_jobs"))
        local rows = server.sql("select payload, attempts, reserved_at is null from jobs order by id")
        local expected = payload .. "|0|"
        assert.are.equal(2, select(2, rows:gsub("\n", "")))
        for line in rows:gmatch("[^\n]+") do
            assert.are.equal(expected, line:sub(1, #expected))
        end
    end)

    it("pops an expired reservation again, counting the attempt, and leaves a live one", function()
        local now = os.time()
        local stale, live = push("stale"), push("live")
        server.sql(string.format("update jobs set reserved_at = %d, attempts = 1 where id = %s", now - 200, stale))
        server.sql(string.format("update jobs set reserved_at = %d, attempts = 1 where id = %s", now, live))
        work()
        local seen = runs()
        assert.are.equal(1, #seen)
        assert.are.same({ "stale", 2 }, { seen[1].props.n, seen[1].attempts })
        assert.are.equal(tostring(live), server.sql("select id from jobs"):match("%d+"))
    end)

    it("leaves a delayed job until its available_at; size counts it as delayed", function()
        -- (5 s: a size and a worker's run under a sanitizer on a busy machine took
        -- more than 2)
        push("later", "--delay=5")
        local r = H.run({ "size", "database" }, { env = env() })
        assert.are.equal("default: 0 pending, 1 delayed, 0 reserved (1 in all)\n", r.stdout)
        work()
        assert.are.equal(0, #runs())
        H.wait_until(function()
            work()
            return #runs() == 1
        end, 15, "the delayed job to run")
        assert.are.equal(0, count())
    end)

    -- "Order": a reserved word in mixed case; the others hold characters an
    -- unquoted name cannot (Laravel's grammar quotes every table it names)
    it("works tables whose names SQL must quote: the jobs, the failed jobs and the cache store's",
        function()
        local tables = { jobs = "Order", failed_jobs = "Failed-Jobs", cache = "app cache" }
        local function drop_all()
            for _, to in pairs(tables) do server.sql("drop table if exists " .. server.quote(to)) end
        end
        drop_all()
        for from, to in pairs(tables) do server.copy_table(from, to) end
        local e = env({ DB_QUEUE_TABLE = "Order", LUAWORKER_FAILED_TABLE = "Failed-Jobs",
            CACHE_STORE = "database", DB_CACHE_TABLE = "app cache" })
        local function run(args)
            local r = H.run(args, { env = e })
            assert.are.equal(0, r.status, r.stderr)
            return r
        end
        run({ "push", "App\\Jobs\\Simple", '{"n":1}' })
        run({ "push", "App\\Jobs\\Quiet", "{}", "--max-exceptions=2", "--tries=5" })
        assert.are.equal("default: 2 pending, 0 delayed, 0 reserved (2 in all)\n", run({ "size", "database" }).stdout)
        local r = run({ "work", "database", "--handlers=" .. HANDLERS, "--stop-when-empty", "--sleep=0.05" })
        -- Quiet failed by its second exception: the counter in the cache table
        assert.matches("attempt 2", r.stderr)
        assert.are.equal(1, #runs())
        assert.is_truthy(run({ "failed" }).stdout:find("App\\Jobs\\Quiet", 1, true))
        run({ "retry", "all" })
        local function rows(name) return server.sql("select count(*) from " .. server.quote(name)):match("%d+") end
        assert.are.same({ "1", "0", "0" }, { rows("Order"), rows("Failed-Jobs"), rows("app cache") })
        assert.are.equal(0, count())
        assert.are.equal("0", server.sql("select count(*) from failed_jobs"):match("%d+"))
        drop_all()
    end)

    it("clears a queue of the database connection, as queue:clear", function()
        push(1)
        push(2, "--queue=other")
        local r = H.run({ "clear", "database" }, { env = env() })
        assert.are.equal("Cleared 1 jobs from the [default] queue\n", r.stdout)
        assert.are.equal(1, count("queue = 'other'"))
    end)

    if server.php then
        it("runs the jobs PHP's jobs:dispatch pushes, and PHP's queue:work runs luaworker's", function()
            for n = 1, 2 do
                H.artisan({ "jobs:dispatch", "Simple", "--connection=database", "--args=[" .. n .. "]" }, env())
            end
            work()
            push(3)
            H.artisan({ "queue:work", "database", "--stop-when-empty" }, env())
            local by = {}
            for _, r in ipairs(runs()) do by[r.props.n] = r.runner .. ":" .. r.attempts end
            assert.are.same({ "lua:1", "lua:1", "php:1" }, by)
            assert.are.equal(0, count())
        end)


        it("counts RateLimited's hits in the app's database cache store with PHP's queue:work by turns: 3 a "
            .. "minute in all, the rest released until its timer ends", function()
            server.sql("delete from cache")
            local e = env({ CACHE_DRIVER = "database" })
            local function turn(n, run)
                H.artisan({ "jobs:dispatch", "Limited", "--connection=database", "--count=2",
                    "--args=" .. cjson.encode({ n = "t" .. n, redis = false }) }, e)
                run()
            end
            local function lua()
                local r = H.run({ "work", "database", "--handlers=spec/fixtures/middleware_handlers", "--sleep=0.05",
                    "--stop-when-empty", "--tries=100" }, { env = e })
                assert.are.equal(0, r.status, r.stderr)
            end
            turn(1, lua)
            turn(2, function() H.artisan({ "queue:work", "database", "--stop-when-empty", "--tries=100" }, e) end)
            turn(3, lua)
            local ran = {}
            for i, r in ipairs(H.r("LRANGE", H.prefix .. "limited:runs", 0, -1)) do ran[i] = r:match("^(%S+ %a+)") end
            assert.are.same({ "t1 lua", "t1 lua", "t2 php" }, ran)
            -- the other three wait for the limiter's timer (a minute) plus 3 s, their rows released
            assert.are.equal(3, count("reserved_at is null and available_at > " .. (os.time() + 40)))
            local f = io.popen("printf %s paymentsacme | md5sum")
            local key = "laravel_cache" .. f:read("*a"):match("%x+")
            f:close()
            local rows = server.sql("select a.value, b." .. server.key_column .. " from cache a, cache b where a."
                .. server.key_column .. " = '" .. key .. "' and b." .. server.key_column .. " = '" .. key .. ":timer'")
            assert.are.equal("i:3;|" .. key .. ":timer\n", rows)
        end)

        it("releases a unique job's lock in the app's database cache store once it ran", function()
            server.sql("delete from cache_locks")
            local e = env({ CACHE_DRIVER = "database" })
            H.artisan({ "jobs:dispatch", "Uniq", "--connection=database" }, e)
            assert.matches("^laravel_cachelaravel_unique_job:App\\Jobs\\Uniquniq%-1|",
                server.sql("select " .. server.key_column .. ", owner from cache_locks"))
            work(nil, { env = e })
            assert.are.equal(1, #runs())
            assert.are.equal("", server.sql("select * from cache_locks"))
        end)
    end

    if server.mixed then
        it("shares WithoutOverlapping's lock in the app's database cache store with PHP's queue:work: no "
            .. "two jobs of one key ever run at once, whichever runtime runs them", function()
            server.sql("delete from cache_locks")
            local e = env({ CACHE_DRIVER = "database" })
            H.artisan({ "jobs:dispatch", "Overlapping", "--connection=database", "--count=12",
                '--args={"n":"{i}","ms":150}' }, e)
            local lw = H.spawn({ "work", "database", "--handlers=spec/fixtures/middleware_handlers", "--sleep=0.05",
                "--no-watch", "--tries=100", "--concurrency=4" }, { env = e })
            local php = H.spawn_artisan({ "queue:work", "database", "--sleep=0", "--tries=100" }, e)
            local trail = H.prefix .. "overlap:trail"
            local ok, err = pcall(function()
                local _, by = H.overlap_runs(trail, 12, 60)
                assert.are.equal(12, by.lua + by.php)
                assert.is_true(by.lua > 0 and by.php > 0, cjson.encode(by))
                H.wait_until(function() return count() == 0 end, 10, "the last rows' deletes")
                assert.are.equal("", server.sql("select * from cache_locks"))
            end)
            php.stop()
            lw:stop()
            if not ok then error(err, 0) end
        end)

        it("runs each job once in a mixed fleet of PHP's queue:work and luaworker", function()
            H.artisan({ "jobs:dispatch", "Simple", "--connection=database", "--count=120" }, env())
            local php = H.spawn_artisan({ "queue:work", "database", "--stop-when-empty", "--sleep=0" }, env())
            local lw = work({ "--processes=2", "--concurrency=4" })
            local php_status = php.wait(60)
            local left = server.sql("select id, attempts, reserved_at, available_at from jobs")
            local failed = server.sql("select exception from failed_jobs")
            local what = "php status " .. tostring(php_status) .. "; left: " .. left .. "\nfailed: "
                .. failed .. "\nphp: " .. php.output() .. "\nluaworker: " .. lw.stderr
            local ids, by = {}, { lua = 0, php = 0 }
            for _, r in ipairs(runs()) do
                assert.is_nil(ids[r.id], "job " .. tostring(r.id) .. " ran twice")
                ids[r.id] = true
                by[r.runner] = by[r.runner] + 1
            end
            assert.are.equal(120, by.lua + by.php, what)
            assert.is_true(by.lua > 0)
            assert.are.equal("", left, what)
            assert.are.equal("", failed, what)
        end)
    end

    it("runs each job once with four processes taking jobs at once", function()
        local script = H.tmpdir() .. "/push.lua"
        H.write_file(script, [[
local luaworker = require "luaworker"
for n = 1, 150 do luaworker.dispatch("App\\Jobs\\Simple", { n = n }) end
]])
        local pushed = H.run({ "lua", script }, { env = env() })
        assert.are.equal(0, pushed.status, pushed.stderr)
        assert.are.equal(150, count())
        local r = work({ "--processes=4", "--concurrency=3" })
        local seen = {}
        for _, run in ipairs(runs()) do
            assert.is_nil(seen[run.id], "job " .. tostring(run.id) .. " ran twice")
            seen[run.id] = true
            assert.are.equal(1, run.attempts)
        end
        assert.are.equal(150, #runs(), r.stderr)
        assert.are.equal(0, count())
        assert.are.equal("0", server.sql("select count(*) from failed_jobs"):match("%d+"))
    end)

    -- Runs a script inside luaworker that inserts rows of App\Jobs\Simple with
    -- props.n of each name in names, padded (a payload key of its own) to bytes.
    local function insert_padded(names, bytes)
        local script = H.tmpdir() .. "/padded.lua"
        H.write_file(script, string.format([[
local luaworker = require "luaworker"
local db = luaworker.db()
for _, n in ipairs(%s) do
    local command = string.format('O:15:"App\\Jobs\\Simple":1:{s:1:"n";s:%%d:"%%s";}', #n, n)
    local payload = luaworker.json.encode({ uuid = "padded-" .. n, displayName = "App\\Jobs\\Simple",
        job = "Illuminate\\Queue\\CallQueuedHandler@call", pad = string.rep("p", %d),
        data = { commandName = "App\\Jobs\\Simple", command = command } })
    db:insert("insert into jobs (queue, payload, attempts, available_at, created_at) "
        .. "values ('default', ?, 0, ?, ?)", { payload, os.time(), os.time() })
end
]], '{ "' .. table.concat(names, '", "') .. '" }', bytes))
        local r = H.run({ "lua", script }, { env = env() })
        assert.are.equal(0, r.status, r.stderr)
    end

    it("leaves a row whose payload is longer than a quarter of --memory-limit as it is, attempts "
        .. "uncounted, says so once, and runs the jobs behind it", function()
        insert_padded({ "big" }, 5 * 1048576)
        for n = 1, 3 do push(n) end
        -- it was: "error while taking a job: ... does not fit under --memory-limit=16"
        -- at every pop, and no job of the queue ran
        local r = work({ "--memory-limit=16", "--concurrency=2" })
        local ran = {}
        for _, run in ipairs(runs()) do ran[#ran + 1] = run.props.n .. ":" .. run.attempts end
        table.sort(ran)
        assert.are.same({ "1:1", "2:1", "3:1" }, ran, r.stderr)
        assert.are.equal(1, count("attempts = 0 and reserved_at is null"))
        local _, said = r.stderr:gsub("has a payload of 52%d+ bytes, longer than the 4194304 bytes a pop may "
            .. "take under %-%-memory%-limit=16 %(a quarter of it%): it stays in table jobs", "")
        assert.are.equal(1, said, r.stderr)
        -- a worker that can hold it runs it
        work({ "--memory-limit=64" })
        assert.are.equal("big:1", runs()[4].props.n .. ":" .. runs()[4].attempts)
        assert.are.equal(0, count())
    end)

    it("pops no more payloads at once than a quarter of --memory-limit, each job run once on its "
        .. "first attempt", function()
        -- 8 free slots, 8 rows of 2.2 MB: a pop takes 7 (15.4 MB of the 16 a quarter
        -- of 64 is) and, on PostgreSQL, gives the 8th back at once; their payloads are
        -- read after the rows are chosen (a pop's reply holds only those of up to 2 MB:
        -- 16 / 8). (The rows' 17.6 MB would fit in the heap too: this checks that
        -- path, each job once, no attempt charged to a row given back; a reply that
        -- could not fit fails the case above.)
        local names = {}
        for n = 1, 8 do names[n] = "m" .. n end
        insert_padded(names, math.floor(2.2 * 1048576))
        local r = work({ "--memory-limit=64", "--concurrency=8" })
        local ran = {}
        for _, run in ipairs(runs()) do ran[#ran + 1] = run.props.n .. ":" .. run.attempts end
        table.sort(ran)
        assert.are.same({ "m1:1", "m2:1", "m3:1", "m4:1", "m5:1", "m6:1", "m7:1", "m8:1" }, ran, r.stderr)
        assert.are.equal(0, count())
    end)

    it("gives back the jobs a stop finds popped and not started, their attempts uncounted", function()
        -- one pop takes a job per free slot (5); the first keeps the CPU past
        -- --max-time, so the worker stops with four popped and not started, and the
        -- supervisor's next worker finds them available
        push("busy")
        for n = 2, 5 do push(n) end
        local r = work({ "--concurrency=5", "--max-time=1" })
        local seen = {}
        for _, run in ipairs(runs()) do
            assert.is_nil(seen[run.props.n], run.props.n .. " ran twice")
            seen[run.props.n] = true
            assert.are.equal(1, run.attempts)
        end
        assert.are.equal(5, #runs(), r.stderr)
        assert.are.equal(0, count())
    end)
end
return M
