-- luaworker --laravel=12.67 beside a real Laravel 12.67 worker on the database queue
-- (spec/laravel12.lua: ../shared/laravel12, skipped with a plain message where it is
-- absent): the jobs table in SQLite, its copy's config/queue.php given a `database`
-- connection. The same job, from copies of the same database, is released or failed
-- by each worker and the rows compared byte for byte; each worker runs what the
-- other pushed; the two take turns on one table (not at the same time: on SQLite,
-- PHP's own workers lose deletes to "database is locked", see
-- docs/database-queue.md); and on PostgreSQL and MariaDB, where the app's copy is
-- given Laravel 12's pgsql and mysql connections, they work one table at the same
-- time.
local H = require "spec.helpers"
local L12 = require "spec.laravel12"

local app, missing = L12.app()

local handlers, database

-- Both workers' environment: the database queue and failed jobs in the app's SQLite,
-- the cache in Redis (the app's config/cache.php).
local function env()
    return L12.env({ QUEUE_CONNECTION = "database", QUEUE_FAILED_DRIVER = "database-uuids",
        DB_DATABASE = database, CACHE_STORE = "redis" })
end

local function luaworker(args)
    local full = { "work", "database", "--laravel=" .. L12.VERSION, "--handlers=" .. handlers, "--sleep=0" }
    for _, a in ipairs(args) do full[#full + 1] = a end
    local r = H.run(full, { env = env() })
    assert.are.equal(0, r.status, r.stderr)
    return r
end

local function php_worker(args)
    local full = { "queue:work", "database", "--sleep=0" }
    for _, a in ipairs(args) do full[#full + 1] = a end
    local r = L12.artisan(full, env())
    assert.are.equal(0, r.status, r.stdout .. r.stderr)
    return r
end

local function sqlite(sql) return H.sqlite(database, sql) end

-- The database file copied aside, and put back.
local function snapshot()
    local copy = database .. ".snapshot"
    assert(os.execute("cp " .. H.quote(database) .. " " .. H.quote(copy)))
    return copy
end

local function restore(copy)
    assert(os.execute("cp " .. H.quote(copy) .. " " .. H.quote(database)))
end

-- Gives the app's copy a `database` queue connection (Laravel 12's config/queue.php
-- entry) and makes QUEUE_CONNECTION its default.
local function add_database_connection()
    local file = app .. "/config/queue.php"
    local text = H.read_file(file)
    if text:find("'database' => [", 1, true) and text:find("'driver' => 'database'", 1, true) then return end
    text = text:gsub("'default' => 'redis',", "'default' => env('QUEUE_CONNECTION', 'redis'),", 1)
    text = text:gsub("'connections' => %[", "'connections' => [\n        'database' => [\n"
        .. "            'driver' => 'database',\n            'connection' => env('DB_QUEUE_CONNECTION'),\n"
        .. "            'table' => env('DB_QUEUE_TABLE', 'jobs'),\n            'queue' => env('DB_QUEUE', 'default'),\n"
        .. "            'retry_after' => (int) env('DB_QUEUE_RETRY_AFTER', 90),\n"
        .. "            'after_commit' => false,\n        ],", 1)
    H.write_file(file, text)
end

describe("luaworker beside a real Laravel 12 worker on the database queue", function()
    if not app then
        it("is skipped: " .. missing, function() print(missing) end)
        return
    end

    setup(function()
        add_database_connection()
        L12.job("Recorded", L12.RECORDED_PHP)
        L12.job("Windowed", L12.WINDOWED_PHP)
        handlers = H.handlers({ ["App/Jobs/Recorded.lua"] = L12.RECORDED_LUA })
        database = H.tmpdir() .. "/database.sqlite"
        assert(os.execute("sqlite3 " .. H.quote(database) .. " < " .. H.quote(app .. "/database/schema.sql")))
        -- the jobs table as Laravel 12's queue:table migration makes it on SQLite
        sqlite("create table jobs (id integer primary key autoincrement not null, queue varchar not null, "
            .. "payload text not null, attempts integer not null, reserved_at integer, "
            .. "available_at integer not null, created_at integer not null); "
            .. "create index jobs_queue_index on jobs (queue)")
    end)

    before_each(function()
        H.flush()
        sqlite("delete from failed_jobs; delete from jobs")
    end)

    it("releases a job as Laravel 12 does: the same payload, attempts and available_at in a new row",
        function()
        L12.php([[App\Jobs\Recorded::dispatch('r1', 'release');]], env())
        local pushed = sqlite("select id, payload from jobs")
        assert.is_nil(pushed:find('"attempts":', 1, true), "Laravel 12's database payload has no attempts")
        local state = snapshot()
        local before = os.time()
        php_worker({ "--once" })
        local php = sqlite("select payload, attempts, reserved_at is null, available_at - created_at from jobs")
        local php_id = sqlite("select id from jobs")
        restore(state)
        luaworker({ "--once" })
        local lua = sqlite("select payload, attempts, reserved_at is null, available_at - created_at from jobs")
        assert.are.equal(php, lua)
        assert.are.equal(php_id, sqlite("select id from jobs"))
        assert.matches("|1|1|3\n$", lua)
        assert.is_true(tonumber(sqlite("select available_at from jobs"):match("%d+")) >= before + 3)
    end)

    it("fails a job into failed_jobs with the uuid, connection, queue and payload Laravel 12 records",
        function()
        L12.php([[App\Jobs\Recorded::dispatch('f1', 'fail');]], env())
        local state = snapshot()
        php_worker({ "--once" })
        local php = sqlite("select uuid, connection, queue, payload from failed_jobs")
        restore(state)
        sqlite("delete from failed_jobs")
        luaworker({ "--once" })
        local lua = sqlite("select uuid, connection, queue, payload from failed_jobs")
        assert.are_not.equal("", php)
        assert.are.equal(php, lua)
        assert.matches("^RuntimeException: boom", sqlite("select exception from failed_jobs"))
        assert.are.equal("", sqlite("select id from jobs"))
    end)

    it("runs what the other pushed, and both take turns on one table, each job run once", function()
        L12.php([[
for ($i = 1; $i <= 40; $i++) {
    App\Jobs\Recorded::dispatch('t' . $i, $i % 8 === 0 ? 'release' : 'ok');
}]], env())
        -- (luaworker's --max-jobs replaces its worker process and goes on: --once instead)
        for _ = 1, 10 do luaworker({ "--once" }) end
        php_worker({ "--max-jobs=15", "--stop-when-empty" })
        -- the rest, the released jobs due 3 s after their release
        H.wait_until(function()
            luaworker({ "--stop-when-empty" })
            return #L12.runs() == 45 and sqlite("select id from jobs") == ""
        end, 30, "every job to run")
        local seen, by = L12.runs_by_tag()
        for i = 1, 40 do
            local tag = "t" .. i
            table.sort(seen[tag] or {})
            assert.are.same(i % 8 == 0 and { 1, 2 } or { 1 }, seen[tag], tag)
        end
        assert.are.same({ 15, 30 }, { by.php, by.lua })
        assert.are.equal("", sqlite("select id from jobs"))
        assert.are.equal("0", sqlite("select count(*) from failed_jobs"):match("%d+"))
    end)

    -- Laravel 12's connection entries (its config/database.php's) in the app's copy.
    local CONNECTIONS = {
        pgsql = "        'pgsql' => [\n            'driver' => 'pgsql',\n"
            .. "            'host' => env('DB_HOST', '127.0.0.1'),\n            'port' => env('DB_PORT', '5432'),\n"
            .. "            'database' => env('DB_DATABASE', 'laravel'),\n"
            .. "            'username' => env('DB_USERNAME', 'root'),\n"
            .. "            'password' => env('DB_PASSWORD', ''),\n            'charset' => 'utf8',\n"
            .. "            'prefix' => '',\n            'prefix_indexes' => true,\n"
            .. "            'search_path' => 'public',\n            'sslmode' => 'prefer',\n        ],",
        mysql = "        'mysql' => [\n            'driver' => 'mysql',\n"
            .. "            'host' => env('DB_HOST', '127.0.0.1'),\n            'port' => env('DB_PORT', '3306'),\n"
            .. "            'database' => env('DB_DATABASE', 'laravel'),\n"
            .. "            'username' => env('DB_USERNAME', 'root'),\n"
            .. "            'password' => env('DB_PASSWORD', ''),\n            'unix_socket' => env('DB_SOCKET', ''),\n"
            .. "            'charset' => 'utf8mb4',\n            'collation' => 'utf8mb4_unicode_ci',\n"
            .. "            'prefix' => '',\n            'prefix_indexes' => true,\n            'strict' => true,\n"
            .. "            'engine' => null,\n        ],",
    }
    local function add_connection(name)
        local file = app .. "/config/database.php"
        local text = H.read_file(file)
        if text:find("'" .. name .. "' =>", 1, true) then return end
        text = text:gsub("'connections' => %[", function() return "'connections' => [\n" .. CONNECTIONS[name] end, 1)
        H.write_file(file, text)
    end

    -- The two workers on one jobs table of server {env(), sql(text) -> rows, remove()}
    -- at the same time: each of 200 jobs run once, by both.
    local function concurrent_fleet(server)
        local e = env()
        for k, v in pairs(server.env()) do e[k] = v end
        e.QUEUE_FAILED_DRIVER = "null"
        L12.php([[for ($i = 1; $i <= 200; $i++) { App\Jobs\Recorded::dispatch('c' . $i, 'slow'); }]], e)
        local php = L12.spawn_artisan({ "queue:work", "database", "--sleep=0", "--stop-when-empty" }, e)
        -- Laravel 12's worker takes its first jobs before luaworker starts
        H.wait_until(function() return #L12.runs() > 0 end, 30, "Laravel 12's worker to start")
        local full = { "work", "database", "--laravel=" .. L12.VERSION, "--handlers=" .. handlers,
            "--sleep=0", "--stop-when-empty", "--processes=2", "--concurrency=4" }
        local lw = H.run(full, { env = e })
        assert.are.equal(0, lw.status, lw.stderr)
        local done = php.wait(60)
        assert.are.equal(0, done.status, done.stdout .. done.stderr)
        local seen, by = L12.runs_by_tag()
        for i = 1, 200 do
            assert.are.same({ 1 }, seen["c" .. i], "c" .. i .. "\n" .. done.stdout .. lw.stderr)
        end
        assert.is_true(by.php > 0 and by.lua > 0, by.php .. " by php, " .. by.lua .. " by luaworker")
        assert.are.equal("0", server.sql("select count(*) from jobs"):match("%d+"))
    end

    -- Leases beside Laravel 12's worker (L12.leases) on the jobs table of server
    -- {env(), sql(text)}.
    local function leases(server)
        local e = env()
        for k, v in pairs(server.env()) do e[k] = v end
        e.QUEUE_FAILED_DRIVER = "null"
        server.sql("delete from jobs")
        L12.leases(assert, { connection = "database", env = e, short = { DB_QUEUE_RETRY_AFTER = "5" },
            left = function() return tonumber(server.sql("select count(*) from jobs"):match("%d+")) end })
    end

    -- RateLimitedWithRedis's limit kept by both workers at the same time (L12.windowed)
    -- on the jobs table of server {env(), sql(text)}.
    local function windowed(server)
        local e = env()
        for k, v in pairs(server.env()) do e[k] = v end
        e.QUEUE_FAILED_DRIVER = "null"
        server.sql("delete from jobs")
        L12.windowed(assert, { connection = "database", env = e })
        assert.are.equal("0", server.sql("select count(*) from jobs"):match("%d+"))
    end

    describe("on PostgreSQL", function()
        local pg
        setup(function()
            add_connection("pgsql")
            pg = H.postgresql()
            -- the jobs table as Laravel 12's queue:table migration makes it on PostgreSQL
            pg.psql("create table jobs (id bigserial primary key, queue varchar(255) not null, "
                .. "payload text not null, attempts smallint not null, reserved_at integer, "
                .. "available_at integer not null, created_at integer not null); "
                .. "create index jobs_queue_index on jobs (queue)")
        end)
        teardown(function() if pg then pg.remove() end end)

        it("runs each job once with Laravel 12's queue:work and luaworker taking jobs at the same time",
            function()
            concurrent_fleet({ env = pg.env, sql = pg.psql })
        end)

        it("keeps a long job's lease while Laravel 12's queue:work polls, and leaves it to that worker "
            .. "within seconds once the luaworker group is killed", function()
            leases({ env = pg.env, sql = pg.psql })
        end)

        it("keeps RateLimitedWithRedis's 3 runs a window with Laravel 12's queue:work and two luaworkers "
            .. "taking the jobs at the same time", function()
            windowed({ env = pg.env, sql = pg.psql })
        end)
    end)

    describe("on MariaDB", function()
        local mariadb
        setup(function()
            add_connection("mysql")
            mariadb = H.mariadb()
            -- the jobs table as Laravel 12's queue:table migration makes it on MySQL
            mariadb.root("create table jobs (id bigint unsigned not null auto_increment primary key, "
                .. "queue varchar(255) not null, payload longtext not null, attempts tinyint unsigned not null, "
                .. "reserved_at int unsigned null, available_at int unsigned not null, "
                .. "created_at int unsigned not null, index jobs_queue_index (queue)) engine=InnoDB")
        end)
        teardown(function() if mariadb then mariadb.remove() end end)

        it("runs each job once with Laravel 12's queue:work and luaworker taking jobs at the same time",
            function()
            concurrent_fleet({ env = mariadb.env, sql = mariadb.root })
        end)

        it("keeps a long job's lease while Laravel 12's queue:work polls, and leaves it to that worker "
            .. "within seconds once the luaworker group is killed", function()
            leases({ env = mariadb.env, sql = mariadb.root })
        end)
    end)
end)
