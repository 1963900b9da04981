-- Laravel's database queue (luaworker work database): the jobs table of the Laravel 8
-- app (examples/laravel, its migration as `queue:table` writes it) on a real SQLite
-- file, MariaDB and PostgreSQL server, with PHP's own jobs:dispatch and queue:work
-- beside luaworker on each. What every server is asked alike is in
-- spec/database_queue_contract.lua; each server's own cases are here.
local H = require "spec.helpers"
local cjson = H.json
local C = require "spec.database_queue_contract"

local HANDLERS = C.HANDLERS
local runs = C.runs
local standard_literal = C.standard_literal

local function contract(server)
    C.contract(server, it, before_each, assert)
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
        -- the table named to, made as the migration made from (its id an autoincrement)
        copy_table = function(from, to)
            local made = H.sqlite(file, "select sql from sqlite_master where type = 'table' and name = '"
                .. from .. "'")
            H.sqlite(file, (made:gsub('^CREATE TABLE "' .. from .. '"', 'CREATE TABLE "' .. to .. '"', 1)))
        end,
        quote = function(name) return '"' .. name .. '"' end,
    }
    contract(server)

    it("refuses to start, naming the table, when the jobs table is not there", function()
        local r = H.run({ "work", "database", "--handlers=" .. HANDLERS, "--stop-when-empty" },
            { env = server.env({ DB_QUEUE_TABLE = "no_such_jobs" }) })
        assert.are.equal(2, r.status, r.stderr)
        assert.matches("cannot start: the database queue's table no_such_jobs: [^\n]*no such table", r.stderr)
    end)

    it("refuses to start with status 2, naming the path, when the database file is not there", function()
        local missing = H.tmpdir() .. "/no-such.sqlite"
        for _, args in ipairs({ { "--stop-when-empty" }, { "--once" }, { "--laravel=12" } }) do
            local r = H.run({ "work", "database", "--handlers=" .. HANDLERS, args[1] },
                { env = server.env({ DB_DATABASE = missing, QUEUE_FAILED_DRIVER = "null" }), timeout = 20 })
            assert.are.equal(2, r.status, r.stderr)
            local said = args[1] == "--laravel=12"
                and "Database file at path [" .. missing .. "] does not exist. Ensure this is an absolute path to "
                    .. "the database."
                or "Database (" .. missing .. ") does not exist."
            assert.is_truthy(r.stderr:find("cannot start: the database queue's table jobs: "
                .. "Illuminate\\Database\\QueryException: " .. said, 1, true), r.stderr)
            assert.is_nil(r.stderr:find("cannot reach", 1, true))
        end
        local r = H.run({ "size", "database" }, { env = server.env({ DB_DATABASE = missing,
            QUEUE_CONNECTION = "database" }), timeout = 20 })
        assert.are.equal(1, r.status, r.stderr)
        assert.is_truthy(r.stderr:find("Database (" .. missing .. ") does not exist.", 1, true), r.stderr)
        assert.is_nil(io.open(missing), "a file was made")
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
    function server.quote(name) return "`" .. name .. "`" end
    function server.copy_table(from, to) server.sql("create table `" .. to .. "` like `" .. from .. "`") end
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
    function server.copy_table(from, to)
        pg.psql('create table "' .. to .. '" (like "' .. from .. '" including all)')
    end
    function server.quote(name) return '"' .. name .. '"' end
    contract(server)

    -- The commits a worker with args (after --handlers) makes for 40 jobs of
    -- App\Jobs\Simple until the queue is empty (and the worker's checks at its start).
    local function commits_for_40(args)
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
        local full = { "work", "database", "--handlers=" .. HANDLERS, "--sleep=0.05", "--stop-when-empty" }
        for _, a in ipairs(args) do full[#full + 1] = a end
        local r = H.run(full, { env = e })
        assert.are.equal(0, r.status, r.stderr)
        assert.are.equal(40, #runs())
        H.sleep(0.6)
        return commits() - before
    end

    it("pops a job per free slot of --concurrency in one statement: 40 jobs in a few commits", function()
        -- a pop a job would take 40 commits and more; 20 a pop: a handful
        local n = commits_for_40({ "--concurrency=20" })
        assert.is_true(n < 25, n .. " commits")
    end)

    it("writes a job's delete with the pop that follows it at once: 40 jobs one at a time in about "
        .. "40 commits", function()
        -- a delete of its own a job would take 80 commits and more
        local n = commits_for_40({})
        assert.is_true(n < 60, n .. " commits")
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

        it("works a jobs table of another schema whose name SQL must quote (DB_QUEUE_TABLE=Queues.Jobs), "
            .. "its trigger's pushes waking a worker at once", function()
            pg.psql('drop schema if exists "Queues" cascade; create schema "Queues"; '
                .. 'create table "Queues"."Jobs" (like jobs including all)')
            local jobs_env = e
            e = pg.env({ QUEUE_CONNECTION = "database", CACHE_DRIVER = "database", DB_QUEUE_TABLE = "Queues.Jobs" })
            local r = notify("install")
            assert.are.equal(0, r.status, r.stderr)
            assert.matches("trigger luaworker_notify on Queues.Jobs: after insert, for each row, runs "
                .. "luaworker_notify_Queues_Jobs%(%)", r.stdout)
            local w = workers.spawn({ "work", "database", "--handlers=" .. HANDLERS, "--sleep=60" }, { env = e })
            H.wait_until(function() return listening() == 1 end, 10, "the worker to listen: " .. w:stderr())
            H.sleep(0.3)  -- its first look done, its wait begun
            local started = socket.gettime()
            push("schema")
            H.wait_until(function() return #runs() == 1 end, 10, "the job to run: " .. w:stderr())
            assert.is_true(socket.gettime() - started < 3, "ran after " .. (socket.gettime() - started) .. " s")
            assert.are.equal("0", pg.psql('select count(*) from "Queues"."Jobs"'):match("%d+"))
            workers.stop_all()
            assert.are.equal(0, notify("remove").status)
            pg.psql('drop schema "Queues" cascade')
            e = jobs_env
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

describe("a run meant to end while the database of the queue is down", function()
    -- a server on a closed port: its connections are refused, as while it restarts
    it("ends with status 1 after 10 s (--once, --stop-when-empty), on PostgreSQL and MariaDB", function()
        local workers = {}
        for _, driver in ipairs({ "pgsql", "mysql" }) do
            for _, mode in ipairs({ "--once", "--stop-when-empty" }) do
                local e = { QUEUE_CONNECTION = "database", DB_CONNECTION = driver, DB_HOST = "127.0.0.1",
                    DB_PORT = tostring(H.free_port()), DB_DATABASE = "app", DB_USERNAME = "app",
                    DB_PASSWORD = "secret-pa55", QUEUE_FAILED_DRIVER = "null", CACHE_DRIVER = "redis" }
                workers[#workers + 1] = { driver .. " " .. mode, os.time(),
                    H.spawn({ "work", "database", "--handlers=" .. HANDLERS, "--sleep=0.1", mode }, { env = e }) }
            end
        end
        for _, w in ipairs(workers) do
            local what, started, p = w[1], w[2], w[3]
            assert.are.equal(1, p:wait(30), what .. ": " .. p:stderr())
            assert.is_true(os.time() - started >= 9, what .. " gave up early")
            assert.matches("cannot reach the database of the queue", p:stderr(), 1, true)
            assert.matches("gave up after 10s without reaching the database of the queue: ending with status 1",
                p:stderr(), 1, true)
            assert.is_nil(p:stderr():find("secret-pa55", 1, true))
        end
    end)
end)
