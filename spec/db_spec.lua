-- luaworker.db against a real PostgreSQL: a throwaway cluster (Debian's postgresql:
-- initdb and pg_ctl as the user nobody (H.as_nobody), in a temporary directory; TCP
-- logins need the password, scram-sha-256), torn down at the end.
local H = require "spec.helpers"

-- the cluster (H.postgresql; PostgreSQL's defaults: a statement goes on when its
-- client is gone), and what the specs use of it
local cluster, PASSWORD, BIN, dir, port

local function start_cluster()
    cluster = H.postgresql()
    PASSWORD, BIN, dir, port = cluster.password, cluster.bin, cluster.dir, cluster.port
end

local function stop_cluster()
    if cluster then cluster.remove() end
end

local function env(extra)
    local e = { DB_CONNECTION = "pgsql", DB_HOST = "127.0.0.1", DB_PORT = tostring(port),
        DB_DATABASE = "postgres", DB_USERNAME = "postgres", DB_PASSWORD = PASSWORD }
    for k, v in pairs(extra or {}) do e[k] = v end
    return e
end

-- Runs a Lua script inside luaworker with the cluster's settings; returns its output.
local function run_lua(source, extra_env)
    local file = H.tmpdir() .. "/script.lua"
    H.write_file(file, source)
    local r = H.run({ "lua", file }, { env = env(extra_env) })
    assert.are.equal(0, r.status, r.stdout .. r.stderr)
    return r.stdout
end

-- A query through psql on the server's socket (trusted), for the spec's own looks.
local function psql(sql)
    local f = io.popen(H.as_nobody(string.format("%spsql -h %s -p %d -U postgres -At -c %s postgres", BIN,
        dir, port, H.quote(sql))) .. " 2>&1")
    local out = f:read("*a")
    f:close()
    return out
end

describe("luaworker.db on PostgreSQL", function()
    setup(start_cluster)
    teardown(stop_cluster)

    it("selects rows keyed by column, with NULL, booleans, numbers and exact 64-bit integers", function()
        local out = run_lua([[
local lw = require "luaworker"
local db = lw.db()
db:statement("create table t1 (id bigserial primary key, name text, price numeric, qty int, "
    .. "ok boolean, f float8, big bigint, note text)")
assert(db:insert("insert into t1 (name, price, qty, ok, f, big) values (?, ?, ?, ?, ?, ?)",
    { "a ? 'b'", "12.50", 3, true, 1.5, "9007199254740993" }) == true)
local r = db:select("select * from t1 where name = ? and qty > ?", { "a ? 'b'", 1 })[1]
print(r.id, r.name, r.price, r.qty, r.ok, r.f, tostring(r.big), r.note == lw.null)
print(#db:select("select 1 as one where '?' = '?'"))
]])
        assert.are.equal("1\ta ? 'b'\t12.50\t3\ttrue\t1.5\t9007199254740993LL\ttrue\n1\n", out)
    end)

    it("binds values as parameters, never as SQL", function()
        local out = run_lua([[
local db = require("luaworker").db()
db:statement("create table t2 (v text)")
db:insert("insert into t2 (v) values (?)", { "x'); drop table t2; --" })
print(db:select("select v from t2")[1].v)
]])
        assert.are.equal("x'); drop table t2; --\n", out)
    end)

    require("spec.db_contract")(it, assert, run_lua, "pg_backend_pid()")

    -- the specs' own psql, initdb and pg_ctl (H.as_nobody), from a checkout only root
    -- can enter (a clone under /root, or in a mktemp -d): psql said 'could not change
    -- directory to "...": Permission denied' on stderr, and the specs that expect an
    -- empty one failed
    it("(the specs' own) runs psql as nobody from a directory nobody cannot enter, stderr empty",
        function()
        local root_only = H.tmpdir() .. "/root-only"
        assert(os.execute("mkdir -m 0700 " .. H.quote(root_only)))
        local err = H.tmpdir() .. "/psql.err"
        local f = io.popen("cd " .. H.quote(root_only) .. " && " .. H.as_nobody(string.format(
            "%spsql -h %s -p %d -U postgres -At -c 'select 6 * 7' postgres", BIN, dir, port))
            .. " 2>" .. H.quote(err))
        local out = f:read("*a")
        f:close()
        assert.are.equal("", H.read_file(err))
        assert.are.equal("42\n", out)
    end)

    it("raises a QueryException with the SQLSTATE and the server's message", function()
        local out = run_lua([[
local ok, err = pcall(function() return require("luaworker").db():select("select * from nope where a = ?", { 1 }) end)
print(ok, err.class, err.message)
]])
        -- as PDO words it (checked with PHP 8.2's pdo_pgsql against this server)
        assert.are.equal("false\tIlluminate\\Database\\QueryException\tSQLSTATE[42P01]: Undefined table: 7 "
            .. "ERROR:  relation \"nope\" does not exist\nLINE 1: select * from nope where a = $1\n"
            .. "                      ^ (SQL: select * from nope where a = ?)\n", out)
    end)

    it("adds the connection to a QueryException from Laravel 10, its host, port and database from "
        .. "12.45, as Laravel does", function()
        local file = H.tmpdir() .. "/script.lua"
        H.write_file(file, [[
local db = require("luaworker").db()
print(select(2, pcall(db.select, db, "select 1/0")).message)
]])
        local out = {}
        for _, v in ipairs({ "9.52", "10.0", "12.44", "12.45" }) do
            local r = H.run({ "lua", "--laravel=" .. v, file }, { env = env() })
            assert.are.equal(0, r.status, r.stderr)
            out[#out + 1] = r.stdout
        end
        local e = "SQLSTATE[22012]: Division by zero: 7 ERROR:  division by zero"
        assert.are.same({ e .. " (SQL: select 1/0)\n", e .. " (Connection: pgsql, SQL: select 1/0)\n",
            e .. " (Connection: pgsql, SQL: select 1/0)\n",
            e .. " (Connection: pgsql, Host: 127.0.0.1, Port: " .. port .. ", Database: postgres, SQL: "
                .. "select 1/0)\n" }, out)
    end)

    it("never shows the password, even when it is wrong", function()
        local out = run_lua([[
local ok, err = pcall(function() return require("luaworker").db():select("select 1") end)
print(ok, err)
]], { DB_PASSWORD = "wrong-secret-pw" })
        assert.matches("^false\tIlluminate\\Database\\QueryException: SQLSTATE%[08006%] %[7%] [^\n]*password "
            .. "authentication failed", out)
        assert.is_nil(out:find("wrong-secret-pw", 1, true))
        assert.is_nil(out:find(PASSWORD, 1, true))
    end)

    it("takes DATABASE_URL over the DB_ variables, and never shows its password", function()
        local url = string.format("postgresql://postgres:%s@127.0.0.1:%d/postgres?sslmode=disable",
            PASSWORD, port)
        local out = run_lua([[print(require("luaworker").db("pgsql"):select("select 7 as seven")[1].seven)]],
            { DATABASE_URL = url, DB_HOST = "192.0.2.1", DB_PASSWORD = "not-this" })
        assert.are.equal("7\n", out)
        out = run_lua([[
local ok, err = pcall(function() return require("luaworker").db("pgsql"):select("select 1") end)
print(ok, err)
]], { DATABASE_URL = string.format("postgresql://postgres:url%%2Dsecret@127.0.0.1:%d/postgres", port) })
        assert.matches("^false\tIlluminate\\Database\\QueryException: SQLSTATE%[08006%] %[7%] [^\n]*password "
            .. "authentication failed", out)
        assert.is_nil(out:find("url-secret", 1, true))
    end)

    it("reads the URL from DB_URL from Laravel 11 on, DATABASE_URL before (config/database.php's "
        .. "names)", function()
        local url = string.format("postgresql://postgres:%s@127.0.0.1:%d/postgres", PASSWORD, port)
        local file = H.tmpdir() .. "/url.lua"
        H.write_file(file, [[print(pcall(function()
    return require("luaworker").db("pgsql"):select("select 7 as seven")[1].seven
end))]])
        for _, case in ipairs({ { "11", "DB_URL", "true\t7\n" }, { "10", "DATABASE_URL", "true\t7\n" },
            { "11", "DATABASE_URL", "true\t7\n" } }) do
            local r = H.run({ "lua", "--laravel=" .. case[1], file }, { env = env({ [case[2]] = url,
                DB_HOST = "192.0.2.1", DB_PASSWORD = "not-this", DB_CONNECT_TIMEOUT = "1" }) })
            assert.are.equal(case[3], r.stdout, table.concat(case, " ") .. ": " .. r.stderr)
        end
        -- the version's own name wins over the other
        local r = H.run({ "lua", "--laravel=11", file }, { env = env({ DB_URL = url,
            DATABASE_URL = "pgsql://nobody:wrong@127.0.0.1:1/none" }) })
        assert.are.equal("true\t7\n", r.stdout, r.stderr)
    end)

    it("runs a statement again on a new connection when the server ended the pooled one, "
        .. "outside a transaction only (DetectsLostConnections)", function()
        local out = run_lua([[
local db = require("luaworker").db()
local function terminate(pid)
    os.execute(]] .. string.format("%q", H.as_nobody(BIN .. "psql -h " .. dir .. " -p " .. port
            .. " -U postgres -Atc")) .. [[ .. " 'select pg_terminate_backend(" .. pid .. ")' postgres >/dev/null")
end
local pid = db:select("select pg_backend_pid() as p")[1].p
terminate(pid)
local r = db:select("select 2 as two, pg_backend_pid() as p")[1]
print(r.two, r.p ~= pid)
db:statement("create table lost (n int)")
local ok, err = pcall(db.transaction, db, function(tx)
    tx:insert("insert into lost values (1)")
    terminate(tx:select("select pg_backend_pid() as p")[1].p)
    tx:insert("insert into lost values (2)")
end)
print(ok, err.message:match("^SQLSTATE%[HY000%]: General error: 7 FATAL:  terminating connection") ~= nil)
print(#db:select("select * from lost"))
]])
        assert.are.equal("2\ttrue\nfalse\ttrue\n0\n", out)
    end)

    describe("in a worker with jobs in flight", function()
        local HANDLER = [[
local luaworker = require "luaworker"
return { handle = function(job, command)
    local db = luaworker.db()
    local r
    if command.peers then
        r = db:select("select pg_backend_pid() as p, wait_peers(?) as s", { command.peers })
    else
        r = db:select("select pg_backend_pid() as p, pg_sleep(?) as s", { command.seconds })
    end
    luaworker.redis("RPUSH", "spec:done", r[1].p)
end }
]]
        local function db_job(seconds, fields)
            local s = tostring(seconds)
            return H.class_payload("App\\Jobs\\Query", fields,
                { { "seconds", string.format('s:%d:"%s";', #s, s) } })
        end
        local workers = H.worker_set()
        after_each(workers.stop_all)
        before_each(function() H.flush() end)

        -- a result of 100 MB, caught; then a statement on the same pool
        local BIG = [[
local luaworker = require "luaworker"
return { handle = function(job, command)
    local ok, err = pcall(function()
        return luaworker.db():select("select n || repeat('x', 1000000) as x from generate_series(1, 100) n")
    end)
    luaworker.redis("RPUSH", "spec:big", tostring(ok), tostring(err))
    luaworker.redis("RPUSH", "spec:big", luaworker.db():select("select 7 as n")[1].n)
end }
]]
        -- 300 MB of rows inside a transaction, then a statement of the same transaction
        local HUGE = [[
local luaworker = require "luaworker"
return { handle = function(job, command)
    luaworker.db():transaction(function(tx)
        local ok, err = pcall(function()
            return tx:select("select n || repeat('x', 1000000) as x from generate_series(1, 300) n")
        end)
        luaworker.redis("RPUSH", "spec:huge", tostring(ok), tostring(err),
            tx:select("select 8 as n")[1].n)
    end)
end }
]]
        -- updates the row of table locked in a transaction, then waits inside it when asked
        local LOCKER = [[
local luaworker = require "luaworker"
return { handle = function(job, command)
    luaworker.db():transaction(function(tx)
        tx:update("update locked set n = n + 1 where id = 1")
        luaworker.redis("RPUSH", "spec:locked", job:id())
        if command.wait then luaworker.sleep(60) end
    end)
    luaworker.redis("RPUSH", "spec:done", job:id())
end }
]]
        local function start(args, extra_env)
            local full = { "work", "--handlers=" .. H.handlers({ ["App/Jobs/Query.lua"] = HANDLER,
                ["App/Jobs/Big.lua"] = BIG, ["App/Jobs/Locker.lua"] = LOCKER,
                ["App/Jobs/Huge.lua"] = HUGE }), "--sleep=0.05" }
            for _, a in ipairs(args) do full[#full + 1] = a end
            -- failed jobs in luaworker's Redis store: these databases have no failed_jobs table
            local e = { QUEUE_FAILED_DRIVER = "luaworker-redis" }
            for k, v in pairs(extra_env or {}) do e[k] = v end
            return workers.spawn(full, { env = env(e) })
        end

        it("runs 50 statements at once in one process, each on a connection of its own", function()
            -- each statement waits (up to 20 s) until 50 are running: a connection used
            -- twice shows as fewer backends, whatever the time 50 connects take (a
            -- 1 s statement once ended before the 50th job had connected, beside CI).
            -- pg_stat_activity is read once per transaction unless its snapshot is
            -- cleared: without that, each statement waited its whole 20 s.
            psql("create or replace function wait_peers(n int) returns float language plpgsql as $$ "
                .. "declare started timestamptz := clock_timestamp(); begin loop "
                .. "perform pg_stat_clear_snapshot(); exit when "
                .. "(select count(*) from pg_stat_activity where query like 'select pg_backend_pid() as p, "
                .. "wait_peers(%') >= n or clock_timestamp() - started > interval '20 seconds'; "
                .. "perform pg_sleep(0.05); end loop; return 0; end $$")
            for _ = 1, 50 do H.push(H.class_payload("App\\Jobs\\Query", nil, { { "peers", "i:50;" } })) end
            local w = start({ "--concurrency=50" }, { LUAWORKER_DB_POOL = "50" })
            H.wait_until(function() return H.r("LLEN", "spec:done") == 50 end, 40, "the 50 jobs")
            local backends = {}
            for _, p in ipairs(H.r("LRANGE", "spec:done", 0, -1)) do backends[p] = true end
            local n = 0
            for _ in pairs(backends) do n = n + 1 end
            assert.are.equal(50, n)
            assert.are.equal(1, #H.children(w.pid))
            w:kill("TERM")
            assert.are.equal(0, w:wait())
        end)

        it("rolls back the transaction of a job stopped for its timeout inside it, releasing its "
            .. "locks before the next job needs them", function()
            psql("drop table if exists locked; create table locked (id int primary key, n int); "
                .. "insert into locked values (1, 0)")
            H.push(H.class_payload("App\\Jobs\\Locker", { id = "stuck", timeout = 1, failOnTimeout = true },
                { { "wait", "b:1;" } }))
            H.push(H.class_payload("App\\Jobs\\Locker", { id = "next" }))
            local w = start({ "--concurrency=2" })
            H.wait_until(function() return H.r("LLEN", "spec:done") == 1 end, 15, "the next job")
            assert.are.same({ "next" }, H.r("LRANGE", "spec:done", 0, -1))
            assert.are.equal("1\n", psql("select n from locked"))
            H.wait_until(function()
                return psql("select count(*) from pg_stat_activity where state like 'idle in transaction%'")
                    == "0\n"
            end, 5, "no session idle in a transaction")
            w:kill("TERM")
            assert.are.equal(0, w:wait())
        end)

        it("closes the connection of a job that ended with a transaction open (a BEGIN without its "
            .. "COMMIT)", function()
            H.push(H.class_payload("App\\Jobs\\Query", nil, { { "begin", "b:1;" } }))
            local handlers = H.handlers({ ["App/Jobs/Query.lua"] = [[
local luaworker = require "luaworker"
return { handle = function(job, command)
    local db = luaworker.db()
    db:statement("begin")
    luaworker.redis("RPUSH", "spec:done", tostring(db:select("select pg_backend_pid() as p")[1].p))
end }
]] })
            local r = H.run({ "work", "--once", "--handlers=" .. handlers }, { env = env({
                QUEUE_FAILED_DRIVER = "luaworker-redis" }) })
            assert.are.equal(0, r.status, r.stderr)
            assert.matches("luaworker.db: a job ended with a transaction open on connection pgsql (a "
                .. "BEGIN without its COMMIT): the connection is closed, and the transaction rolled back "
                .. "with it", r.stderr, 1, true)
            H.wait_until(function()
                return psql("select count(*) from pg_stat_activity where state like 'idle in transaction%'")
                    == "0\n"
            end, 5, "no session idle in a transaction")
        end)

        it("opens no more connections than LUAWORKER_DB_POOL: the other jobs wait for one "
            .. "without holding up the loop", function()
            for _ = 1, 20 do H.push(db_job(0.3)) end
            local w = start({ "--concurrency=20" }, { LUAWORKER_DB_POOL = "4" })
            H.wait_until(function() return H.r("LLEN", "spec:done") == 20 end, 30, "the 20 jobs")
            local backends, n = {}, 0
            for _, p in ipairs(H.r("LRANGE", "spec:done", 0, -1)) do
                if not backends[p] then n = n + 1 end
                backends[p] = true
            end
            assert.are.equal(4, n)
            w:kill("TERM")
            assert.are.equal(0, w:wait())
        end)

        it("refuses to start with a LUAWORKER_DB_POOL that is not a whole number from 1 to 10000", function()
            for _, v in ipairs({ "0", "10001", "-1", "2.5", "x" }) do
                local r = H.run({ "work", "--handlers=" .. H.handlers({}), "--stop-when-empty" },
                    { env = env({ LUAWORKER_DB_POOL = v }) })
                assert.are.equal(2, r.status, v .. ": " .. tostring(r.stdout) .. tostring(r.stderr))
                assert.matches("cannot start: LUAWORKER_DB_POOL=" .. v:gsub("%p", "%%%0")
                    .. ": expected a whole number from 1 to 10000", r.stderr)
            end
        end)

        it("fails only the statement whose result does not fit under --memory-limit: the "
            .. "jobs beside it finish in the same process", function()
            for _ = 1, 3 do H.push(db_job(1)) end
            H.push(H.class_payload("App\\Jobs\\Big"))
            -- --memory=0: under AddressSanitizer (its quarantine keeps what was freed) the
            -- process can pass --memory's 128 MB after the job and be recycled, as it
            -- should; what is checked here is that the error killed no process
            local w = start({ "--concurrency=4", "--memory-limit=64", "--memory=0" })
            H.wait_until(function() return H.r("LLEN", "spec:done") == 3 and H.r("LLEN", "spec:big") == 3 end,
                30, "the 4 jobs")
            local big = H.r("LRANGE", "spec:big", 0, -1)
            assert.are.equal("false", big[1])
            assert.matches("^Illuminate\\Database\\QueryException: a result of 95%.4 MB does not fit under "
                .. "%-%-memory%-limit=64 %(MB; the worker's Lua heap holds [%d.]+ MB%) %(SQL: select n || repeat",
                big[2])
            assert.are.equal("7", big[3])
            assert.are.equal(1, #H.children(w.pid))
            assert.is_nil(w:stderr():find("internal error", 1, true))
            w:kill("TERM")
            assert.are.equal(0, w:wait())
        end)

        it("never holds a result over --memory-limit whole: rows are counted past it, the "
            .. "process's peak stays near the limit, and the connection and its transaction go on",
            function()
            H.push(H.class_payload("App\\Jobs\\Huge"))
            -- under AddressSanitizer, freed memory waits in its quarantine (256 MB)
            -- before it is used again: the rows freed would count in the peak
            local asan = os.getenv("ASAN_OPTIONS")
            local w = start({ "--memory-limit=32", "--memory=0" },
                { ASAN_OPTIONS = (asan and asan ~= "" and asan .. ":" or "") .. "quarantine_size_mb=1" })
            H.wait_until(function() return H.r("LLEN", "spec:huge") == 3 end, 60, "the job")
            local huge = H.r("LRANGE", "spec:huge", 0, -1)
            assert.are.equal("false", huge[1])
            assert.matches("^Illuminate\\Database\\QueryException: a result of 286%.1 MB does not fit "
                .. "under %-%-memory%-limit=32 ", huge[2])
            assert.are.equal("8", huge[3])
            -- before, libpq read the whole result (a peak of over 300 MB) and then it
            -- was refused
            local peak_kb = H.peak_kb(H.children(w.pid)[1])
            assert.is_true(peak_kb < 100 * 1024, "a peak of " .. peak_kb .. " kB")
            w:kill("TERM")
            assert.are.equal(0, w:wait())
        end)

        it("ends the statement of a job stopped for its timeout on the server too", function()
            H.push(db_job(60, { timeout = 1, failOnTimeout = true }))
            local w = start({ "--concurrency=2" })
            H.wait_until(function() return w:stderr():match("ran past its timeout of 1s; it was "
                .. "stopped where it waited; failed") end, 15, "the timeout")
            H.wait_until(function()
                return psql("select count(*) from pg_stat_activity where query like '%pg_sleep%' "
                    .. "and pid <> pg_backend_pid()"):match("^0") ~= nil
            end, 3, "the statement to end")
            w:kill("TERM")
            assert.are.equal(0, w:wait())
            assert.is_nil(w:stderr():find("could not end", 1, true))
        end)
    end)
end)

describe("luaworker.db on SQLite", function()
    local file

    before_each(function()
        file = H.tmpdir() .. "/database.sqlite"
        assert(os.execute("sqlite3 " .. H.quote(file) .. " 'create table items (id integer primary key, "
            .. "name text, price real, big integer, note text)'"))
    end)

    local function run_sqlite(source)
        local script = H.tmpdir() .. "/script.lua"
        H.write_file(script, source)
        local r = H.run({ "lua", script }, { env = { DB_CONNECTION = "sqlite", DB_DATABASE = file } })
        assert.are.equal(0, r.status, r.stdout .. r.stderr)
        return r.stdout
    end

    it("runs the DB facade's calls on the file DB_DATABASE names", function()
        local out = run_sqlite([[
local lw = require "luaworker"
local db = lw.db()
db:insert("insert into items (name, price, big) values (?, ?, ?)", { "a ? 'b'", 1.5, "9007199254740993" })
local r = db:select("select * from items where name = ?", { "a ? 'b'" })[1]
print(r.id, r.name, r.price, tostring(r.big), r.note == lw.null)
print(db:update("update items set price = price + ? where id >= ?", { 1, 1 }))
print(db:transaction(function(d) d:insert("insert into items (name) values (?)", { "kept" }) return "ok" end))
print(pcall(db.transaction, db, function(d) d:insert("insert into items (name) values (?)", { "gone" }) error("boom", 0) end))
print(#db:select("select * from items"), db:delete("delete from items where name = ?", { "kept" }))
local ok, err = pcall(db.select, db, "select * from nope")
print(err.class, err.message)
]])
        assert.are.equal("1\ta ? 'b'\t1.5\t9007199254740993LL\ttrue\n1\nok\nfalse\tboom\n2\t1\n"
            .. "Illuminate\\Database\\QueryException\tSQLSTATE[HY000]: General error: 1 no such table: "
            .. "nope (SQL: select * from nope)\n", out)
    end)

    it("waits out a database another process has locked, without holding up the loop", function()
        -- another process holds a write lock for 1.5 s
        os.execute("(printf 'begin immediate;\\ninsert into items (name) values (\"other\");\\n"
            .. ".shell sleep 1.5\\ncommit;\\n' | sqlite3 " .. H.quote(file) .. ") >/dev/null 2>&1 &")
        local out = run_sqlite([[
local lw = require "luaworker"
local task = require "luaworker.loop.task"
os.execute("sleep 0.3")
local ticks = 0
-- a task of its own that counts while the insert waits for the lock
task.spawn(function() end, nil, function()
    for _ = 1, 100 do lw.sleep(0.01); ticks = ticks + 1 end
end)
lw.db():insert("insert into items (name) values (?)", { "mine" })
print(#lw.db():select("select * from items"), ticks > 10)
]])
        assert.are.equal("2\ttrue\n", out)
    end)

    require("spec.db_contract")(it, assert, run_sqlite, "1")

    it("fails the statement whose rows do not fit under --memory-limit, its statement ended", function()
        local handlers = H.handlers({ ["App/Jobs/Big.lua"] = [[
local luaworker = require "luaworker"
return { handle = function(job, command)
    local db = luaworker.db()
    local ok, err = pcall(db.select, db, "with recursive c(n) as (select 1 union all select n + 1 "
        .. "from c where n < 100) select printf('%d%.*c', n, 1000000, 'x') as x from c")
    print(ok, err)
    -- the statement was finalized: the database can be written
    db:insert("insert into items (name) values (?)", { "after" })
    print(#db:select("select * from items where name = 'after'"))
end }
]] })
        H.flush()
        H.push(H.class_payload("App\\Jobs\\Big"))
        local r = H.run({ "work", "--once", "--memory-limit=64", "--handlers=" .. handlers },
            { env = { DB_CONNECTION = "sqlite", DB_DATABASE = file, QUEUE_FAILED_DRIVER = "luaworker-redis" } })
        assert.are.equal(0, r.status, r.stderr)
        assert.matches("false\tIlluminate\\Database\\QueryException: a result of more than [%d.]+ MB does "
            .. "not fit under %-%-memory%-limit=64 %(MB; the worker's Lua heap holds [%d.]+ MB%) %(SQL: with "
            .. "recursive", r.stdout)
        assert.matches("\n1\n", r.stdout)
    end)

    it("without DB_CONNECTION, tries Laravel's default of the version (mysql before 11, sqlite from 11), "
        .. "saying that no --env-file named the app's", function()
        local script = H.tmpdir() .. "/script.lua"
        H.write_file(script, [[
local lw = require "luaworker"
local ok, err = pcall(function() return lw.db():select("select 1") end)
io.write(tostring(err))
]])
        -- a port nothing listens on, for mysql's default host
        local r = H.run({ "lua", "--laravel=10", script }, { env = { DB_PORT = tostring(H.free_port()) } })
        assert.are.equal(0, r.status, r.stderr)
        assert.matches("SQLSTATE[HY000] [2002]", r.stdout, 1, true)
        assert.matches("no DB_CONNECTION nor DB_ variable is set, and Laravel's default connection was "
            .. "tried: give luaworker the app's .env with --env-file", r.stdout, 1, true)
        r = H.run({ "lua", "--laravel=11", script })
        assert.are.equal(0, r.status, r.stderr)
        assert.matches("the sqlite connection needs DB_DATABASE (the database file), or --env-file", r.stdout, 1, true)
    end)
end)
