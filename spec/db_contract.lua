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
end
