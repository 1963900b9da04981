-- Laravel's database queue (luaworker work database) on a real SQLite file: the jobs table
-- of the Laravel 8 app (examples/laravel, its migration as `queue:table` writes it),
-- with PHP's own jobs:dispatch and queue:work beside luaworker. What every server is
-- asked alike is in spec/database_queue_contract.lua,
-- spec/database_queue_reservations_contract.lua and
-- spec/database_queue_cache_store_contract.lua;
-- this server's own cases are here.
local H = require "spec.helpers"
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
        -- a shell command that holds the database's write lock for that many seconds
        locking = function(seconds)
            return string.format("sqlite3 %s 'begin exclusive;' '.shell sleep %s' 'commit;'", H.quote(file), seconds)
        end,
    }
    contract(server)

    it("refuses to start, naming the table, when the jobs table is not there", function()
        local r = H.run({ "work", "database", "--handlers=" .. HANDLERS, "--stop-when-empty" },
            { env = server.env({ DB_QUEUE_TABLE = "no_such_jobs" }) })
        assert.are.equal(2, r.status, r.stderr)
        assert.matches("cannot start: the database queue's table no_such_jobs: [^\n]*no such table", r.stderr)
    end)

    it("goes on with a fleet whose jobs table goes away while it runs: the workers that replace others "
        .. "say it, and run the jobs once it is back", function()
        H.flush()
        local w = H.spawn({ "work", "database", "--handlers=" .. HANDLERS, "--sleep=0.05", "--max-time=1",
            "--processes=2" }, { env = server.env({ QUEUE_CONNECTION = "database" }) })
        H.sleep(0.5)
        H.sqlite(file, "alter table jobs rename to jobs_away")
        local replaced = pcall(H.wait_until, function()
            local _, n = w:stderr():gsub("found as this worker started in place of another", "")
            return n >= 2
        end, 10)
        H.sqlite(file, "alter table jobs_away rename to jobs")
        local r = H.run({ "push", "App\\Jobs\\Simple", '{"n":"back"}' },
            { env = server.env({ QUEUE_CONNECTION = "database" }) })
        assert.are.equal(0, r.status, r.stderr)
        local ran = pcall(H.wait_until, function() return #runs() == 1 end, 10)
        local running = w:status() == nil
        w:stop()
        assert.is_true(replaced, w:stderr())
        assert.is_true(running, "the fleet stopped: " .. w:stderr())
        assert.is_true(ran, "the job did not run: " .. w:stderr())
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
            "--env-file=" .. H.app .. "/.env" }, { env = e })
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
