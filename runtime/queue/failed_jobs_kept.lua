-- luaworker.queue.failed_jobs_kept: luaworker's failed-job store in the database queue's
-- own jobs table (QUEUE_FAILED_DRIVER=luaworker-database), where a job of the
-- database queue is kept when the app's store refuses its record for good (its
-- table dropped, a permission), as luaworker's Redis store keeps a job of the Redis
-- queue: the queue's own store, which an app without Redis has too.
--
-- A kept job is a row of the jobs table (DB_QUEUE_TABLE) on the queue KEPT_QUEUE,
-- never available (available_at NEVER, reserved_at null: no pop of any worker,
-- PHP's included, takes it), whose payload column holds the record as JSON,
-- {"luaworker:failed": {uuid, connection, queue, payload, exception, failed_at}}, the
-- job's payload in it byte for byte. A record's id is its row's id. A job of the
-- database queue is kept in place (its reserved row becomes the kept one, in one
-- statement); another is kept in a new row.
local cjson = require "cjson"
local host = require "luaworker.host"
local queue = require "luaworker.queue"
local database_queue = require "luaworker.queue.database_queue"

local M = {}

M.KEPT_QUEUE = "luaworker:failed"
local NEVER = 2147483647  -- the largest available_at every server's column holds
local KEY = "luaworker:failed"

local FIELDS = { "uuid", "connection", "queue", "payload", "exception", "failed_at" }

-- The record of a failed job of queue q as the kept row's payload.
local function encoded(q, record)
    local r = {}
    for _, k in ipairs(FIELDS) do r[k] = record[k] end
    r.queue = q
    return cjson.encode({ [KEY] = r })
end

-- A kept row as a record ({id, uuid, connection, queue, payload, exception,
-- failed_at}), or nil for a row on that queue that is not one of luaworker's.
local function record_of(row)
    local ok, decoded = pcall(cjson.decode, row.payload)
    local r = ok and type(decoded) == "table" and decoded[KEY]
    if type(r) ~= "table" then return nil end
    local record = { id = tostring(row.id) }
    for _, k in ipairs(FIELDS) do
        record[k] = type(r[k]) == "string" and r[k] or nil
    end
    return record
end

-- Keeps record (a failed job's, of queue q) in a new row of jobs (a database_queue).
local function insert(jobs, q, record)
    jobs.db:insert("insert into " .. jobs.quoted_table .. " (queue, attempts, reserved_at, available_at, "
        .. "created_at, payload) values (?, 0, null, ?, ?, ?)",
        { M.KEPT_QUEUE, NEVER, host.now(), encoded(q, record) })
end

-- Keeps record (a failed job's, of queue q) in the row id of jobs (a database_queue),
-- the job's reserved row, in one statement; in a new row when that row is gone (another
-- worker took the job once its reservation expired: the record is kept all the
-- same).
function M.keep(jobs, id, q, record)
    local kept = jobs.db:update("update " .. jobs.quoted_table .. " set queue = ?, payload = ?, reserved_at = "
        .. "null, available_at = ? where id = ?", { M.KEPT_QUEUE, encoded(q, record), NEVER, id }) > 0
    if not kept then insert(jobs, q, record) end
end

-- Where a kept job is, as the log lines say it.
function M.where(jobs)
    return "table " .. jobs.table .. " (queue " .. M.KEPT_QUEUE .. ")"
end

-- The store (failed_jobs.lua's shape) over the app's database queue. log(q,
-- reserved_copy, record, removal): kept in place when removal can (keep_kept), else
-- in a new row, then the reservation removed.
function M.store()
    local store = { name = "luaworker-database" }
    local function jobs() return database_queue.default() end
    local function select_kept(where, bindings)
        local j = jobs()
        return j.db:select("select id, payload from " .. j.quoted_table .. " where queue = ?" .. where,
            bindings)
    end

    function store.log(q, reserved_copy, record, removal)
        if removal and removal.keep_kept then return removal.keep_kept(q, reserved_copy, record) end
        insert(jobs(), q, record)
        removal = removal or queue
        removal.delete_reserved(q, reserved_copy)
    end

    function store.all()
        local records = {}
        for _, row in ipairs(select_kept(" order by id desc", { M.KEPT_QUEUE })) do
            records[#records + 1] = record_of(row)
        end
        return records
    end

    function store.find(id)
        local row = select_kept(" and id = ?", { M.KEPT_QUEUE, tonumber(id) or -1 })[1]
        return row and record_of(row)
    end

    function store.forget(id)
        local j = jobs()
        return j.db:delete("delete from " .. j.quoted_table .. " where queue = ? and id = ?",
            { M.KEPT_QUEUE, tonumber(id) or -1 }) > 0
    end

    function store.flush()
        local j = jobs()
        return j.db:delete("delete from " .. j.quoted_table .. " where queue = ?", { M.KEPT_QUEUE })
    end

    return store
end

return M
