-- Failed jobs where the app keeps them (QUEUE_FAILED_DRIVER): the Laravel 8 app's
-- failed_jobs table (SQLite, examples/laravel), read and written by artisan's
-- queue:failed / queue:retry and by luaworker alike; the other stores; and a failing
-- job while the database is down (a private MariaDB, stopped and started again).
local H = require "spec.helpers"

local APP_ENV = "--env-file=" .. H.app .. "/.env"
local APP_DB = H.app .. "/database/database.sqlite"
local FAILING = [[return { handle = function(_, command) error("lua says no: " .. command.message) end }]]
local handlers

-- A handler whose error message is not UTF-8: a byte no UTF-8 has, and a sequence
-- cut short (one '?' each, as PHP's mb_convert_encoding replaces them).
local NOT_UTF8 = [[return { handle = function() error("no \255 way \226\130 here") end }]]

-- A payload of job App\Jobs\Failing that is not UTF-8 (in its command's message).
local function not_utf8_payload()
    return H.class_payload("App\\Jobs\\Failing", nil, { { "message", 's:5:"caf\233!";' } })
end

local sqlite = H.sqlite

local function work(args, env)
    local full = { "work", "--handlers=" .. handlers, "--once", "--sleep=0" }
    for _, a in ipairs(args or {}) do full[#full + 1] = a end
    return H.run(full, { env = env })
end

local function attempts(payload)
    return require("cjson").decode(payload).attempts
end

local function reserved_count()
    local _, _, reserved = H.keys()
    return H.r("ZCARD", reserved)
end

describe("failed jobs in the app's failed_jobs table (database-uuids, Laravel 8's default)", function()
    setup(function()
        H.laravel_setup()
        handlers = H.handlers({ ["App/Jobs/Failing.lua"] = FAILING })
    end)
    before_each(function()
        H.flush()
        H.artisan({ "queue:flush" })
    end)

    it("writes the row as Laravel's provider does, and removes the reservation", function()
        local job = H.dispatch("Failing")[1]
        local list = H.keys()
        local payload = H.r("LRANGE", list, 0, 0)[1]
        local r = work({ APP_ENV })
        assert.are.equal(0, r.status, r.stderr)
        local row = sqlite(APP_DB, "select uuid, connection, queue, failed_at from failed_jobs")
        assert.matches("^" .. job.uuid:gsub("%-", "%%-") .. "|redis|default|%d%d%d%d%-%d%d%-%d%d "
            .. "%d%d:%d%d:%d%d\n$", row)
        assert.are.equal(payload .. "\n", sqlite(APP_DB, "select payload from failed_jobs"))
        assert.matches("lua says no: Failing job failed", sqlite(APP_DB, "select exception from failed_jobs"),
            1, true)
        assert.are.equal(0, reserved_count())
        assert.matches(job.uuid, H.artisan({ "queue:failed" }), 1, true)
        assert.are.equal(0, H.r("EXISTS", H.prefix .. "luaworker:failed_jobs"))
    end)

    it("records a payload once, and another payload with the same uuid as <uuid>-2", function()
        local function failing(message)
            return H.payload({ uuid = "same-uuid", displayName = "App\\Jobs\\Failing", data = {
                commandName = "App\\Jobs\\Failing", command = string.format(
                    'O:16:"App\\Jobs\\Failing":1:{s:7:"message";s:%d:"%s";}', #message, message) } })
        end
        local first = require("cjson").encode(failing("first"))
        for _, payload in ipairs({ first, first, failing("second") }) do
            H.push(payload)
            local r = work({ APP_ENV })
            assert.are.equal(0, r.status, r.stderr)
            assert.are.equal(0, reserved_count())
        end
        assert.are.equal("same-uuid|0\nsame-uuid-2|1\n", sqlite(APP_DB,
            "select uuid, exception like '%lua says no: second%' from failed_jobs order by id"))
    end)

    it("is what queue:retry and luaworker's failed, retry, forget and flush work on", function()
        local jobs = H.dispatch("Failing", "--count=3")
        assert.are.equal(0, work({ APP_ENV }).status)
        assert.are.equal(0, work({ APP_ENV }).status)
        assert.are.equal(0, work({ APP_ENV }).status)
        local listed = H.run({ "failed", APP_ENV }).stdout
        for _, j in ipairs(jobs) do assert.matches(j.uuid, listed, 1, true) end
        -- artisan retries one: luaworker runs it again, and it fails again
        assert.matches("pushed back onto the queue", H.artisan({ "queue:retry", jobs[1].uuid }))
        local list = H.keys()
        assert.are.equal(1, H.r("LLEN", list))
        assert.are.equal(0, work({ APP_ENV }).status)
        assert.are.equal("3\n", sqlite(APP_DB, "select count(*) from failed_jobs"))
        -- luaworker retries one: artisan's worker would run it (here: it is on the queue)
        local r = H.run({ "retry", jobs[2].uuid, APP_ENV })
        assert.are.equal(0, r.status, r.stderr)
        assert.are.equal(1, H.r("LLEN", list))
        assert.are.equal(0, attempts(H.r("LRANGE", list, 0, 0)[1]))
        assert.are.equal("2\n", sqlite(APP_DB, "select count(*) from failed_jobs"))
        assert.are.equal(0, H.run({ "forget", jobs[3].uuid, APP_ENV }).status)
        assert.is_nil(H.artisan({ "queue:failed" }):find(jobs[3].uuid, 1, true))
        assert.are.equal(0, H.run({ "flush", APP_ENV }).status)
        assert.matches("No failed jobs!", H.artisan({ "queue:failed" }), 1, true)
    end)
end)

describe("the other failed-job stores", function()
    setup(function()
        handlers = H.handlers({ ["App/Jobs/Failing.lua"] = FAILING })
        H.laravel_setup()
    end)
    before_each(function() H.flush() end)

    it("database: the row without uuid, its id the row's", function()
        local file = H.tmpdir() .. "/old.sqlite"
        sqlite(file, "create table failed_jobs (id integer primary key autoincrement, connection text, "
            .. "queue text, payload text, exception text, failed_at datetime default current_timestamp)")
        local env = { DB_CONNECTION = "sqlite", DB_DATABASE = file, QUEUE_FAILED_DRIVER = "database" }
        H.dispatch("Failing", "--count=2")
        assert.are.equal(0, work({}, env).status)
        assert.are.equal(0, work({}, env).status)
        assert.are.equal("1|redis|default\n2|redis|default\n",
            sqlite(file, "select id, connection, queue from failed_jobs order by id"))
        local listed = H.run({ "failed" }, { env = env }).stdout
        assert.matches("| 2  | redis", listed, 1, true)
        assert.are.equal(0, H.run({ "forget", "1" }, { env = env }).status)
        assert.are.equal("2\n", sqlite(file, "select id from failed_jobs"))
    end)

    it("refuses to start with status 2 when the app's database has no failed_jobs table", function()
        local file = H.tmpdir() .. "/app.sqlite"
        sqlite(file, "create table users (id integer primary key)")
        local r = work({}, { DB_CONNECTION = "sqlite", DB_DATABASE = file, QUEUE_FAILED_DRIVER = "database-uuids" })
        assert.are.equal(2, r.status)
        assert.are.equal("cannot start: QUEUE_FAILED_DRIVER=database-uuids: failed jobs cannot be recorded in "
            .. "failed_jobs on database connection sqlite: Illuminate\\Database\\QueryException: SQLSTATE[HY000]: "
            .. "General error: 1 no such table: failed_jobs (SQL: select id, uuid, connection, queue, payload, "
            .. "exception, failed_at from \"failed_jobs\" where 1 = 0)\n", (r.stderr:gsub("^%[[^]]*%] ", "")))
    end)

    -- a migrate:fresh in development: the fleet's start-up check refuses, a worker that
    -- replaces another (--max-time, a reload, a crash) goes on as that one did
    it("goes on with a fleet whose failed_jobs table is dropped while it runs: the workers that replace "
        .. "others say it and keep a failed job in luaworker's Redis store", function()
        local file = H.tmpdir() .. "/app.sqlite"
        sqlite(file, "create table failed_jobs (id integer primary key autoincrement, uuid text, connection "
            .. "text, queue text, payload text, exception text, failed_at datetime)")
        local w = H.spawn({ "work", "--handlers=" .. handlers, "--sleep=0.05", "--max-time=1" },
            { env = { DB_CONNECTION = "sqlite", DB_DATABASE = file, QUEUE_FAILED_DRIVER = "database-uuids" } })
        H.sleep(0.5)
        sqlite(file, "drop table failed_jobs")
        local replaced = pcall(H.wait_until, function()
            local _, n = w:stderr():gsub("found as this worker started in place of another", "")
            return n >= 2
        end, 10)
        local job = H.class_payload("App\\Jobs\\Failing", nil, { { "message", 's:1:"x";' } })
        H.push(job)
        local kept = pcall(H.wait_until, function() return H.failed_record(job.uuid) end, 10)
        local running = w:status() == nil
        w:stop()
        assert.is_true(replaced, w:stderr())
        assert.is_true(running, "the fleet stopped: " .. w:stderr())
        assert.is_true(kept, "the failed job is not in luaworker's Redis store: " .. w:stderr())
        assert.is_nil(w:stderr():find("cannot start", 1, true))
    end)

    it("SQLite: keeps a payload that is not UTF-8 byte for byte in the table", function()
        local file = H.tmpdir() .. "/app.sqlite"
        sqlite(file, "create table failed_jobs (id integer primary key autoincrement, uuid varchar not null "
            .. "unique, connection text, queue text, payload text, exception text, failed_at datetime)")
        local p = not_utf8_payload()
        local text = H.push(p)
        assert.are.equal(0, work({}, { DB_CONNECTION = "sqlite", DB_DATABASE = file }).status)
        assert.are.equal(text .. "\n", sqlite(file, "select payload from failed_jobs"))
        assert.are.equal(0, reserved_count())
    end)

    it("null: nothing is recorded, the reservation goes", function()
        H.dispatch("Failing")
        local r = work({ APP_ENV }, { QUEUE_FAILED_DRIVER = "null" })
        assert.are.equal(0, r.status, r.stderr)
        assert.are.equal(0, reserved_count())
        assert.are.equal(0, H.r("EXISTS", H.prefix .. "luaworker:failed_jobs"))
        assert.matches("No failed jobs!", H.run({ "failed" }, { env = { QUEUE_FAILED_DRIVER = "null" } }).stdout,
            1, true)
    end)

    it("luaworker-redis: luaworker's Redis store, though the app has a database", function()
        H.artisan({ "queue:flush" })
        local job = H.dispatch("Failing")[1]
        assert.are.equal(0, work({ APP_ENV }, { QUEUE_FAILED_DRIVER = "luaworker-redis" }).status)
        assert.is_not_nil(H.failed_record(job.uuid))
        assert.matches("No failed jobs!", H.artisan({ "queue:failed" }), 1, true)
    end)

    it("luaworker-database: luaworker's store in the jobs table, for a job of the Redis queue too", function()
        local file = H.tmpdir() .. "/app.sqlite"
        sqlite(file, "create table jobs (id integer primary key autoincrement, queue varchar not null, payload "
            .. "text not null, attempts integer not null, reserved_at integer, available_at integer not null, "
            .. "created_at integer not null)")
        local env = { DB_CONNECTION = "sqlite", DB_DATABASE = file, QUEUE_FAILED_DRIVER = "luaworker-database" }
        local job = H.dispatch("Failing")[1]
        local payload = H.r("LRANGE", (H.keys()), 0, 0)[1]
        assert.are.equal(0, work({}, env).status)
        assert.are.equal(0, reserved_count())
        local row = sqlite(file, "select id, queue, reserved_at is null, available_at from jobs")
        assert.are.equal("1|luaworker:failed|1|2147483647\n", row)
        local kept = H.json.decode(sqlite(file, "select payload from jobs"))["luaworker:failed"]
        assert.are.same({ job.uuid, "redis", "default", payload },
            { kept.uuid, kept.connection, kept.queue, kept.payload })
        assert.matches("lua says no", kept.exception, 1, true)
        local listed = H.run({ "failed" }, { env = env })
        assert.matches("| 1  | redis      | default | App\\Jobs\\Failing", listed.stdout, 1, true)
        assert.are.equal(0, H.run({ "retry", "1" }, { env = env }).status)
        assert.are.equal("", sqlite(file, "select id from jobs"))
        assert.are.equal(1, H.r("LLEN", (H.keys())))
    end)

    it("the Redis store without DB_CONNECTION", function()
        local job = H.dispatch("Failing")[1]
        assert.are.equal(0, work({}, { DB_CONNECTION = false }).status)
        assert.is_not_nil(H.failed_record(job.uuid))
    end)

    it("refuses a QUEUE_FAILED_DRIVER it does not have, at start, with status 2", function()
        local r = H.run({ "work", "--handlers=" .. handlers }, { env = { QUEUE_FAILED_DRIVER = "dynamodb" } })
        assert.are.equal(2, r.status)
        assert.matches("QUEUE_FAILED_DRIVER=dynamodb: expected database-uuids, database, file, null, "
            .. "luaworker-redis or luaworker-database", r.stderr, 1, true)
    end)
end)

describe("failed jobs in MariaDB's failed_jobs table, and while the database is down", function()
    local server  -- H.mariadb()

    setup(function()
        handlers = H.handlers({ ["App/Jobs/Failing.lua"] = FAILING, ["App/Jobs/NotUtf8.lua"] = NOT_UTF8 })
        server = H.mariadb()
        assert.are.equal("", server.root("create table failed_jobs (id bigint unsigned auto_increment "
            .. "primary key, uuid varchar(255) not null unique, connection text not null, "
            .. "queue text not null, payload longtext not null, exception longtext not null, "
            .. "failed_at timestamp not null default current_timestamp)"))
        assert.are.equal("", server.root("create table job_batches (id varchar(255) primary key, "
            .. "name varchar(255) not null, total_jobs int not null, pending_jobs int not null, "
            .. "failed_jobs int not null, failed_job_ids longtext not null, options mediumtext, "
            .. "cancelled_at int, "
            .. "created_at int not null, finished_at int)"))
    end)
    teardown(function() if server then server.remove() end end)

    it("records an error message that is not UTF-8 once, each bad sequence a '?'", function()
        H.flush()
        server.root("delete from failed_jobs")
        local p = H.class_payload("App\\Jobs\\NotUtf8")
        H.push(p)
        local r = work({ "--timeout=5" }, server.env())
        assert.are.equal(0, r.status, r.stderr)
        assert.are.equal(0, reserved_count())
        assert.are.equal(p.uuid .. "\t1\n", server.root("select uuid, count(*) from failed_jobs group by uuid"))
        assert.matches("no ? way ? here", server.root("select exception from failed_jobs"), 1, true)
        assert.is_nil(r.stderr:find("cannot record", 1, true))
    end)

    it("keeps a payload that is not UTF-8, which MariaDB refuses, byte for byte in luaworker's Redis store",
        function()
        H.flush()
        server.root("delete from failed_jobs")
        local p = not_utf8_payload()
        local text = H.push(p)
        local r = work({ "--timeout=5" }, server.env())
        assert.are.equal(0, r.status, r.stderr)
        assert.are.equal(0, reserved_count())
        assert.are.equal("0\n", server.root("select count(*) from failed_jobs"))
        local record = H.failed_record(p.uuid)
        assert.are.equal(text, record.payload)
        assert.matches("SQLSTATE[22007]: Invalid datetime format: 1366 Incorrect string value: '\\xE9!\\\";}...' "
            .. "for column `app`.`failed_jobs`.`payload`", record.exception, 1, true)
    end)

    -- A job that fails in a worker while the database is down; returns the job and
    -- the worker, once the worker said it cannot record it.
    local function fail_while_down()
        H.flush()
        local job = H.dispatch("Failing")[1]
        server.stop()
        local w = H.spawn({ "work", "--handlers=" .. handlers, "--sleep=0.05" }, { env = server.env() })
        H.wait_until(function() return w:stderr():find("cannot record failed job " .. job.uuid, 1, true) end,
            20, "the failed write")
        return job, w
    end

    it("keeps the job reserved until its record is written, said once", function()
        local job, w = fail_while_down()
        H.sleep(1.5)
        assert.are.equal(1, reserved_count())
        assert.is_nil(w:stderr():find(server.password, 1, true))
        server.serve()
        H.wait_until(function() return reserved_count() == 0 end, 40, "the record")
        assert.are.equal(job.uuid .. "\n", server.root("select uuid from failed_jobs"))
        local _, told = w:stderr():gsub("cannot record failed job", "")
        assert.are.equal(1, told)
        assert.matches("recorded failed job " .. job.uuid .. " in failed_jobs after all", w:stderr(), 1, true)
        w:kill("TERM")
        assert.are.equal(0, w:wait())
    end)

    it("stops when told to while a failed record waits, leaving the job reserved, and says so in a line",
        function()
        local job, w = fail_while_down()
        w:kill("TERM")
        local ok, status = pcall(w.wait, w, 5)
        server.serve()
        assert.is_true(ok, "the worker did not stop")
        assert.are.equal(0, status)
        assert.are.equal(1, reserved_count())
        assert.are.equal("", server.root("select uuid from failed_jobs where uuid = '" .. job.uuid .. "'"))
        -- the stop ended a wait: not a fault of luaworker's, so no traceback
        assert.matches("App\\Jobs\\Failing: the worker stopped before its outcome was recorded (", w:stderr(), 1, true)
        assert.matches("); the job stays reserved and comes back after retry_after", w:stderr(), 1, true)
        assert.is_nil(w:stderr():find("stack traceback", 1, true))
        assert.is_nil(w:stderr():find("while handling the error", 1, true))
    end)

    it("keeps a batched job reserved until its batch's row is updated", function()
        H.flush()
        H.laravel_setup()
        H.artisan({ "jobs:dispatch", "batch", '--args=[{"job":"Batched","args":[1]}]' }, server.env())
        local id = server.root("select id from job_batches"):match("%S+")
        server.stop()
        local batched = H.handlers({ ["App/Jobs/Batched.lua"] = "return { handle = function() end }" })
        local w = H.spawn({ "work", "--handlers=" .. batched, "--sleep=0.05" }, { env = server.env() })
        H.wait_until(function() return w:stderr():find("cannot update batch " .. id, 1, true) end, 20,
            "the failed update")
        H.sleep(1.5)
        assert.are.equal(1, reserved_count())
        server.serve()
        H.wait_until(function() return reserved_count() == 0 end, 40, "the update")
        assert.are.equal("1\t0\t1\n", server.root("select total_jobs, pending_jobs, finished_at is not null "
            .. "from job_batches where id = '" .. id .. "'"))
        local _, told = w:stderr():gsub("cannot update batch", "")
        assert.are.equal(1, told)
        w:kill("TERM")
        assert.are.equal(0, w:wait())
    end)
end)

-- Laravel's failed_jobs migration (uuid) as PostgreSQL runs it, for table name.
local function pgsql_table(name)
    return "create table " .. name .. " (id bigserial primary key, uuid varchar(255) not null unique, "
        .. "connection text not null, queue text not null, payload text not null, exception text not null, "
        .. "failed_at timestamp(0) without time zone not null default current_timestamp)"
end

describe("failed jobs in PostgreSQL's failed_jobs table", function()
    local pg, workers
    setup(function()
        handlers = H.handlers({ ["App/Jobs/Failing.lua"] = FAILING, ["App/Jobs/NotUtf8.lua"] = NOT_UTF8,
            ["App/Jobs/Spec.lua"] = H.RECORD_ID })
        pg = H.postgresql()
        assert.are.equal("", pg.psql(pgsql_table("failed_jobs")))
        workers = H.worker_set()
    end)
    teardown(function() if pg then pg.remove() end end)
    before_each(function()
        H.flush()
        pg.psql("delete from failed_jobs")
    end)
    after_each(function() workers.stop_all() end)

    it("records an error message that is not UTF-8 once, each bad sequence a '?'", function()
        local p = H.class_payload("App\\Jobs\\NotUtf8")
        H.push(p)
        local r = work({ "--timeout=5" }, pg.env())
        assert.are.equal(0, r.status, r.stderr)
        assert.are.equal(0, reserved_count())
        assert.are.equal(p.uuid .. "|1\n", pg.psql("select uuid, count(*) from failed_jobs group by uuid"))
        assert.matches("no ? way ? here", pg.psql("select exception from failed_jobs"), 1, true)
        assert.is_nil(r.stderr:find("cannot record", 1, true))
    end)

    it("refuses to start with status 2 when the table is not there, or lacks a column", function()
        local r = work({}, pg.env({ QUEUE_FAILED_DRIVER = "database-uuids", LUAWORKER_FAILED_TABLE = "gone" }))
        assert.are.equal(2, r.status)
        assert.matches("cannot start: QUEUE_FAILED_DRIVER=database-uuids: failed jobs cannot be recorded in gone "
            .. "on database connection pgsql: Illuminate\\Database\\QueryException: SQLSTATE[42P01]: Undefined "
            .. "table: 7 ERROR:  relation \"gone\" does not exist\nLINE 1: ...ection, queue, payload, exception, "
            .. "failed_at from \"gone\" whe...\n", r.stderr, 1, true)
        assert.matches("^ +%^ %(SQL: select id, uuid, connection, queue, payload, exception, failed_at from "
            .. "\"gone\" where 1 = 0%)\n$", r.stderr:match("\n([^\n]*\n)$"))
        assert.is_nil(r.stderr:find(pg.password, 1, true))
        assert.are.equal("", pg.psql("create table old (id serial, connection text, queue text, "
            .. "payload text, exception text, failed_at timestamp)"))
        r = work({}, pg.env({ LUAWORKER_FAILED_TABLE = "old" }))
        assert.are.equal(2, r.status)
        assert.matches("cannot start: the failed-job store database-uuids (QUEUE_FAILED_DRIVER is not set, "
            .. "DB_CONNECTION is): failed jobs cannot be recorded in old on database connection pgsql: "
            .. "Illuminate\\Database\\QueryException: SQLSTATE[42703]: Undefined column: 7 ERROR:  column \"uuid\" "
            .. "does not exist", r.stderr, 1, true)
        -- the database store has no uuid column: that table is its
        assert.are.equal(0, work({}, pg.env({ LUAWORKER_FAILED_TABLE = "old", QUEUE_FAILED_DRIVER = "database" }))
            .status)
    end)

    it("keeps a job the table refuses at run time in luaworker's Redis store, and runs the next at once",
        function()
        assert.are.equal("", pg.psql(pgsql_table("dropped")))
        local w = workers.spawn({ "work", "--handlers=" .. handlers, "--sleep=0.05", "--concurrency=1" },
            { env = pg.env({ LUAWORKER_FAILED_TABLE = "dropped" }) })
        local first = H.payload()
        H.push(first)
        H.wait_until(function() return H.r("LLEN", "spec:ran") == 1 end, 10, "the worker to run a job")
        assert.are.equal("", pg.psql("drop table dropped"))
        local a, b = H.class_payload("App\\Jobs\\Failing", nil, { { "message", 's:1:"a";' } }),
            H.class_payload("App\\Jobs\\Failing", nil, { { "message", 's:1:"b";' } })
        local next_one = H.payload()
        H.push(a)
        H.push(b)
        H.push(next_one)
        local pushed = os.time()
        H.wait_until(function() return H.r("LLEN", "spec:ran") == 2 end, 10, "the next job")
        assert.is_true(os.time() - pushed <= 3, "the next job waited")
        assert.are.same({ first.id, next_one.id }, H.r("LRANGE", "spec:ran", 0, -1))
        -- (the next job's delete follows its handler's write)
        H.wait_until(function() return reserved_count() == 0 end, 5, "the reservations to go")
        for _, p in ipairs({ a, b }) do
            local record = H.failed_record(p.uuid)
            assert.are.equal(H.json.encode(p), record.payload)
            assert.matches("lua says no: " .. (p == a and "a" or "b"), record.exception, 1, true)
            assert.matches("\n\n[luaworker] This failed job could not be recorded in dropped on database "
                .. "connection pgsql (Illuminate\\Database\\QueryException: SQLSTATE[42P01]: Undefined table: 7 "
                .. "ERROR:  relation \"dropped\" does not exist\nLINE 1: select payload from \"dropped\" where uuid "
                .. "= $1\n                            ^ (SQL: select payload from \"dropped\" where uuid = ?)), so it "
                .. "is kept "
                .. "in luaworker's Redis failed store: list it with QUEUE_FAILED_DRIVER=luaworker-redis "
                .. "luaworker failed, retry it with QUEUE_FAILED_DRIVER=luaworker-redis luaworker retry <id>.",
                record.exception, 1, true)
            assert.matches("failed job " .. p.uuid .. " kept in luaworker's Redis failed store, not in dropped "
                .. "(see QUEUE_FAILED_DRIVER=luaworker-redis luaworker failed)", w:stderr(), 1, true)
        end
        local _, said = w:stderr():gsub("cannot record failed jobs in dropped on database connection pgsql "
            .. "%(Illuminate\\Database\\QueryException: SQLSTATE%[42P01%]: Undefined table: 7 ERROR:  relation "
            .. "\"dropped\" does not exist\nLINE 1: select payload from \"dropped\" where uuid = %$1\n +%^ "
            .. "%(SQL: select payload from \"dropped\" where uuid = %?%)%): not an outage, so a failed job it refuses "
            .. "for this reason is kept in luaworker's Redis failed store instead %(see "
            .. "QUEUE_FAILED_DRIVER=luaworker%-redis luaworker failed%)", "")
        assert.are.equal(1, said)
        local listed = H.run({ "failed" }, { env = { QUEUE_FAILED_DRIVER = "luaworker-redis" } }).stdout
        assert.matches(a.uuid, listed, 1, true)
        assert.matches(b.uuid, listed, 1, true)
    end)

    it("keeps a payload that is not UTF-8, which PostgreSQL refuses, byte for byte in luaworker's Redis store",
        function()
        local p = not_utf8_payload()
        local text = H.push(p)
        local r = work({ "--timeout=5" }, pg.env())
        assert.are.equal(0, r.status, r.stderr)
        assert.are.equal(0, reserved_count())
        assert.are.equal("0\n", pg.psql("select count(*) from failed_jobs"))
        local record = H.failed_record(p.uuid)
        assert.are.equal(text, record.payload)
        assert.matches("SQLSTATE[22021]: Character not in repertoire: 7 ERROR:  invalid byte sequence for "
            .. "encoding \"UTF8\": 0xe9 0x21", record.exception, 1, true)
    end)
end)
