-- Laravel's database queue (luaworker work database): the jobs table of the Laravel 8
-- app (examples/laravel, its migration as `queue:table` writes it) on a real SQLite
-- file, MariaDB and PostgreSQL server, with PHP's own jobs:dispatch and queue:work
-- beside luaworker on each.
local H = require "spec.helpers"
local cjson = H.json

local HANDLERS = "spec/fixtures/database_handlers"
local RAN = H.prefix .. "luaworker:ran"

-- The runs recorded by both runtimes (luaworker's fixture, PHP's RunRecorder).
local function runs()
    return H.json_list(RAN)
end

-- What is asked of every server: luaworker's environment (env), a SQL query's rows
-- as text (sql), a string as an SQL literal (literal), the cache table's key column
-- as the server's grammar quotes it (key_column), and whether PHP can run beside it
-- (php) and run jobs at the same time as luaworker (mixed).
local function standard_literal(text)
    return "'" .. text:gsub("'", "''") .. "'"
end

local function contract(server)
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
        H.sleep(1.1)
        work()
        local seen = runs()
        assert.are.same({ 1, 2 }, { seen[1].attempts, seen[2].attempts })
        assert.are.same({ tonumber(id), tonumber(new_id) }, { seen[1].id, seen[2].id })
        assert.are.equal(0, count())
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
        push("later", "--delay=2")
        local r = H.run({ "size", "database" }, { env = env() })
        assert.are.equal("default: 0 pending, 1 delayed, 0 reserved (1 in all)\n", r.stdout)
        work()
        assert.are.equal(0, #runs())
        H.wait_until(function()
            work()
            return #runs() == 1
        end, 10, "the delayed job to run")
        assert.are.equal(0, count())
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

describe("the database queue on SQLite", function()
    local file
    setup(function()
        H.laravel_setup()
        file = H.tmpdir() .. "/app.sqlite"
        H.write_file(file, "")
        H.artisan({ "migrate", "--force" }, { DB_CONNECTION = "sqlite", DB_DATABASE = file })
    end)

    -- PHP's queue:work beside luaworker on one SQLite file is no test of luaworker:
    -- PHP's delete, a read then a write in a deferred transaction, gets "database is
    -- locked" at once whenever another process holds the write lock (SQLite does not
    -- wait where waiting could deadlock), and Laravel then leaves the job it ran
    -- reserved, to run again after retry_after; two PHP workers do the same to each
    -- other. The mixed fleet runs on MariaDB and PostgreSQL below; here the app's
    -- pushes go on beside luaworker's workers (its inserts wait for the lock).
    local server = {
        php = true,
        key_column = '"key"',
        literal = standard_literal,
        env = function(extra)
            local e = { DB_CONNECTION = "sqlite", DB_DATABASE = file }
            for k, v in pairs(extra or {}) do e[k] = v end
            return e
        end,
        sql = function(sql) return H.sqlite(file, sql) end,
    }
    contract(server)

    it("refuses to start, naming the table, when the jobs table is not there", function()
        local r = H.run({ "work", "database", "--handlers=" .. HANDLERS, "--stop-when-empty" },
            { env = server.env({ DB_QUEUE_TABLE = "no_such_jobs" }) })
        assert.are.equal(2, r.status, r.stderr)
        assert.matches("cannot start: the database queue's table no_such_jobs: [^\n]*no such table", r.stderr)
    end)

    it("stops on PHP's queue:restart in the app's file cache store (Laravel 8's default)", function()
        local e = server.env({ QUEUE_CONNECTION = "database", CACHE_DRIVER = "file" })
        local w = H.spawn({ "work", "database", "--handlers=" .. HANDLERS, "--sleep=0.1",
            "--env-file=" .. H.root .. "/examples/laravel/.env" }, { env = e })
        H.sleep(1.2)
        assert.is_nil(w:status(), w:stderr())
        H.artisan({ "queue:restart" }, e)
        assert.are.equal(0, w:wait(10), w:stderr())
    end)

    it("runs each job once while PHP pushes onto the same file, none of the app's pushes lost", function()
        H.flush()
        H.sqlite(file, "delete from jobs; delete from failed_jobs")
        local e = server.env({ QUEUE_CONNECTION = "database" })
        local w = H.spawn({ "work", "database", "--handlers=" .. HANDLERS, "--sleep=0.01", "--processes=2",
            "--concurrency=4" }, { env = e })
        -- the app's dispatches, one insert each, while two workers pop and delete
        local php = H.spawn_artisan({ "jobs:dispatch", "Simple", "--connection=database", "--count=150" }, e)
        assert.are.equal(0, php.wait(120), php.output())
        H.wait_until(function() return #runs() >= 150 and H.sqlite(file, "select count(*) from jobs"):match("^0")
            end, 60, "the jobs to run: " .. w:stderr())
        w:stop()
        local seen = {}
        for _, r in ipairs(runs()) do
            assert.is_nil(seen[r.id], "job " .. tostring(r.id) .. " ran twice")
            seen[r.id] = true
        end
        assert.are.equal(150, #runs())
        assert.are.equal("0", H.sqlite(file, "select count(*) from failed_jobs"):match("%d+"))
    end)
end)

describe("the database queue on MariaDB", function()
    local mariadb
    local server = { php = true, mixed = true, key_column = "`key`" }
    -- MySQL's string literals take backslash escapes
    function server.literal(text)
        return "'" .. text:gsub("\\", "\\\\"):gsub("'", "''") .. "'"
    end
    setup(function()
        H.laravel_setup()
        mariadb = H.mariadb()
        H.artisan({ "migrate", "--force" }, mariadb.env())
    end)
    teardown(function() if mariadb then mariadb.remove() end end)

    function server.env(extra) return mariadb.env(extra) end
    -- rows as text, columns joined by '|', as the sqlite3 shell prints them
    function server.sql(sql)
        local p = io.popen(string.format("mariadb --no-defaults -S %s -uroot -N -B -r app -e %s 2>&1",
            H.quote(mariadb.socket), H.quote(sql)))
        local text = p:read("*a"):gsub("\t", "|")
        p:close()
        return text
    end
    contract(server)

    it("waits out a database that goes down with jobs in flight, says so once, and runs each job "
        .. "once", function()
        server.sql("delete from jobs")
        local e = mariadb.env({ QUEUE_CONNECTION = "database" })
        for i = 1, 4 do
            local r = H.run({ "push", "App\\Jobs\\Simple", '{"n":"slow' .. i .. '"}' }, { env = e })
            assert.are.equal(0, r.status, r.stderr)
        end
        local w = H.spawn({ "work", "database", "--handlers=" .. HANDLERS, "--concurrency=2", "--sleep=0.1" },
            { env = e })
        H.wait_until(function() return server.sql("select count(*) from jobs where reserved_at is not null")
            :match("^2") end, 10, "two jobs in flight")
        mariadb.stop()
        H.sleep(3)
        mariadb.serve()
        H.wait_until(function() return #runs() == 4 and server.sql("select count(*) from jobs"):match("^0") end,
            30, "the jobs to finish: " .. w:stderr())
        w:stop()
        local n = {}
        for _, r in ipairs(runs()) do
            assert.is_nil(n[r.props.n], r.props.n .. " ran twice")
            n[r.props.n] = r.attempts
        end
        assert.are.same({ slow1 = 1, slow2 = 1, slow3 = 1, slow4 = 1 }, n)
        local _, down = w:stderr():gsub("cannot reach the database of the queue", "")
        local _, back = w:stderr():gsub("can be reached again", "")
        assert.are.same({ 1, 1 }, { down, back }, w:stderr())
    end)

    it("pops with FOR UPDATE SKIP LOCKED (MariaDB 10.6+): a row another transaction locks is "
        .. "passed over, not waited for", function()
        server.sql("delete from jobs")
        local e = mariadb.env({ QUEUE_CONNECTION = "database" })
        local first = H.run({ "push", "App\\Jobs\\Simple", '{"n":"locked"}' }, { env = e }).stdout:match("%d+")
        H.run({ "push", "App\\Jobs\\Simple", '{"n":"free"}' }, { env = e })
        -- a session that holds the first row's lock for 3 s
        os.execute(string.format("(mariadb --no-defaults -S %s -uroot app -e %s >/dev/null 2>&1 &)",
            H.quote(mariadb.socket), H.quote("begin; select id from jobs where id = " .. first
            .. " for update; do sleep(3); commit;")))
        H.sleep(0.5)
        local started = os.time()
        local r = H.run({ "work", "database", "--handlers=" .. HANDLERS, "--once" }, { env = e })
        assert.are.equal(0, r.status, r.stderr)
        assert.is_true(os.time() - started < 3)
        assert.are.equal("free", runs()[1].props.n)
    end)
end)

describe("the database queue on PostgreSQL", function()
    local pg
    local server = { php = true, mixed = true, key_column = '"key"', literal = standard_literal }
    setup(function()
        H.laravel_setup()
        pg = H.postgresql()
        H.artisan({ "migrate", "--force" }, pg.env())
    end)
    teardown(function() if pg then pg.remove() end end)

    function server.env(extra) return pg.env(extra) end
    function server.sql(sql) return pg.psql(sql) end
    contract(server)

    it("pops a job per free slot of --concurrency in one statement: 40 jobs in a few commits", function()
        local script = H.tmpdir() .. "/push.lua"
        H.write_file(script, [[
local luaworker = require "luaworker"
for n = 1, 40 do luaworker.dispatch("App\\Jobs\\Simple", { n = n }) end
]])
        local e = pg.env({ QUEUE_CONNECTION = "database", CACHE_DRIVER = "database" })
        pg.psql("delete from jobs")
        H.flush()
        assert.are.equal(0, H.run({ "lua", script }, { env = e }).status)
        local function commits()
            return tonumber(pg.psql("select xact_commit from pg_stat_database where datname = 'postgres'")
                :match("%d+"))
        end
        H.sleep(0.6)  -- the statistics are sent every 0.5 s at most
        local before = commits()
        local r = H.run({ "work", "database", "--handlers=" .. HANDLERS, "--concurrency=20", "--sleep=0.05",
            "--stop-when-empty" }, { env = e })
        assert.are.equal(0, r.status, r.stderr)
        assert.are.equal(40, #runs())
        H.sleep(0.6)
        -- a pop a job would take 40 commits and more; 20 a pop: a handful (and the
        -- worker's checks at its start)
        local n = commits() - before
        assert.is_true(n < 25, n .. " commits")
    end)

    describe("with luaworker notify install", function()
        local socket = require "socket"
        local e
        local function notify(what)
            return H.run({ "notify", what }, { env = e })
        end
        -- the connections that LISTEN (luaworker.db.listener's)
        local function listening()
            return tonumber(pg.psql("select count(*) from pg_stat_activity where query ilike 'listen%'")
                :match("%d+"))
        end
        local function push(n, q)
            local args = { "push", "App\\Jobs\\Simple", cjson.encode({ n = n }) }
            if q then args[#args + 1] = "--queue=" .. q end
            local r = H.run(args, { env = e })
            assert.are.equal(0, r.status, r.stderr)
        end
        local workers = H.worker_set()
        before_each(function()
            H.flush()
            e = pg.env({ QUEUE_CONNECTION = "database", CACHE_DRIVER = "database" })
            pg.psql("delete from jobs")
            local r = notify("install")
            assert.are.equal(0, r.status, r.stderr)
        end)
        after_each(function()
            workers.stop_all()
            notify("remove")
        end)

        it("adds a function and a trigger, saying so, and remove takes both away", function()
            local r = notify("install")
            assert.are.equal(0, r.status, r.stderr)
            assert.matches("function luaworker_notify_jobs%(%): NOTIFY luaworker_jobs", r.stdout)
            assert.matches("trigger luaworker_notify on jobs: after insert, for each row", r.stdout)
            assert.are.equal("1", pg.psql("select count(*) from pg_trigger where tgname = 'luaworker_notify' "
                .. "and tgrelid = 'jobs'::regclass"):match("%d+"))
            r = notify("remove")
            assert.are.equal(0, r.status, r.stderr)
            assert.matches("Removed from the database of the connection pgsql: trigger luaworker_notify on "
                .. "jobs and function luaworker_notify_jobs%(%)", r.stdout)
            assert.are.equal("0", pg.psql("select count(*) from pg_trigger where tgname = 'luaworker_notify'")
                :match("%d+"))
            assert.are.equal("0", pg.psql("select count(*) from pg_proc where proname = 'luaworker_notify_jobs'")
                :match("%d+"))
        end)

        it("starts a job pushed to an idle worker at once, not after --sleep; a push to another queue "
            .. "does not wake it", function()
            local w = workers.spawn({ "work", "database", "--handlers=" .. HANDLERS, "--sleep=60",
                "--queue=default" }, { env = e })
            H.wait_until(function() return listening() == 1 end, 10, "the worker to listen: " .. w:stderr())
            H.sleep(0.3)  -- its first look done, its wait begun
            local started = socket.gettime()
            push("now")
            H.wait_until(function() return #runs() == 1 end, 10, "the job to run")
            assert.is_true(socket.gettime() - started < 3, "ran after " .. (socket.gettime() - started) .. " s")
            -- a job of another queue: the worker keeps waiting, and a second one of its own still wakes it
            push("other", "other")
            push("second")
            H.wait_until(function() return #runs() == 2 end, 10, "the second job to run")
            assert.are.equal("second", runs()[2].props.n)
            assert.are.equal("1", pg.psql("select count(*) from jobs where queue = 'other'"):match("%d+"))
            -- a stop signal ends the wait at once
            w:kill("TERM")
            assert.are.equal(0, w:wait(5), w:stderr())
            assert.are.equal("", w:stderr())
        end)

        it("listens again after its connection is ended, and polls meanwhile", function()
            local w = workers.spawn({ "work", "database", "--handlers=" .. HANDLERS, "--sleep=5" }, { env = e })
            H.wait_until(function() return listening() == 1 end, 10, "the worker to listen: " .. w:stderr())
            pg.psql("select pg_terminate_backend(pid) from pg_stat_activity where query ilike 'listen%'")
            push("after")
            H.wait_until(function() return #runs() == 1 end, 10, "the job to run: " .. w:stderr())
            H.wait_until(function() return listening() == 1 end, 10, "the worker to listen again")
            local started = socket.gettime()
            push("again")
            H.wait_until(function() return #runs() == 2 end, 10, "the job to run")
            assert.is_nil(w:status())
            assert.is_true(socket.gettime() - started < 3, "ran after " .. (socket.gettime() - started) .. " s")
        end)
    end)

    it("refuses notify install where the queue's connection is not PostgreSQL's, naming it", function()
        local r = H.run({ "notify", "install" }, { env = { QUEUE_CONNECTION = "database", DB_CONNECTION = "sqlite",
            DB_DATABASE = "/nonexistent/x.sqlite" } })
        assert.are.equal(2, r.status)
        assert.are.equal("luaworker: notify install: LISTEN/NOTIFY is PostgreSQL's: the database queue's "
            .. "connection sqlite is sqlite (its workers look for jobs every --sleep seconds)\n", r.stderr)
    end)
end)
