-- luaworker.queue.database_queue: Laravel's database queue (Illuminate\Queue\DatabaseQueue,
-- the same from 8.83 to 13) over luaworker.db. Every job is a row of the app's jobs
-- table: id, queue, payload, attempts, reserved_at (null, or the Unix second of its
-- pop), available_at and created_at (Unix seconds). A row can be popped when
-- reserved_at is null and available_at has come, or when its reservation expired
-- (reserved_at <= now - retry_after). The payload text never changes: a job's
-- attempts live in its row (and its payload has no id and no attempts, as Laravel's
-- DatabaseQueue builds it; the row's id is the job's id).
--
-- The connection's settings, as Laravel 11+'s config/queue.php reads them (8.x's
-- config has the same values without the variables): DB_QUEUE_CONNECTION (else the
-- app's default database connection, DB_CONNECTION), DB_QUEUE_TABLE ("jobs"),
-- DB_QUEUE ("default"), DB_QUEUE_RETRY_AFTER (90).
local cjson = require "cjson"
local host = require "luaworker.host"
local db = require "luaworker.db"
local settings = require "luaworker.base.settings"

local M = {}

local env = settings.env

-- The settings of the app's database queue connection: {connection =, table =,
-- queue =, retry_after =}. Raises, naming the variable, for an empty table name or
-- a retry_after that is not a whole number of seconds. The table's name is any
-- Laravel takes ("schema.table" too): SQL quotes it (Db:wrap).
function M.settings()
    local tbl = db.table_name("DB_QUEUE_TABLE", "jobs")
    local retry_after = env("DB_QUEUE_RETRY_AFTER") or "90"
    if not retry_after:match("^%d+$") or #retry_after > 9 then
        error("DB_QUEUE_RETRY_AFTER=" .. retry_after .. ": expected a whole number of seconds", 0)
    end
    return { connection = env("DB_QUEUE_CONNECTION") or env("DB_CONNECTION"), table = tbl,
        queue = env("DB_QUEUE") or "default", retry_after = tonumber(retry_after) }
end

local Queue = {}
Queue.__index = Queue

-- The rows of a queue a pop can take (the header's rule), as a where clause and its
-- bindings: queue, now, now - retry_after.
local POPPABLE = "queue = ? and ((reserved_at is null and available_at <= ?) or (reserved_at <= ?))"

-- The queue over settings s (M.settings' shape).
function M.new(s)
    local d = db.connection(s.connection)
    return setmetatable({ db = d, table = s.table, quoted_table = d:wrap(s.table),
        retry_after = s.retry_after, default = s.queue, lock = nil }, Queue)
end

local default_queue

-- The queue over the app's settings (M.settings), made once per process. Raises as
-- M.settings does.
function M.default()
    default_queue = default_queue or M.new(M.settings())
    return default_queue
end

-- "1.2.3" -> whether it is at least major.minor.patch.
local function at_least(version, major, minor, patch)
    local a, b, c = version:match("^(%d+)%.?(%d*)%.?(%d*)")
    if not a then return false end
    local v = { tonumber(a), tonumber(b) or 0, tonumber(c) or 0 }
    local w = { major, minor, patch }
    for i = 1, 3 do
        if v[i] ~= w[i] then return v[i] > w[i] end
    end
    return true
end

-- DatabaseQueue::getLockForPopping: FOR UPDATE SKIP LOCKED on MySQL 8.0.1+, MariaDB
-- 10.6+ and PostgreSQL 9.5+, FOR UPDATE on older servers, none on SQLite (its
-- transactions take the whole database's write lock: BEGIN IMMEDIATE). Asked of the
-- server once.
function Queue:lock_clause()
    if self.lock then return self.lock end
    local name, skip = self.db.driver_name, false
    if name == "sqlite" then
        self.lock = ""
        return self.lock
    elseif name == "pgsql" then
        local v = self.db:select("select current_setting('server_version_num') as v")[1].v
        skip = (tonumber(v) or 0) >= 90500
    else
        local v = tostring(self.db:select("select version() as v")[1].v)
        if v:find("MariaDB", 1, true) then
            skip = at_least(v:gsub("^5%.5%.5%-", ""), 10, 6, 0)
        else
            skip = at_least(v, 8, 0, 1)
        end
    end
    self.lock = skip and " for update skip locked" or " for update"
    return self.lock
end

-- Inserts a job row; returns its id. In a transaction of its own, so that the id is
-- read on the connection that inserted it.
local function insert(self, q, payload, available_at, attempts)
    local now = host.now()
    local values = { q, attempts, available_at, now, payload }
    local sql = "insert into " .. self.quoted_table .. " (queue, attempts, reserved_at, available_at, "
        .. "created_at, payload) values (?, ?, null, ?, ?, ?)"
    return self.db:transaction(function(d)
        if d.driver_name == "pgsql" or d.driver_name == "sqlite" then
            return d:select(sql .. " returning id", values)[1].id
        end
        d:insert(sql, values)
        return d:select("select last_insert_id() as id")[1].id
    end)
end

-- Laravel's push / later: the payload as a new row of q, available after delay
-- seconds (0: now). Returns the row's id.
function Queue:push(q, payload, delay)
    return insert(self, q, payload, host.now() + (delay or 0), 0)
end

-- " in (?, ?, ...)" for n values.
local function in_list(n)
    return " in (?" .. string.rep(", ?", n - 1) .. ")"
end

-- Deletes the rows of ids (a list) on d, in up to 500 a statement.
local function delete_rows(self, d, ids)
    for first = 1, #ids, 500 do
        local batch = {}
        for i = first, math.min(#ids, first + 499) do batch[#batch + 1] = ids[i] end
        d:delete("delete from " .. self.quoted_table .. " where id" .. in_list(#batch), batch)
    end
end

-- Pops take at most this many rows at once.
M.POP_MOST = 100

-- The SQL of the length in bytes of column (SQLite's length() counts a text's
-- characters; MySQL's and MariaDB's counts bytes).
local function bytes_of(driver, column)
    if driver == "pgsql" then return "octet_length(" .. column .. ")" end
    if driver == "sqlite" then return "length(cast(" .. column .. " as blob))" end
    return "length(" .. column .. ")"
end

-- The columns a pop reads of column payload (qualified as the statement needs):
-- with max_bytes, its length as bytes, and the payload itself only when it is no
-- longer than a limit-th of max_bytes, so that the reply holds at most max_bytes
-- of payloads (the others are read once the pop has chosen: read_payloads).
local function payload_columns(driver, payload, max_bytes, limit)
    if not max_bytes then return payload .. " as payload" end
    local bytes = bytes_of(driver, payload)
    return string.format("%s as bytes, case when %s <= %d then %s end as payload", bytes, bytes,
        math.floor(max_bytes / limit), payload)
end

-- With max_bytes, the condition that keeps out of a pop a row whose payload is
-- longer than that (it stays as it is: M.oversized finds it).
local function fits(driver, max_bytes)
    if not max_bytes then return "" end
    return string.format(" and %s <= %d", bytes_of(driver, "payload"), max_bytes)
end

-- Of rows (by id, as popped), the first ones whose payloads together stay within
-- max_bytes (the first always), and the others.
local function within(rows, max_bytes)
    if not max_bytes then return rows, {} end
    local taken, others, total = {}, {}, 0
    for _, row in ipairs(rows) do
        local bytes = tonumber(row.bytes) or 0
        if #taken == 0 or (#others == 0 and total + bytes <= max_bytes) then
            taken[#taken + 1] = row
            total = total + bytes
        else
            others[#others + 1] = row
        end
    end
    return taken, others
end

-- Reads on d the payloads of rows that the pop's reply left out (payload_columns).
local function read_payloads(self, d, rows)
    local ids, by_id = {}, {}
    for _, row in ipairs(rows) do
        if type(row.payload) ~= "string" then
            ids[#ids + 1] = row.id
            by_id[tostring(row.id)] = row
        end
    end
    if #ids == 0 then return end
    local sql = "select id, payload from " .. self.quoted_table .. " where id" .. in_list(#ids)
    for _, r in ipairs(d:select(sql, ids)) do
        by_id[tostring(r.id)].payload = r.payload
    end
end

-- The records of rows (as popped), by id, reserved at reserved_at, their attempts
-- as their jobs count them (this one counted); held: counted in the record only,
-- not yet in the row (Queue:pop's hold).
local function records(q, rows, reserved_at, held)
    local list = {}
    for i, row in ipairs(rows) do
        list[i] = { id = row.id, queue = q, payload = row.payload, attempts = tonumber(row.attempts),
            reserved_at = reserved_at, bytes = tonumber(row.bytes), held = held or nil }
    end
    table.sort(list, function(a, b) return tonumber(a.id) < tonumber(b.id) end)
    return list
end

-- PostgreSQL's pop: the same transaction as one statement (its own, committed as it
-- ends), one round trip instead of five: the deletes, then the rows locked and
-- reserved, their attempts counted from the rows as locked. The parts of one
-- statement see the same rows: a row being deleted (a job that ran past
-- retry_after and ended) is kept out of the pop by name. Rows past max_bytes are
-- given back at once (unreserve), and payloads the reply left out read after it.
-- The rows are reserved at reserved_at; hold: their attempts not counted.
local function pop_in_one_statement(self, q, deletes, limit, lock, now, max_bytes, reserved_at, hold)
    local t, bindings, head, unlike = self.quoted_table, {}, "with ", ""
    if #deletes > 500 then
        -- (a statement's bindings are limited: many deletes go first, in batches)
        self:delete_many(deletes)
        deletes = {}
    end
    if #deletes > 0 then
        head = "with deleted as (delete from " .. t .. " where id" .. in_list(#deletes) .. " returning id), "
        unlike = " and id not in (select id from deleted)"
        for i, id in ipairs(deletes) do bindings[i] = id end
    end
    local n = #bindings
    bindings[n + 1], bindings[n + 2], bindings[n + 3], bindings[n + 4] = q, now, now - self.retry_after,
        reserved_at
    local charge = hold and "" or ", attempts = " .. t .. ".attempts + 1"
    local rows = self.db:select(head .. "next as (select id from " .. t
        .. " where " .. POPPABLE .. unlike .. fits("pgsql", max_bytes)
        .. " order by id asc limit " .. limit .. lock .. ") update " .. t
        .. " set reserved_at = ?" .. charge .. " from next where " .. t .. ".id = next.id "
        .. "returning " .. t .. ".id, " .. t .. ".attempts, "
        .. payload_columns("pgsql", t .. ".payload", max_bytes, limit), bindings)
    if hold then
        for _, row in ipairs(rows) do row.attempts = tonumber(row.attempts) + 1 end
    end
    local taken, others = within(records(q, rows, reserved_at, hold), max_bytes)
    if #others > 0 then self:unreserve(others) end
    read_payloads(self, self.db, taken)
    return taken
end

-- Laravel's pop, of up to limit jobs at once (1 by default; at most POP_MOST): in one
-- transaction, the first rows of q by id that can be popped, locked, then reserved
-- now with their attempts counted. Returns the jobs' records, by id, {id =, queue =,
-- payload =, attempts = (counting this one), reserved_at =}; none when q has none.
-- deletes (optional): ids of jobs that ended, deleted first in the same transaction
-- (Laravel's deleteReserved of each; one commit instead of two). max_bytes
-- (optional): the most bytes of payloads the pop takes (the first row always); a
-- row whose payload alone is longer is left as it is (M.oversized finds it).
-- reserved_at (optional): the reserved_at the rows get, instead of now (a lease's,
-- worker/database_leases.lua). hold (optional): the rows are held instead, their
-- attempts not counted in the rows (records' held: their attempts are one more
-- than their rows'), each counted as its job starts (Queue:start_statement), or
-- given back as they were (Queue:unreserve).
function Queue:pop(q, deletes, limit, max_bytes, reserved_at, hold)
    local lock = self:lock_clause()
    local now = host.now()
    deletes = deletes or {}
    limit = math.max(1, math.min(math.floor(limit or 1), M.POP_MOST))
    local driver = self.db.driver_name
    if driver == "pgsql" then
        return pop_in_one_statement(self, q, deletes, limit, lock, now, max_bytes, reserved_at or now, hold)
    end
    return self.db:transaction(function(d)
        if #deletes > 0 then delete_rows(self, d, deletes) end
        local rows = d:select("select id, attempts, " .. payload_columns(driver, "payload", max_bytes, limit)
            .. " from " .. self.quoted_table .. " where " .. POPPABLE .. fits(driver, max_bytes)
            .. " order by id asc limit " .. limit .. lock,
            { q, now, now - self.retry_after })
        if #rows == 0 then return {} end
        rows = within(rows, max_bytes)
        read_payloads(self, d, rows)
        local ids = { reserved_at or now }
        for i, row in ipairs(rows) do
            ids[i + 1] = row.id
            row.attempts = (tonumber(row.attempts) or 0) + 1
        end
        d:update("update " .. self.quoted_table .. " set reserved_at = ?"
            .. (hold and "" or ", attempts = attempts + 1") .. " where id" .. in_list(#rows), ids)
        return records(q, rows, reserved_at or now, hold)
    end)
end

-- The rows of q a pop could take but for their payloads, longer than max_bytes: up
-- to 10, by id, {id =, bytes =}.
function Queue:oversized(q, max_bytes)
    local now = host.now()
    local bytes = bytes_of(self.db.driver_name, "payload")
    local rows = self.db:select("select id, " .. bytes .. " as bytes from " .. self.quoted_table
        .. " where " .. POPPABLE .. " and " .. bytes .. " > ? order by id asc limit 10",
        { q, now, now - self.retry_after, max_bytes })
    for i, row in ipairs(rows) do rows[i] = { id = row.id, bytes = tonumber(row.bytes) } end
    return rows
end

-- Gives back jobs popped that did not start (records as pop returned them): each
-- row is available again, its attempt uncounted (a held one's was not counted),
-- unless it was popped again since (its reservation expired; a held row's
-- reservation may have been renewed since its pop: its attempts tell it).
function Queue:unreserve(list)
    if #list == 0 then return end
    self.db:transaction(function(d)
        for _, r in ipairs(list) do
            if r.held then
                d:update("update " .. self.quoted_table .. " set reserved_at = null where id = ? "
                    .. "and attempts = ? and reserved_at is not null", { r.id, r.attempts - 1 })
            else
                d:update("update " .. self.quoted_table .. " set reserved_at = null, attempts = attempts - 1 "
                    .. "where id = ? and reserved_at = ? and attempts = ?", { r.id, r.reserved_at, r.attempts })
            end
        end
    end)
end

-- v, a row's id or attempts, as the digits of a statement's text; raises for
-- anything else.
local function digits_of(v)
    local text = type(v) == "number" and string.format("%d", v) or tostring(v)
    if not text:match("^%d+$") then error("not a row's number: " .. text, 2) end
    return text
end

-- The start of a held job (record, as a pop that held it returned it): the statement
-- that counts its attempt and reserves it at reserved_at, while its row is still
-- held as its pop made it (the same attempts, reserved); on PostgreSQL with the
-- deletes of deletes (ids) in it, one commit. Its text has no bindings (its numbers
-- in it), so that the driver sends it whole at once, as the caller then runs the
-- job without waiting for its reply. It changes one row, or none when the row is
-- no longer held (gone, or popped again once its reservation expired).
function Queue:start_statement(record, reserved_at, deletes)
    local t = self.quoted_table
    local head = ""
    if deletes and #deletes > 0 and self.db.driver_name == "pgsql" then
        local ids = {}
        for i, id in ipairs(deletes) do ids[i] = digits_of(id) end
        head = "with deleted as (delete from " .. t .. " where id in (" .. table.concat(ids, ", ") .. ")) "
    end
    return head .. "update " .. t .. " set attempts = attempts + 1, reserved_at = " .. digits_of(reserved_at)
        .. " where id = " .. digits_of(record.id) .. " and attempts = " .. digits_of(record.attempts - 1)
        .. " and reserved_at is not null"
end

-- Whether a start statement carries deletes (Queue:start_statement).
function Queue:starts_carry_deletes()
    return self.db.driver_name == "pgsql"
end

-- The attempts of row id while it is reserved, or nil (gone, or not reserved).
function Queue:reserved_attempts(id)
    local row = self.db:select("select attempts from " .. self.quoted_table
        .. " where id = ? and reserved_at is not null", { id })[1]
    return row and tonumber(row.attempts) or nil
end

-- The record of the reserved row id (as pop returned it), or nil when the row is
-- gone or not reserved.
function Queue:reserved(id)
    local row = self.db:select("select id, queue, payload, attempts, reserved_at from " .. self.quoted_table
        .. " where id = ? and reserved_at is not null", { id })[1]
    if not row then return nil end
    return { id = row.id, queue = row.queue, payload = row.payload, attempts = tonumber(row.attempts),
        reserved_at = tonumber(row.reserved_at) }
end

-- Laravel's deleteReserved: the job's row goes. Returns whether it was there.
function Queue:delete_reserved(_, id)
    return self.db:delete("delete from " .. self.quoted_table .. " where id = ?", { id }) > 0
end

-- deleteReserved of each of ids (a list), in one transaction.
function Queue:delete_many(ids)
    self.db:transaction(function(d) delete_rows(self, d, ids) end)
end

-- Laravel's deleteAndRelease: in one transaction the job's row goes and the job comes
-- back as a new row (a new id) with its attempts so far, available after delay
-- seconds. Returns the new row's id, or nil when the row was no longer this
-- worker's to release: gone (a call before committed, its reply lost with the
-- connection; or the job was deleted) or reserved again since (its reservation
-- expired and another worker took it). Laravel deletes the row by its id whatever
-- its reservation, and the job would then run twice.
function Queue:release(q, record, delay, keep_attempts)
    return self.db:transaction(function(d)
        -- (this worker's reservation: its pop's attempts, whatever its lease made of
        -- reserved_at; a later pop counts one more)
        local deleted = d:delete("delete from " .. self.quoted_table .. " where id = ? and attempts = ? "
            .. "and reserved_at is not null", { record.id, record.attempts })
        if deleted == 0 then return nil end
        return insert(self, q, record.payload, host.now() + (delay or 0),
            keep_attempts and record.attempts - 1 or record.attempts)
    end)
end

-- The renewal of a job in flight's reservation (worker/database_lease_keeper.h),
-- in four parts around its numbers: the new reserved_at, the row's id, the attempts
-- its pop counted (a list: a held job's start, sent, counts one more). It matches
-- the row only while it holds that pop's reservation: any later pop, PHP's or
-- luaworker's, counts one attempt more.
function Queue:lease_statement()
    return { "update " .. self.quoted_table .. " set reserved_at = ", " where id = ",
        " and attempts in (", ") and reserved_at is not null" }
end

-- Ends the reservation of a job that no longer runs (record as pop returned it),
-- unless the row is gone or was reserved again since: it expires at once, so that
-- the next pop of any worker takes it, the attempt it used counted.
function Queue:expire_reservation(record, now)
    self.db:update("update " .. self.quoted_table .. " set reserved_at = ? where id = ? and attempts = ? "
        .. "and reserved_at is not null", { now - self.retry_after, record.id, record.attempts })
end

-- queue:retry onto this queue: a failed job's payload (the text its record keeps)
-- pushed back as a new row of q, attempts 0; a retryUntil already past set to null
-- (Laravel recomputes it by calling the job's retryUntil(), which luaworker cannot),
-- every other byte as it was (a database payload has no attempts to reset). Raises
-- when the payload is not a JSON object. Returns the row's id.
function Queue:retry(id, q, payload, now)
    local ok, decoded = pcall(cjson.decode, payload)
    if not ok or type(decoded) ~= "table" or not payload:match("^%s*{") then
        error("failed job " .. tostring(id) .. " has a payload that is not a JSON object; fix it or "
            .. "forget it", 0)
    end
    if type(decoded.retryUntil) == "number" and decoded.retryUntil < now then
        -- the payload's own key: a "retryUntil" inside a string is escaped (\")
        payload = payload:gsub('([{,]%s*"retryUntil"%s*:%s*)%-?[%d.eE+-]+', "%1null", 1)
    end
    return self:push(q, payload, 0)
end

-- A query of this queue's table that reads none of its rows: raises when the table
-- or one of the columns Laravel's DatabaseQueue uses is missing.
function Queue:check()
    self.db:select("select id, queue, payload, attempts, reserved_at, available_at, created_at from "
        .. self.quoted_table .. " where 1 = 0")
end

-- PostgreSQL plans a pop from the table's statistics. A table never analyzed gets
-- default estimates, under which a pop of more than one row, or one with a size
-- limit, sorts every row of the queue instead of walking the primary key (14 ms a
-- pop at 20,000 rows, against 0.1); autovacuum analyzes a table in use, but only
-- within about a minute of its first changes, and not at all where it is turned
-- off. So a table without statistics is analyzed, as autovacuum would, when this
-- connection's user owns it (another user's ANALYZE would be skipped). Returns
-- whether it was. Other drivers: nothing to do.
function Queue:gather_statistics()
    if self.db.driver_name ~= "pgsql" then return false end
    local r = self.db:select("select c.reltuples < 0 or c.relpages = 0 as never, "
        .. "pg_has_role(c.relowner, 'MEMBER') as owned from pg_class c where c.oid = to_regclass(?)",
        { self.quoted_table })[1]
    if not (r and r.never and r.owned) then return false end
    self.db:statement("analyze " .. self.quoted_table)
    return true
end

-- The jobs of q: total, pending (available now), delayed, reserved (as 12.x's
-- pendingSize, delayedSize and reservedSize count them).
function Queue:size(q)
    local now = host.now()
    local r = self.db:select("select count(*) as total, "
        .. "coalesce(sum(case when reserved_at is null and available_at <= ? then 1 else 0 end), 0) as pending_jobs, "
        .. "coalesce(sum(case when reserved_at is null and available_at > ? then 1 else 0 end), 0) as delayed_jobs, "
        .. "coalesce(sum(case when reserved_at is not null then 1 else 0 end), 0) as reserved_jobs "
        .. "from " .. self.quoted_table .. " where queue = ?", { now, now, q })[1]
    -- (MySQL reserves the word "delayed")
    return tonumber(r.total), tonumber(r.pending_jobs), tonumber(r.delayed_jobs), tonumber(r.reserved_jobs)
end

-- The available_at of q's oldest waiting row (due, not reserved) at now, or nil.
function Queue:oldest_pending_at(q, now)
    local r = self.db:select("select min(available_at) as at from " .. self.quoted_table
        .. " where queue = ? and reserved_at is null and available_at <= ?", { q, now })[1]
    return r and tonumber(r.at) or nil
end

-- For `luaworker peek`: count rows of q in state ("pending": available now,
-- "delayed", "reserved") from the offset-th on, in the order peek shows them
-- (pending by id, delayed by when due, reserved by when reserved), as {id =,
-- payload =, attempts =, due = available_at, or when the reservation expires
-- (reserved_at + retry_after), created_at =}, now the Unix second that tells pending
-- from delayed. Reads only.
local PEEK_WHERE = {
    pending = { "reserved_at is null and available_at <= ?", "id" },
    delayed = { "reserved_at is null and available_at > ?", "available_at, id" },
    reserved = { "reserved_at is not null", "reserved_at, id" },
}

function Queue:peek(q, state, offset, count, now)
    local where, order = PEEK_WHERE[state][1], PEEK_WHERE[state][2]
    local params = state == "reserved" and { q } or { q, now }
    local rows = self.db:select(string.format("select id, payload, attempts, reserved_at, available_at, "
        .. "created_at from %s where queue = ? and %s order by %s limit %d offset %d", self.quoted_table,
        where, order, count, offset), params)
    local list = {}
    for i, row in ipairs(rows) do
        list[i] = { id = tostring(row.id), payload = row.payload, attempts = tonumber(row.attempts),
            due = state == "reserved" and tonumber(row.reserved_at) + self.retry_after
                or tonumber(row.available_at),
            created_at = tonumber(row.created_at) }
    end
    return list
end

-- Laravel's clear: every row of q goes. Returns how many.
function Queue:clear(q)
    return self.db:delete("delete from " .. self.quoted_table .. " where queue = ?", { q })
end

return M
