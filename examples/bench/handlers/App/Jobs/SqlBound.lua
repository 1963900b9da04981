-- App\Jobs\SqlBound: as the PHP class, inserts a row into bench_rows (the job's
-- uuid and a note) on the default database connection, reads it back by its uuid,
-- then INCRs <prefix>bench:sql.
local luaworker = require "luaworker"

return {
    handle = function(job)
        local db, uuid = luaworker.db(), job:uuid()
        db:insert("insert into bench_rows (uuid, note) values (?, ?)", { uuid, "written by a job" })
        local row = db:select("select id, uuid, note from bench_rows where uuid = ?", { uuid })[1]
        if not row or row.note ~= "written by a job" then
            error("row of job " .. uuid .. " not read back")
        end
        luaworker.redis("INCR", luaworker.prefix .. "bench:sql")
    end,
}
