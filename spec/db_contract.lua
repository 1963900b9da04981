-- What luaworker.db does alike on every server: spec/db_spec.lua (PostgreSQL) and
-- spec/mysql_spec.lua (MariaDB) call it inside their describe, with busted's `it` and
-- `assert` of their file. run_lua(source) runs a script inside luaworker with the
-- server's settings and returns its output; session_id is the SQL expression of the
-- connection's id on the server.
return function(it, assert, run_lua, session_id)
    it("returns the rows affected by update and delete", function()
        local out = run_lua([[
local db = require("luaworker").db()
db:statement("create table t3 (n int)")
for i = 1, 5 do db:insert("insert into t3 values (?)", { i }) end
print(db:update("update t3 set n = n + 10 where n > ?", { 2 }), db:delete("delete from t3 where n > ?", { 12 }))
]])
        assert.are.equal("3\t3\n", out)
    end)

    it("quotes a name as Laravel's grammar for its driver wraps it (wrap)", function()
        local out = run_lua([[
local db = require("luaworker").db()
local name = db:wrap('Select "me`')
db:statement("create table " .. name .. " (n int)")
db:insert("insert into " .. name .. " values (?)", { 7 })
print(db:select("select n from " .. name)[1].n, db:wrap("s.Jobs"), pcall(db.wrap, db, ""))
]])
        assert.is_truthy(out == '7\t"s"."Jobs"\tfalse\tluaworker.db: wrap(name): expected a table or column name, got \n'
            or out == "7\t`s`.`Jobs`\tfalse\tluaworker.db: wrap(name): expected a table or column name, got \n", out)
    end)

    it("commits a transaction, rolls it back when fn raises and raises again, on one connection", function()
        local out = run_lua(([[
local db = require("luaworker").db()
db:statement("create table t4 (v text)")
print(db:transaction(function(d)
    d:insert("insert into t4 values (?)", { "kept" })
    return d:select("select SESSION_ID as c")[1].c == d:select("select SESSION_ID as c")[1].c
end))
local ok, err = pcall(db.transaction, db, function(d)
    d:insert("insert into t4 values (?)", { "gone" })
    error("boom", 0)
end)
print(ok, err)
for _, r in ipairs(db:select("select v from t4")) do print(r.v) end
]]):gsub("SESSION_ID", session_id), nil)
        assert.are.equal("true\nfalse\tboom\nkept\n", out)
    end)

    it("binds floats as PHP's (string) cast gives them (precision 14) and booleans as 1 and 0, "
        .. "as Laravel and PDO", function()
        local out = run_lua([[
local db = require("luaworker").db()
db:statement("create table t15 (n int, s varchar(64))")
local values = { 0.1, 1 / 3, 1e25, -1.5e-7, 2.5, 7, true, false }
for i, v in ipairs(values) do db:insert("insert into t15 values (?, ?)", { i, v }) end
for _, r in ipairs(db:select("select s from t15 order by n")) do print(r.s) end
]])
        assert.are.equal("0.1\n0.33333333333333\n1.0E+25\n-1.5E-7\n2.5\n7\n1\n0\n", out)
    end)

    it("raises SQLSTATE[HY093] for too few or too many bindings, as PDO, and runs nothing", function()
        local out = run_lua([[
local db = require("luaworker").db()
db:statement("create table t16 (n int, tag varchar(10))")
db:insert("insert into t16 values (?, ?)", { 1, "a" })
for _, b in ipairs({ { 5 }, { 5, "a", 6 }, {} }) do
    local ok, err = pcall(db.update, db, "update t16 set n = ? where tag = ?", b)
    print(ok, err.class, err.message)
end
print(db:select("select n from t16")[1].n)
-- a ? inside quotes or a comment is no placeholder
print(#db:select("select '?' as q -- ?\n where 1 = ?", { 1 }))
]])
        assert.are.equal("false\tIlluminate\\Database\\QueryException\tSQLSTATE[HY093]: Invalid parameter "
            .. "number: number of bound variables does not match number of tokens (1 bound, 2 expected; a NULL "
            .. "is luaworker.null, not nil) (SQL: update t16 set n = ? where tag = ?)\n"
            .. "false\tIlluminate\\Database\\QueryException\tSQLSTATE[HY093]: Invalid parameter "
            .. "number: number of bound variables does not match number of tokens (3 bound, 2 expected; a NULL "
            .. "is luaworker.null, not nil) (SQL: update t16 set n = ? where tag = ?)\n"
            .. "false\tIlluminate\\Database\\QueryException\tSQLSTATE[HY093]: Invalid parameter "
            .. "number: number of bound variables does not match number of tokens (0 bound, 2 expected; a NULL "
            .. "is luaworker.null, not nil) (SQL: update t16 set n = ? where tag = ?)\n1\n1\n", out)
    end)

    it("nests transactions as Laravel does: a savepoint each, an inner error undoing only its part",
        function()
        local out = run_lua([[
local db = require("luaworker").db()
db:statement("create table t17 (v varchar(10))")
print(db:transaction(function(tx)
    tx:insert("insert into t17 values (?)", { "a" })
    print(pcall(tx.transaction, tx, function(inner)
        inner:insert("insert into t17 values (?)", { "b" })
        error("inner", 0)
    end))
    print(tx:transaction(function(inner)
        inner:insert("insert into t17 values (?)", { "c" })
        return inner:transaction(function(deepest)
            deepest:insert("insert into t17 values (?)", { "d" })
            return "deep"
        end)
    end))
    return "outer"
end))
for _, r in ipairs(db:select("select v from t17 order by v")) do io.write(r.v, " ") end
print()
print(pcall(db.transaction, db, function(tx)
    tx:insert("insert into t17 values (?)", { "e" })
    tx:transaction(function(inner) inner:insert("insert into t17 values (?)", { "f" }) end)
    error("outer", 0)
end))
print(#db:select("select v from t17"))
]])
        assert.are.equal("false\tinner\ndeep\nouter\na c d \nfalse\touter\n3\n", out)
    end)
end
