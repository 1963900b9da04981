-- Laravel's database queue (luaworker work database) on a real PostgreSQL server: the jobs table
-- of the Laravel 8 app (examples/laravel, its migration as `queue:table` writes it),
-- with PHP's own jobs:dispatch and queue:work beside luaworker. What every server is
-- asked alike is in spec/database_queue_contract.lua,
-- spec/database_queue_reservations_contract.lua and
-- spec/database_queue_cache_store_contract.lua;
-- this server's own cases are here.
local H = require "spec.helpers"
local cjson = H.json
local C = require "spec.database_queue_contract"
local reservations = require "spec.database_queue_reservations_contract"
local cache_store = require "spec.database_queue_cache_store_contract"

local HANDLERS = C.HANDLERS
local runs = C.runs
local standard_literal = C.standard_literal

local function contract(server)
    C.contract(server, it, before_each, assert)
    reservations.contract(server, it, assert)
    cache_store.contract(server, it, assert)
end

describe("the database queue on PostgreSQL", function()
    local pg
    local server = { php = true, mixed = true, holds_ahead = true, key_column = '"key"', literal = standard_literal }
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
    -- a shell command that holds the jobs table against writes for that many seconds
    function server.locking(seconds)
        return pg.psql_command(string.format("begin; lock table jobs in exclusive mode; select pg_sleep(%s); "
            .. "commit;", seconds))
    end
    contract(server)

    -- The commits a worker with args (after --handlers) makes for 40 jobs of
    -- App\Jobs\Simple until the queue is empty (and the worker's checks at its start).
    local function commits_for_40(args)
        local script = H.tmpdir() .. "/push.lua"
        H.write_file(script, [[
local luaworker = require "luaworker"
for n = 1, 40 do luaworker.dispatch("App\\Jobs\\Simple", { n = n }) end
]])
        -- (the cache in Redis: the restart signal's reads, one a second, are no commits
        -- of this database, however long a loaded machine takes)
        local e = pg.env({ QUEUE_CONNECTION = "database", CACHE_DRIVER = "redis" })
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

    it("renews a running job's lease again over a new connection once PostgreSQL restarts under it",
        function()
        pg.psql("delete from jobs")
        H.flush()
        local e = pg.env({ QUEUE_CONNECTION = "database" })
        assert.are.equal(0, H.run({ "push", "App\\Jobs\\Simple", '{"n":"minute"}' }, { env = e }).status)
        local w = H.spawn({ "work", "database", "--handlers=" .. HANDLERS, "--sleep=0.2", "--no-watch",
            "--heartbeat=1", "--timeout=120" }, { env = e, group = true })
        local ok, err = pcall(function()
            H.wait_until(function()
                return #H.r("LRANGE", H.prefix .. "luaworker:long_starts", 0, -1) == 1
            end, 10, "the job's start")
            pg.restart()
            H.sleep(2)
            local function reserved_at() return tonumber(pg.psql("select reserved_at from jobs"):match("%d+")) end
            local before = reserved_at()
            H.sleep(3)
            local after = reserved_at()
            assert.is_true(after - before >= 2, "not renewed since the restart: " .. before .. ", " .. after
                .. "\n" .. w:stderr())
        end)
        w:kill_group("KILL")
        w:wait()
        if not ok then error(err, 0) end
    end)

    it("pops a job per free slot of --concurrency in one statement: 40 jobs in a few commits", function()
        -- a pop a job would take 40 commits and more; 20 a pop: a handful
        local n = commits_for_40({ "--concurrency=20" })
        assert.is_true(n < 25, n .. " commits")
    end)

    it("says, naming the job, that a held job's start found its row no longer held (a start waited "
        .. "for: the job does not run; one sent as it runs: it may run twice), and leaves that row to "
        .. "whoever holds it", function()
        pg.psql("delete from jobs")
        H.flush()
        -- a trigger has the start of the job "slow" (1.5 s) change no row, as if another
        -- worker had taken it once its lease ran out
        pg.psql([[
create or replace function keep_slow() returns trigger language plpgsql as $$
begin
  if old.attempts = 0 and new.attempts = 1 and old.payload like '%slow%' then return null; end if;
  return new;
end $$;
create trigger keep_slow before update on jobs for each row execute function keep_slow();
]])
        local e = pg.env({ QUEUE_CONNECTION = "database" })
        local w
        local ok, err = pcall(function()
            assert.are.equal(0, H.run({ "push", "App\\Jobs\\Simple", '{"n":"slow"}' }, { env = e }).status)
            w = H.spawn({ "work", "database", "--handlers=" .. HANDLERS, "--sleep=0.2", "--no-watch",
                "--heartbeat=1", "--timeout=60" }, { env = e })
            -- the first start, with no connection open for it, is waited for: the job does
            -- not run; a lease later the row is taken again, and its start, sent as it
            -- runs, finds it the same
            local said = "App\\Jobs\\Simple %(attempt 1%) was no longer held by this worker when its start "
                .. "reached the database %(its reservation expired, and another worker may have taken it%): "
            H.wait_until(function() return w:stderr():find("it may run twice", 1, true) end, 20,
                "the start's outcome: " .. w:stderr())
            local first = w:stderr():find(said .. "it runs elsewhere, not here")
            local second = w:stderr():find(said .. "it may run twice")
            assert.is_truthy(first, w:stderr())
            assert.is_true(second > first, w:stderr())
            -- its start was sent before it ran, so it ran
            H.wait_until(function() return #runs() == 1 end, 15, "the job's end")
            assert.are.equal(1, runs()[1].attempts)
            H.sleep(0.5)
            -- this worker did not delete the row it no longer held
            assert.are.equal("1", pg.psql("select count(*) from jobs"):match("%d+"))
        end)
        if w then w:stop() end
        pg.psql("drop trigger keep_slow on jobs; drop function keep_slow()")
        if not ok then error(err, 0) end
    end)

    it("counts a held job's start whose connection was cut before it committed (run again on a new "
        .. "connection, or its row read and counted): the job runs once, its release finds its row", function()
        pg.psql("delete from jobs")
        H.flush()
        -- a trigger ends the connection of the first start of the job "release" (attempts
        -- 0 to 1; a start's statement, not a pop's) in the middle of its statement: rolled
        -- back, its reply never read
        pg.psql([[
drop sequence if exists cut_start; create sequence cut_start;
drop sequence if exists cut_a_start; create sequence cut_a_start;
create or replace function cut_start() returns trigger language plpgsql as $$
begin
  if old.attempts = 0 and new.attempts = 1 and old.payload like '%release%'
     and nextval('cut_start') = 1 then
    if current_query() like '%and reserved_at is not null%' then perform nextval('cut_a_start'); end if;
    perform pg_terminate_backend(pg_backend_pid());
    perform pg_sleep(5);
  end if;
  return new;
end $$;
create trigger cut_start before update on jobs for each row execute function cut_start();
]])
        local w
        local ok, err = pcall(function()
            local e = pg.env({ QUEUE_CONNECTION = "database", CACHE_DRIVER = "redis" })
            for _, n in ipairs({ "1", "2", "release", "3" }) do
                assert.are.equal(0, H.run({ "push", "App\\Jobs\\Simple", H.json.encode({ n = n }) },
                    { env = e }).status)
            end
            w = H.spawn({ "work", "database", "--handlers=" .. HANDLERS, "--sleep=0.2", "--no-watch" },
                { env = e })
            H.wait_until(function() return #runs() == 4 end, 15, "the four runs: " .. w:stderr())
            H.wait_until(function() return pg.psql("select count(*) from jobs"):match("%d+") == "1" end, 10,
                "the three deletes")
            -- the cut start, then the one that counted it
            assert.are.equal("2", pg.psql("select last_value from cut_start"):match("%d+"))
            assert.are.equal("t", pg.psql("select is_called from cut_a_start"):match("[tf]"))
            for _, run in ipairs(runs()) do assert.are.equal(1, run.attempts) end
            -- released for 30 s by its first attempt: counted once, no longer reserved
            local row = pg.psql("select attempts, reserved_at is null, available_at - extract(epoch from "
                .. "now())::int >= 20 from jobs")
            assert.are.equal("1|t|t", row:match("%S+"), w:stderr())
            assert.is_nil(w:stderr():find("no longer held", 1, true), w:stderr())
            assert.is_nil(w:stderr():find("could not be read", 1, true), w:stderr())
        end)
        if w then w:stop() end
        pg.psql("drop trigger cut_start on jobs; drop function cut_start(); drop sequence cut_start; "
            .. "drop sequence cut_a_start")
        if not ok then error(err, 0) end
    end)

    it("takes again at once a pop, a start or a delete the server rolled back to end a deadlock "
        .. "(SQLSTATE 40001, 40P01), as Laravel's transaction tries it again", function()
        -- a trigger fails the first update and the first delete of the jobs table (a
        -- sequence's numbers survive the rollback)
        pg.psql("delete from jobs")
        H.flush()
        pg.psql([[
drop sequence if exists rolled_back_update; create sequence rolled_back_update;
drop sequence if exists rolled_back_delete; create sequence rolled_back_delete;
create or replace function roll_back_once() returns trigger language plpgsql as $$
begin
  if tg_op = 'UPDATE' and nextval('rolled_back_update') = 1 then
    raise exception 'serialization failure on purpose' using errcode = '40001';
  elsif tg_op = 'DELETE' and nextval('rolled_back_delete') = 1 then
    raise exception 'deadlock on purpose' using errcode = '40P01';
  end if;
  return case when tg_op = 'DELETE' then old else new end;
end $$;
create trigger roll_back_once before update or delete on jobs for each row execute function roll_back_once();
]])
        local ok, err = pcall(function()
            local e = pg.env({ QUEUE_CONNECTION = "database", CACHE_DRIVER = "redis" })
            for n = 1, 3 do
                assert.are.equal(0, H.run({ "push", "App\\Jobs\\Simple", H.json.encode({ n = n }) },
                    { env = e }).status)
            end
            local r = H.run({ "work", "database", "--handlers=" .. HANDLERS, "--sleep=0.05", "--stop-when-empty" },
                { env = e })
            assert.are.equal(0, r.status, r.stderr)
            assert.are.equal(3, #runs(), r.stderr)
            for _, run in ipairs(runs()) do assert.are.equal(1, run.attempts) end
            assert.are.equal("", pg.psql("select id from jobs"))
            assert.are.equal("", r.stderr)
            assert.are.equal("t", pg.psql("select (select last_value from rolled_back_update) > 1 and "
                .. "(select last_value from rolled_back_delete) > 1"):match("[tf]"))
        end)
        pg.psql("drop trigger roll_back_once on jobs; drop function roll_back_once(); "
            .. "drop sequence rolled_back_update; drop sequence rolled_back_delete")
        if not ok then error(err, 0) end
    end)

    it("writes a job's delete with the start that follows it at once: 40 jobs one at a time in about "
        .. "40 commits", function()
        -- one a job's start (the rows held ahead, a few pops), about 10 of the worker's
        -- start-up reads and the spec's own; a delete of its own a job would take 90
        -- commits and more
        local n = commits_for_40({})
        assert.is_true(n < 70, n .. " commits")
    end)

    it("analyzes a jobs table that has no statistics as it starts, so that its pops walk the primary key "
        .. "instead of sorting the queue", function()
        -- a copy of the jobs table, 2,000 rows, autovacuum off: never analyzed
        pg.psql('drop table if exists "jobs_unanalyzed"; '
            .. 'create table "jobs_unanalyzed" (like "jobs" including all) with (autovacuum_enabled = false); '
            .. "insert into jobs_unanalyzed (queue, payload, attempts, available_at, created_at) "
            .. "select 'other', '{}', 0, 0, 0 from generate_series(1, 2000)")
        local function plan()
            return pg.psql("explain select id from jobs_unanalyzed where queue = 'other' and "
                .. "octet_length(payload) <= 1000 order by id limit 8")
        end
        assert.matches("Sort", plan())
        local e = pg.env({ QUEUE_CONNECTION = "database", DB_QUEUE_TABLE = "jobs_unanalyzed",
            CACHE_DRIVER = "redis" })
        local r = H.run({ "work", "database", "--handlers=" .. HANDLERS, "--stop-when-empty" }, { env = e })
        assert.are.equal(0, r.status, r.stderr)
        assert.are.equal("", r.stderr)
        assert.matches("t", pg.psql("select last_analyze is not null from pg_stat_user_tables "
            .. "where relname = 'jobs_unanalyzed'"))
        assert.does_not.match("Sort", plan())
        -- its rows are on another queue: none was taken
        assert.matches("2000", pg.psql("select count(*) from jobs_unanalyzed where reserved_at is null"))
        pg.psql('drop table "jobs_unanalyzed"')
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
