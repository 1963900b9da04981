-- luaworker.db against a real MariaDB (Laravel's mysql and mariadb connections): a
-- throwaway server from examples/private-mariadb.sh (Debian's mariadb-server, as
-- the user nobody, in a temporary directory), torn down at the end.
local H = require "spec.helpers"

local server  -- H.mariadb()

-- Runs a Lua script inside luaworker with the server's settings; returns its output.
local function run_lua(source, extra_env)
    local file = H.tmpdir() .. "/script.lua"
    H.write_file(file, source)
    local r = H.run({ "lua", file }, { env = server.env(extra_env) })
    assert.are.equal(0, r.status, r.stdout .. r.stderr)
    return r.stdout
end

describe("luaworker.db on MariaDB", function()
    setup(function() server = H.mariadb() end)
    teardown(function() if server then server.remove() end end)

    it("selects rows keyed by column, alike with and without bindings", function()
        local out = run_lua([[
local lw = require "luaworker"
local db = lw.db()
db:statement("create table t1 (id bigint auto_increment primary key, name text, price decimal(8,2), "
    .. "qty int, ok boolean, f double, big bigint, ub bigint unsigned, note text, at datetime, "
    .. "bytes blob)")
assert(db:insert("insert into t1 (name, price, qty, ok, f, big, ub, at, bytes) values "
    .. "(?, ?, ?, ?, ?, ?, ?, ?, ?)", { "a ? 'b'", "12.50", 3, true, 0.1, "9007199254740993",
    "18446744073709551615", "2024-01-02 03:04:05", "x\0y" }) == true)
for _, r in ipairs({ db:select("select * from t1 where name = ? and qty > ?", { "a ? 'b'", 1 })[1],
                     db:select("select * from t1")[1] }) do
    print(r.id, r.name, r.price, r.qty, r.ok, r.f, tostring(r.big), r.ub, r.note == lw.null, r.at,
        r.bytes == "x\0y")
end
]])
        local row = "1\ta ? 'b'\t12.50\t3\t1\t0.1\t9007199254740993LL\t18446744073709551615\ttrue\t"
            .. "2024-01-02 03:04:05\ttrue\n"
        assert.are.equal(row .. row, out)
    end)

    it("binds values as parameters of a prepared statement, never as SQL", function()
        local before = server.root("show global status like 'Com_stmt_prepare'"):match("(%d+)")
        local out = run_lua([[
local db = require("luaworker").db()
db:statement("create table t2 (v text)")
db:insert("insert into t2 (v) values (?)", { "x'); drop table t2; --" })
print(db:select("select v from t2")[1].v)
]])
        assert.are.equal("x'); drop table t2; --\n", out)
        local after = server.root("show global status like 'Com_stmt_prepare'"):match("(%d+)")
        assert.are.equal(tonumber(before) + 1, tonumber(after))
    end)

    require("spec.db_contract")(it, assert, run_lua, "connection_id()")

    it("raises QueryExceptions worded as PDO's, with the SQLSTATE and MySQL's error number", function()
        local out = run_lua([[
local db = require("luaworker").db()
db:statement("create table t5 (id int primary key)")
db:insert("insert into t5 values (?)", { 1 })
for _, call in ipairs({ { "select * from nope where a = ?", { 1 } }, { "insert into t5 values (?)", { 1 } },
                        { "insert into t5 values (1)" } }) do
    local ok, err = pcall(db.insert, db, call[1], call[2])
    print(ok, err.class, err.message)
end
]])
        assert.are.equal(
            "false\tIlluminate\\Database\\QueryException\tSQLSTATE[42S02]: Base table or view not found: "
            .. "1146 Table 'app.nope' doesn't exist (SQL: select * from nope where a = ?)\n"
            .. "false\tIlluminate\\Database\\QueryException\tSQLSTATE[23000]: Integrity constraint "
            .. "violation: 1062 Duplicate entry '1' for key 'PRIMARY' (SQL: insert into t5 values (?))\n"
            .. "false\tIlluminate\\Database\\QueryException\tSQLSTATE[23000]: Integrity constraint "
            .. "violation: 1062 Duplicate entry '1' for key 'PRIMARY' (SQL: insert into t5 values (1))\n",
            out)
    end)

    it("sets up each connection as Laravel's MySqlConnector: utf8mb4, its collation, strict mode", function()
        local out = run_lua([[
local r = require("luaworker").db():select("select @@character_set_client cs, @@collation_connection co, "
    .. "@@sql_mode m")[1]
print(r.cs, r.co, r.m)
]])
        assert.are.equal("utf8mb4\tutf8mb4_unicode_ci\tONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,"
            .. "NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION\n", out)
    end)

    it("never shows the password, even when it is wrong", function()
        local out = run_lua([[
local ok, err = pcall(function() return require("luaworker").db():select("select 1") end)
print(ok, err)
]], { DB_PASSWORD = "wrong-secret-pw" })
        assert.matches("^false\tIlluminate\\Database\\QueryException: SQLSTATE%[28000%] %[1045%] Access "
            .. "denied for user 'luaworker'@'localhost' %(using password: YES%)", out)
        assert.is_nil(out:find("wrong-secret-pw", 1, true))
        assert.is_nil(out:find(server.password, 1, true))
    end)

    it("takes DATABASE_URL over the DB_ variables, for the mariadb connection name too", function()
        local url = string.format("mariadb://luaworker:%s@127.0.0.1:%s/app", server.password,
            server.port)
        local out = run_lua([[print(require("luaworker").db("mariadb"):select("select 7 as seven")[1].seven)]],
            { DATABASE_URL = url, DB_HOST = "192.0.2.1", DB_PASSWORD = "not-this" })
        assert.are.equal("7\n", out)
    end)

    it("reaches the server on DB_SOCKET", function()
        local out = run_lua([[print(require("luaworker").db():select("select 8 as eight")[1].eight)]],
            { DB_SOCKET = server.socket, DB_HOST = "192.0.2.1" })
        assert.are.equal("8\n", out)
    end)

    it("runs a statement again on a new connection when the server ended the pooled one, "
        .. "outside a transaction only (DetectsLostConnections)", function()
        local out = run_lua([[
local db = require("luaworker").db()
local function kill(id)
    os.execute("mariadb --no-defaults -S ]] .. server.socket .. [[ -uroot -e 'kill " .. id .. "'")
end
local id = db:select("select connection_id() as c")[1].c
kill(id)
local r = db:select("select 2 as two, connection_id() as c")[1]
print(r.two, r.c ~= id)
db:statement("create table lost (n int)")
local ok, err = pcall(db.transaction, db, function(tx)
    tx:insert("insert into lost values (1)")
    kill(tx:select("select connection_id() as c")[1].c)
    tx:insert("insert into lost values (2)")
end)
print(ok, err.message:match("^SQLSTATE%[HY000%]: General error: 20%d%d") ~= nil)
print(#db:select("select * from lost"))
]])
        assert.are.equal("2\ttrue\nfalse\ttrue\n0\n", out)
    end)

    describe("in a worker with jobs in flight", function()
        local HANDLER = [[
local luaworker = require "luaworker"
return { handle = function(job, command)
    local r = luaworker.db():select("select connection_id() as c, sleep(?) as s", { command.seconds })
    luaworker.redis("RPUSH", "spec:done", r[1].c)
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

        local function start(args)
            local full = { "work", "--handlers=" .. H.handlers({ ["App/Jobs/Query.lua"] = HANDLER }),
                "--sleep=0.05" }
            for _, a in ipairs(args) do full[#full + 1] = a end
            -- failed jobs in luaworker's Redis store: these databases have no failed_jobs table
            return workers.spawn(full, { env = server.env({ QUEUE_FAILED_DRIVER = "luaworker-redis",
                LUAWORKER_DB_POOL = "50" }) })
        end

        it("runs 50 statements at once in one process, each on a connection of its own", function()
            for _ = 1, 50 do H.push(db_job(1)) end
            local w = start({ "--concurrency=50" })
            H.wait_until(function() return H.r("LLEN", "spec:done") == 50 end, 30, "the 50 jobs")
            local connections = {}
            for _, c in ipairs(H.r("LRANGE", "spec:done", 0, -1)) do connections[c] = true end
            local n = 0
            for _ in pairs(connections) do n = n + 1 end
            assert.are.equal(50, n)
            assert.are.equal(1, #H.children(w.pid))
            w:kill("TERM")
            assert.are.equal(0, w:wait())
        end)

        it("ends the statement of a job stopped for its timeout on the server too", function()
            H.push(db_job(60, { timeout = 1, failOnTimeout = true }))
            local w = start({ "--concurrency=2" })
            H.wait_until(function() return w:stderr():match("ran past its timeout of 1s; it was "
                .. "stopped where it waited; failed") end, 15, "the timeout")
            H.wait_until(function()
                return server.root("select count(*) from information_schema.processlist where "
                    .. "info like '%sleep(%'  and id <> connection_id()"):match("^0") ~= nil
            end, 3, "the statement to end")
            w:kill("TERM")
            assert.are.equal(0, w:wait())
            assert.is_nil(w:stderr():find("could not end", 1, true))
        end)
    end)
end)
