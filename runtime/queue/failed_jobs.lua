-- luaworker.failed_jobs: the failed-job store, Laravel's "failer" (config/queue.php
-- 'failed'), chosen as the app chooses it, by QUEUE_FAILED_DRIVER:
--   database-uuids  the app's failed_jobs table, on the database connection
--                   DB_CONNECTION names (through luaworker.db), with rows as
--                   Laravel's DatabaseUuidFailedJobProvider writes them: uuid,
--                   connection, queue, payload, exception, failed_at; a record's id
--                   is its uuid (<uuid>-2, -3... when a row of another payload holds
--                   it; a payload recorded already is not recorded again). Laravel
--                   8's default.
--   database        the same without uuid (DatabaseFailedJobProvider): the id is
--                   the row's id.
--   null            failed jobs are not recorded (NullFailedJobProvider).
--   file            (10.10+; before, Laravel takes it for database) a JSON file,
--                   storage/framework/cache/failed-jobs.json beside --env-file
--                   (LUAWORKER_FAILED_PATH names another), the newest 100
--                   (LUAWORKER_FAILED_LIMIT) failed jobs (luaworker.failed_jobs_file).
--   luaworker-redis luaworker's own store in the queue connection's Redis (queue.lua).
-- Unset, it is database-uuids when DB_CONNECTION is set (an app's .env sets it),
-- else luaworker-redis. LUAWORKER_FAILED_TABLE names another table (config/queue.php's
-- 'table'). The `luaworker failed / retry / forget / flush` commands and the worker
-- use the same store, so `php artisan queue:failed / queue:retry` see jobs failed
-- in luaworker and the other way round.
--
-- A store: log(q, reserved_copy, record) records a failed job and removes its
-- reservation, the record first: a job is never without both (a database that is
-- down is waited out, the job kept reserved meanwhile); all() -> records, newest
-- first ({id, connection, queue, payload, exception, failed_at}); find(id);
-- forget(id) -> whether it was there; flush() -> how many went; retry(id, record,
-- now) pushes it back onto its queue (attempts 0, as queue:retry) and forgets it.
local queue = require "luaworker.queue"
local settings_of = require "luaworker.settings"

local M = {}

local function env(name)
    local v = os.getenv(name)
    if v == nil or v == "" then return nil end
    return v
end

M.DRIVERS = { ["database-uuids"] = true, database = true, null = true, ["luaworker-redis"] = true,
    file = true }

-- The driver and table the settings choose; raises naming QUEUE_FAILED_DRIVER when
-- it is not one luaworker has.
function M.settings()
    local driver = env("QUEUE_FAILED_DRIVER")
        or (env("DB_CONNECTION") and "database-uuids" or "luaworker-redis")
    if not M.DRIVERS[driver] then
        error("QUEUE_FAILED_DRIVER=" .. driver .. ": expected database-uuids, database, file, null or "
            .. "luaworker-redis", 0)
    end
    if driver == "file" and not settings_of.laravel_at_least(10, 10) then driver = "database" end
    local tbl = env("LUAWORKER_FAILED_TABLE") or "failed_jobs"
    if not tbl:match("^[%a_][%w_]*$") then
        error("LUAWORKER_FAILED_TABLE=" .. tbl .. ": expected a table name (letters, digits, _)", 0)
    end
    local s = { driver = driver, connection = env("DB_CONNECTION"), table = tbl }
    if driver == "file" then
        local dir = settings_of.app_dir()
        s.path = env("LUAWORKER_FAILED_PATH")
            or (dir and dir .. "/storage/framework/cache/failed-jobs.json")
        if not s.path then
            error("QUEUE_FAILED_DRIVER=file: the failed-jobs file is in the app's storage, found "
                .. "beside --env-file; give --env-file or LUAWORKER_FAILED_PATH", 0)
        end
        s.cache_dir = (dir or ".") .. "/storage/framework/cache/data"
        local limit = env("LUAWORKER_FAILED_LIMIT") or "100"
        s.limit = tonumber(limit:match("^%d+$") or "")
        if not s.limit or s.limit < 1 then
            error("LUAWORKER_FAILED_LIMIT=" .. limit .. ": expected a whole number of records, 1 or more", 0)
        end
    end
    return s
end

-- luaworker's Redis store ---------------------------------------------------------

local redis_store = { name = "luaworker-redis" }

function redis_store.log(q, reserved_copy, record) return queue.fail(q, reserved_copy, record) end
function redis_store.all() return queue.failed_records() end
function redis_store.find(id) return queue.failed_record(id) end
function redis_store.forget(id) return queue.forget(id) end
function redis_store.flush() return queue.flush() end
function redis_store.retry(id, record, now) return queue.retry(id, record.queue or "default", now) end

-- Laravel's null store ---------------------------------------------------------

local null_store = { name = "null" }

function null_store.log(q, reserved_copy) queue.delete_reserved(q, reserved_copy) end
function null_store.all() return {} end
function null_store.find() return nil end
function null_store.forget() return false end
function null_store.flush() return 0 end
function null_store.retry() return false end

-- Stores outside Redis ------------------------------------------------------------

-- store.log for a store whose record is written where a Redis script cannot reach
-- (the app's database, its file), from store.write(q, r, again) -> the record's id,
-- which writes r unless it is there (again: a try before may have written it), and
-- store.where / store.failing_where (what the log lines name). The record first,
-- then the reservation goes: while the write fails, the job stays reserved and the
-- write is tried again, 1 s, 2 s... 30 s apart, said once when it fails and once
-- when it is written. A worker that stops meanwhile raises: the job stays
-- reserved, failed again when it comes back.
local function logged_first(store)
    function store.log(q, reserved_copy, r)
        local output = require "luaworker.output"
        local tried = false
        local id = require("luaworker.db").wait_out(function()
            local again = tried
            tried = true
            return store.write(q, r, again)
        end, function() return true end, function(err)
            output.error("cannot record failed job " .. r.uuid .. " in " .. store.failing_where .. " ("
                .. tostring(err) .. "); the job stays reserved until it is recorded, tried again "
                .. "every 30 s at most")
        end, function()
            output.error("recorded failed job " .. r.uuid .. " in " .. store.where .. " after all")
        end)
        queue.delete_reserved(q, reserved_copy)
        return id
    end
    return store
end

-- The app's table ------------------------------------------------------------------

local function database_store(s)
    local uuids = s.driver == "database-uuids"
    local store = { name = s.driver }
    local id_column = uuids and "uuid" or "id"
    local function db() return require("luaworker").db(s.connection) end
    local tbl = s.table

    -- A row as a record: its id is the uuid for database-uuids (as the provider's
    -- all() and find() give it), else the row's id, as text.
    local function record(row)
        if not row then return nil end
        return { id = tostring(uuids and row.uuid or row.id), connection = row.connection,
            queue = row.queue, payload = row.payload, exception = row.exception,
            failed_at = row.failed_at }
    end

    -- The uuid to record r under: its own, or <uuid>-2, -3... when a row of another
    -- payload holds it (a record is never replaced, as in luaworker's Redis store);
    -- nil when a row of this payload is there already (written before a crash, or
    -- by an insert whose reply a dropped connection lost).
    local function free_uuid(r)
        local n, id = 1, r.uuid
        while true do
            local row = db():select("select payload from " .. tbl .. " where uuid = ?", { id })[1]
            if not row then return id end
            if row.payload == r.payload then return nil end
            n = n + 1
            id = r.uuid .. "-" .. n
        end
    end

    -- database: whether a row of this payload is there already (checked only after
    -- a failed insert: the payload has no index).
    local function written(r)
        return #db():select("select 1 as one from " .. tbl .. " where payload = ?", { r.payload }) > 0
    end

    -- Writes r's row unless it is there; returns its id (the uuid, or nil for database).
    local function insert(q, r, again)
        local failed_at = r.failed_at  -- the app's timezone, as Laravel's Date::now()
        if uuids then
            local id = free_uuid(r)
            if not id then return r.uuid end
            db():insert("insert into " .. tbl .. " (uuid, connection, queue, payload, exception, "
                .. "failed_at) values (?, ?, ?, ?, ?, ?)",
                { id, r.connection, q, r.payload, r.exception, failed_at })
            return id
        end
        if again and written(r) then return nil end
        db():insert("insert into " .. tbl .. " (connection, queue, payload, exception, "
            .. "failed_at) values (?, ?, ?, ?, ?)",
            { r.connection, q, r.payload, r.exception, failed_at })
        return nil
    end

    -- Writes r's row unless it is there (store.write, for logged_first).
    store.write = insert
    store.failing_where = tbl .. " on database connection " .. tostring(s.connection or "default")
    store.where = tbl

    function store.all()
        local records = {}
        for i, row in ipairs(db():select("select * from " .. tbl .. " order by id desc")) do
            records[i] = record(row)
        end
        return records
    end

    function store.find(id)
        return record(db():select("select * from " .. tbl .. " where " .. id_column .. " = ?",
            { id })[1])
    end

    function store.forget(id)
        return db():delete("delete from " .. tbl .. " where " .. id_column .. " = ?", { id }) > 0
    end

    function store.flush()
        return db():delete("delete from " .. tbl)
    end

    return store
end

local chosen

-- The store the settings choose (once per process).
function M.store()
    if chosen then return chosen end
    local s = M.settings()
    if s.driver == "luaworker-redis" then
        chosen = redis_store
    elseif s.driver == "null" then
        chosen = null_store
    elseif s.driver == "file" then
        chosen = logged_first(require("luaworker.failed_jobs_file").new(s))
    else
        chosen = logged_first(database_store(s))
    end
    if not chosen.retry then
        -- as queue:retry: the record's payload pushed back (attempts 0), then forgotten
        local store = chosen
        function store.retry(id, r, now)
            if not queue.retry_payload(id, r.payload, r.queue or "default", now) then return false end
            store.forget(id)
            return true
        end
    end
    return chosen
end

-- For specs and the commands: the store of the settings now.
function M.reset()
    chosen = nil
end

return M
