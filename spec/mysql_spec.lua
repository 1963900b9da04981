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

    it("drains every result of a CALL, with and without bindings: the first result's rows, the "
        .. "connection ready for the next statement", function()
        local out = run_lua([[
local db = require("luaworker").db()
db:statement("create table t_call (id int primary key, n int)")
db:insert("insert into t_call values (1, 10), (2, 20), (3, 30)")
db:statement("create procedure t_call_pick(in least int) begin "
    .. "select id, n from t_call where n >= least order by id; select 'more' as second; end")
db:statement("create procedure t_call_bump(in by_n int) begin update t_call set n = n + by_n; end")
local id = db:select("select connection_id() as c")[1].c
local function show(rows)
    local t = {}
    for _, r in ipairs(rows) do t[#t + 1] = r.id .. "=" .. r.n end
    return table.concat(t, ",")
end
print(show(db:select("call t_call_pick(15)")), db:select("select 1 as one")[1].one)
print(show(db:select("call t_call_pick(?)", { 25 })), db:select("select ? as two", { 2 })[1].two)
print(db:update("call t_call_bump(1)"), db:select("select sum(n) as s from t_call")[1].s)
print(db:update("call t_call_bump(?)", { 1 }), db:select("select sum(n) as s from t_call")[1].s)
print(db:select("select connection_id() as c")[1].c == id)
]])
        assert.are.equal("2=20,3=30\t1\n3=30\t2\n3\t63\n3\t66\ntrue\n", out)
    end)

    it("raises the error of a CALL's later result as the statement's, the connection kept", function()
        local out = run_lua([[
local db = require("luaworker").db()
db:statement("create procedure t_call_broken(in n int) begin select n as first; "
    .. "select * from t_call_nope; end")
local id = db:select("select connection_id() as c")[1].c
for _, call in ipairs({ { "call t_call_broken(1)" }, { "call t_call_broken(?)", { 1 } } }) do
    local ok, err = pcall(db.select, db, call[1], call[2])
    print(ok, err.message)
    print(db:select("select 3 as three")[1].three, db:select("select connection_id() as c")[1].c == id)
end
]])
        local function failed(sql)
            return "false\tSQLSTATE[42S02]: Base table or view not found: 1146 Table 'app.t_call_nope' "
                .. "doesn't exist (SQL: " .. sql .. ")\n3\ttrue\n"
        end
        assert.are.equal(failed("call t_call_broken(1)") .. failed("call t_call_broken(?)"), out)
    end)

    it("keeps a job's statements on its one connection, as PHP's worker does, and closes it when "
        .. "the job ends with a transaction open, rolling it back", function()
        local file = H.tmpdir() .. "/script.lua"
        H.write_file(file, [[
local db = require("luaworker").db()
db:statement("create table left_open (n int)")
db:statement("begin")
db:insert("insert into left_open values (1)")
print(#db:select("select * from left_open"), db:select("select connection_id() as c")[1].c
    == db:select("select connection_id() as c")[1].c)
]])
        local r = H.run({ "lua", file }, { env = server.env() })
        assert.are.equal(0, r.status, r.stderr)
        -- the insert ran in the job's transaction, on its one connection
        assert.are.equal("1\ttrue\n", r.stdout)
        assert.matches("luaworker.db: a job ended with a transaction open on connection mysql (a BEGIN "
            .. "without its COMMIT): the connection is closed, and the transaction rolled back with it",
            r.stderr, 1, true)
        assert.are.equal("0\n", run_lua([[print(#require("luaworker").db():select("select * from left_open"))]]))
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
        -- Runs command.sql (with command.binding when it has one) and records its first row's v.
        local SQL_HANDLER = [[
local luaworker = require "luaworker"
return { handle = function(job, command)
    local rows = luaworker.db():select(command.sql, { command.binding })
    luaworker.redis("RPUSH", "spec:done", tostring(rows[1].v))
end }
]]
        local function sql_job(sql, binding, fields)
            local properties = { { "sql", string.format('s:%d:"%s";', #sql, sql) } }
            if binding then
                properties[2] = { "binding", string.format('s:%d:"%s";', #binding, binding) }
            end
            return H.class_payload("App\\Jobs\\Sql", fields, properties)
        end
        -- 100 distinct rows of 1 MB (LuaJIT interns equal strings), without and with a
        -- binding; each time a select on the same connection after.
        local BIG_HANDLER = [[
local luaworker = require "luaworker"
local BIG = "select concat(seq, repeat('x', 1000000)) as v from seq_1_to_100"
return { handle = function(job, command)
    local db = luaworker.db()
    local id = db:select("select connection_id() as c")[1].c
    for _, call in ipairs({ { BIG }, { BIG .. " where seq > ?", { 0 } } }) do
        local ok, err = pcall(db.select, db, call[1], call[2])
        luaworker.redis("RPUSH", "spec:big", tostring(ok), tostring(err.class), tostring(err.message),
            db:select("select connection_id() as c")[1].c == id and "same connection" or "another")
    end
end }
]]
        -- 30 rows of 1 MB after 40 MB of garbage the collector has not seen: they fit
        -- under --memory-limit=64 only after a full collection.
        local FITS_HANDLER = [[
local luaworker = require "luaworker"
local SQL = "select concat(seq, repeat('x', 1000000)) as v from seq_1_to_30"
return { handle = function(job, command)
    local db = luaworker.db()
    for _, call in ipairs({ { SQL }, { SQL .. " where seq > ?", { 0 } } }) do
        collectgarbage()
        collectgarbage("stop")
        local garbage = {}
        for i = 1, 40 do garbage[i] = string.rep("y", 1000000) .. i end
        garbage = nil
        local rows = db:select(call[1], call[2])
        collectgarbage("restart")
        luaworker.redis("RPUSH", "spec:fits", #rows .. " " .. rows[1].v:sub(1, 2) .. " "
            .. rows[#rows].v:sub(1, 3))
        rows = nil
    end
end }
]]
        local workers = H.worker_set()
        after_each(workers.stop_all)
        before_each(function() H.flush() end)

        local function start(args)
            local full = { "work", "--handlers=" .. H.handlers({ ["App/Jobs/Query.lua"] = HANDLER,
                ["App/Jobs/Sql.lua"] = SQL_HANDLER, ["App/Jobs/Big.lua"] = BIG_HANDLER,
                ["App/Jobs/Fits.lua"] = FITS_HANDLER }),
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

        it("leaves the connection of a job that CALLed a procedure ready for the next job", function()
            server.root("create procedure t_job_pick() select connection_id() as v")
            H.push(sql_job("call t_job_pick()"))
            H.push(sql_job("select connection_id() as v"))
            H.push(sql_job("call t_job_pick()"))
            H.push(sql_job("select ? as v", "selected"))
            local w = start({ "--concurrency=1" })
            H.wait_until(function() return H.r("LLEN", "spec:done") == 4 or w:stdout():match("Failed:") end,
                15, "the 4 jobs")
            local done = H.r("LRANGE", "spec:done", 0, -1)
            assert.are.same({ done[1], done[1], done[1], "selected" }, done, w:stdout() .. w:stderr())
            w:kill("TERM")
            assert.are.equal(0, w:wait())
        end)

        it("fails only the statement whose result does not fit under --memory-limit, with or "
            .. "without bindings: the same connection goes on in the same process", function()
            H.push(H.class_payload("App\\Jobs\\Big"))
            H.push(sql_job("select ? as v", "next job"))
            local w = start({ "--concurrency=1", "--memory-limit=64" })
            H.wait_until(function() return H.r("LLEN", "spec:done") == 1 or w:stdout():match("Failed:") end,
                60, "the 2 jobs")
            local big = H.r("LRANGE", "spec:big", 0, -1)
            assert.are.equal(8, #big, w:stdout() .. w:stderr())
            for i, sql in ipairs({ "select concat%(seq, repeat%('x', 1000000%)%) as v from seq_1_to_100",
                "select concat%(seq, repeat%('x', 1000000%)%) as v from seq_1_to_100 where seq > %?" }) do
                local at = (i - 1) * 4
                assert.are.equal("false", big[at + 1])
                assert.are.equal("Illuminate\\Database\\QueryException", big[at + 2])
                assert.matches("^a result of more than [%d.]+ MB does not fit under %-%-memory%-limit=64 "
                    .. "%(MB; the worker's Lua heap holds [%d.]+ MB%) %(SQL: " .. sql .. "%)$", big[at + 3])
                assert.are.equal("same connection", big[at + 4])
            end
            assert.are.same({ "next job" }, H.r("LRANGE", "spec:done", 0, -1))
            assert.is_nil(w:stderr():find("internal error", 1, true))
            w:kill("TERM")
            assert.are.equal(0, w:wait())
        end)

        it("ends on the server too the CALL of a job stopped for its timeout while a later result "
            .. "was read", function()
            run_lua([[require("luaworker").db():statement("create procedure t_job_slow(in s int) "
    .. "begin select 'first' as v; select sleep(s) as slept; end")]])
            H.push(sql_job("call t_job_slow(?)", "60", { timeout = 1, failOnTimeout = true }))
            H.push(sql_job("select ? as v", "after"))
            local w = start({ "--concurrency=1" })
            H.wait_until(function() return H.r("LLEN", "spec:done") == 1 end, 15, "the second job")
            assert.matches("ran past its timeout of 1s; it was stopped where it waited; failed", w:stderr())
            assert.are.same({ "after" }, H.r("LRANGE", "spec:done", 0, -1))
            H.wait_until(function()
                return server.root("select count(*) from information_schema.processlist where "
                    .. "info like '%sleep(%' and id <> connection_id()"):match("^0") ~= nil
            end, 3, "the statement to end")
            w:kill("TERM")
            assert.are.equal(0, w:wait())
            assert.is_nil(w:stderr():find("could not end", 1, true))
        end)

        it("hands over every row of a result that fits under --memory-limit only after a full "
            .. "collection, with and without bindings", function()
            H.push(H.class_payload("App\\Jobs\\Fits"))
            local w = start({ "--concurrency=1", "--memory-limit=64" })
            H.wait_until(function() return H.r("LLEN", "spec:fits") == 2 or w:stdout():match("Failed:") end,
                30, "the job")
            assert.are.same({ "30 1x 30x", "30 1x 30x" }, H.r("LRANGE", "spec:fits", 0, -1),
                w:stdout() .. w:stderr())
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
