-- Laravel's database queue (luaworker work database) on a real MariaDB server: the jobs table
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

local function contract(server)
    C.contract(server, it, before_each, assert)
    reservations.contract(server, it, assert)
    cache_store.contract(server, it, assert)
end

describe("the database queue on MariaDB", function()
    local mariadb
    local server = { php = true, mixed = true, holds_ahead = true, key_column = "`key`" }
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
    -- a shell command that holds the jobs table against writes for that many seconds
    function server.locking(seconds)
        return string.format("mariadb --no-defaults -S %s -uroot -N -B app -e %s", H.quote(mariadb.socket),
            H.quote(string.format("lock tables jobs write; do sleep(%s); unlock tables;", seconds)))
    end
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
