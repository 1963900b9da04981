-- luaworker.queue.failed_jobs: the failed-job store, Laravel's "failer" (config/queue.php
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
--   luaworker-database luaworker's own store in the database queue's jobs table
--                   (luaworker.queue.failed_jobs_kept).
-- Unset, it is database-uuids when DB_CONNECTION is set (an app's .env sets it),
-- else luaworker-redis. LUAWORKER_FAILED_TABLE names another table (config/queue.php's
-- 'table'). The `luaworker failed / retry / forget / flush` commands and the worker
-- use the same store, so `php artisan queue:failed / queue:retry` see jobs failed
-- in luaworker and the other way round.
--
-- A store: log(q, reserved_copy, record, removal) records a failed job and removes its
-- reservation (removal: how the job's connection does, its delete_reserved(q,
-- reserved_copy) and fail(q, reserved_copy, record) that writes luaworker's Redis
-- record and removes it in one step, and optionally keeper() (keep_elsewhere) and
-- keep_kept; default: the Redis queue's), the record first: a job is never without
-- both. The text of a record
-- other than its payload (the exception, the connection and queue names, the uuid)
-- is made valid UTF-8 as Laravel's providers make the exception (PHP's
-- mb_convert_encoding: each ill-formed sequence '?'); the payload is never
-- altered. A store outside Redis that cannot be written waits out an outage (its
-- database down, the lock PHP holds), the job kept reserved meanwhile; a lasting
-- error (no table, a permission, a payload the store refuses) keeps the job in
-- luaworker's store of its own connection instead (Redis, or the database queue's
-- jobs table), with a note, said once per store and reason, and the worker goes on. all() -> records, newest first ({id, connection, queue,
-- payload, exception, failed_at}); find(id); forget(id) -> whether it was there;
-- flush() -> how many went; retry(id, record, now) pushes it back onto its queue
-- (attempts 0, as queue:retry) on the connection it failed on (the jobs table for
-- "database", else Redis) and forgets it.
local queue = require "luaworker.queue"
local host = require "luaworker.host"
local db = require "luaworker.db"
local output = require "luaworker.base.log"
local settings_of = require "luaworker.base.settings"
local failed_jobs_file = require "luaworker.queue.failed_jobs_file"
local database_queue = require "luaworker.queue.database_queue"
local failed_jobs_kept = require "luaworker.queue.failed_jobs_kept"

local M = {}

local env = settings_of.env

-- The driver and table the settings choose. The driver is the configuration's
-- (runtime/config/config.c checks QUEUE_FAILED_DRIVER and chooses its default).
function M.settings()
    local driver = settings_of.config.failed_driver
    if driver == "file" and not settings_of.laravel_at_least(10, 10) then driver = "database" end
    local tbl = db.table_name("LUAWORKER_FAILED_TABLE", "failed_jobs")
    local s = { driver = driver, connection = env("DB_CONNECTION"), table = tbl,
        setting = env("QUEUE_FAILED_DRIVER") }
    if driver == "file" then
        local dir = settings_of.app_dir()
        local given = env("LUAWORKER_FAILED_PATH")
        s.path = given or (dir and dir .. "/storage/framework/cache/failed-jobs.json")
        if not s.path then
            error("QUEUE_FAILED_DRIVER=file: the failed-jobs file is in the app's storage, found "
                .. "beside --env-file; give --env-file or LUAWORKER_FAILED_PATH", 0)
        end
        -- the lock PHP takes is in the cache store of the app the file belongs to:
        -- the app whose storage holds the path, else the app of --env-file
        local app = s.path:match("^(.*)/storage/framework/cache/failed%-jobs%.json$")
            or (s.path == "storage/framework/cache/failed-jobs.json" and ".") or dir
        if not app then
            error("QUEUE_FAILED_DRIVER=file: LUAWORKER_FAILED_PATH=" .. given .. " is not an app's "
                .. "storage/framework/cache/failed-jobs.json, so the lock PHP takes on it (in the app's "
                .. "storage/framework/cache/data) is not known; give --env-file (the app's .env)", 0)
        end
        s.cache_dir = app .. "/storage/framework/cache/data"
        local limit = env("LUAWORKER_FAILED_LIMIT") or "100"
        s.limit = tonumber(limit:match("^%d+$") or "")
        if not s.limit or s.limit < 1 then
            error("LUAWORKER_FAILED_LIMIT=" .. limit .. ": expected a whole number of records, 1 or more", 0)
        end
    end
    return s
end

-- The text of a record other than its payload made valid UTF-8 (host.mb_scrub: as
-- PHP's mb_convert_encoding, which Laravel's providers apply to the exception).
-- Returns a copy of r, and q so made unless keep_queue (luaworker's Redis store:
-- the queue's name there names its keys, byte for byte).
local function scrubbed(q, r, keep_queue)
    local copy = {}
    for k, v in pairs(r) do copy[k] = v end
    for _, k in ipairs({ "exception", "connection", "uuid" }) do
        if type(copy[k]) == "string" then copy[k] = host.mb_scrub(copy[k]) end
    end
    return keep_queue and q or host.mb_scrub(q), copy
end

-- luaworker's Redis store ---------------------------------------------------------

local redis_store = { name = "luaworker-redis" }

function redis_store.log(q, reserved_copy, record, removal)
    return (removal or queue).fail(q, reserved_copy, select(2, scrubbed(q, record, true)))
end
function redis_store.all() return queue.failed_records() end
function redis_store.find(id) return queue.failed_record(id) end
function redis_store.forget(id) return queue.forget(id) end
function redis_store.flush() return queue.flush() end
-- queue:retry of record r onto the database queue: the connection it failed on.
local function retry_on_database(id, r, now)
    local jobs = database_queue.default()
    jobs:retry(id, r.queue or jobs.default, r.payload, now)
end

function redis_store.retry(id, record, now)
    if record.connection == "database" then
        retry_on_database(id, record, now)
        return queue.forget(id)
    end
    return queue.retry(id, record.queue or "default", now)
end

-- Laravel's null store ---------------------------------------------------------

local null_store = { name = "null" }

function null_store.log(q, reserved_copy, _, removal)
    (removal or queue).delete_reserved(q, reserved_copy)
end
function null_store.all() return {} end
function null_store.find() return nil end
function null_store.forget() return false end
function null_store.flush() return 0 end
function null_store.retry() return false end

-- Stores outside Redis ------------------------------------------------------------

-- Where a job another store refuses for good is kept, by its connection (a
-- removal's keeper): {keep(q, reserved_copy, record) (the record and the
-- reservation's removal in one step), where (as the log lines say it), driver (the
-- QUEUE_FAILED_DRIVER that lists it)}. A job of the Redis queue: luaworker's Redis
-- store (the removal's fail).
local function redis_keeper(removal)
    return { keep = removal.fail, where = "luaworker's Redis failed store", driver = "luaworker-redis" }
end

local said = {}  -- store name .. reason -> true once a lasting error was said

-- A job of queue q whose record r store refused for good (err, a lasting error):
-- kept where its connection keeps such jobs (removal.keeper, else luaworker's Redis
-- store), the exception followed by a note saying why it is there and how to list
-- it. The error is said once per store and reason, each job kept in a line of its
-- own.
local function keep_elsewhere(store, q, reserved_copy, r, err, removal)
    local keeper = removal.keeper and removal.keeper() or redis_keeper(removal)
    local list = "QUEUE_FAILED_DRIVER=" .. keeper.driver .. " luaworker failed"
    local why = host.mb_scrub(tostring(err))
    local kept = {}
    for k, v in pairs(r) do kept[k] = v end
    kept.exception = r.exception .. "\n\n[luaworker] This failed job could not be recorded in "
        .. store.failing_where .. " (" .. why .. "), so it is kept in " .. keeper.where .. ": list it with "
        .. list .. ", retry it with QUEUE_FAILED_DRIVER=" .. keeper.driver .. " luaworker retry <id>."
    keeper.keep(q, reserved_copy, kept)
    local key = store.name .. "\0" .. store.reason(err)
    if not said[key] then
        said[key] = true
        output.error("cannot record failed jobs in " .. store.failing_where .. " (" .. why .. "): not "
            .. "an outage, so a failed job it refuses for this reason is kept in " .. keeper.where
            .. " instead (see " .. list .. ")")
    end
    output.error("failed job " .. r.uuid .. " kept in " .. keeper.where .. ", not in "
        .. store.where .. " (see " .. list .. ")")
end

-- store.log for a store whose record is written where a Redis script cannot reach
-- (the app's database, its file), from store.write(q, r, again) -> the record's id,
-- which writes r unless it is there (again: a try before may have written it),
-- store.passing(err) (whether an error of write passes: an outage), store.reason(err)
-- (what a lasting error is said once for) and store.where / store.failing_where
-- (what the log lines name). The record first, then the reservation goes: while the
-- write fails for a passing reason, the job stays reserved and the write is tried
-- again, 1 s, 2 s... 30 s apart, said once when it fails and once when it is
-- written. A worker that stops meanwhile raises: the job stays reserved, failed
-- again when it comes back. A lasting error keeps the job where its connection
-- keeps such jobs at once (keep_elsewhere); a try before it that passed may have written the
-- record (a lost reply), so the job may then be in both: never in neither.
local function logged_first(store)
    function store.log(q, reserved_copy, r, removal)
        removal = removal or queue
        -- q names the queue's keys (byte for byte), name is what the record says
        local name
        name, r = scrubbed(q, r)
        local tried = false
        -- outside the job's own transactions: a job failed inside one it rolls back
        -- keeps its record
        local ok, id = pcall(db.outside_transactions, db.wait_out, function()
            local again = tried
            tried = true
            return store.write(name, r, again)
        end, store.passing, function(err)
            output.error("cannot record failed job " .. r.uuid .. " in " .. store.failing_where .. " ("
                .. tostring(err) .. "); the job stays reserved until it is recorded, tried again "
                .. "every 30 s at most")
        end, function()
            output.error("recorded failed job " .. r.uuid .. " in " .. store.where .. " after all")
        end)
        if not ok then
            -- a passing error raised: the worker stops, the job stays reserved
            if store.passing(id) then error(id, 0) end
            keep_elsewhere(store, q, reserved_copy, r, id, removal)
            return nil
        end
        removal.delete_reserved(q, reserved_copy)
        return id
    end
    return store
end

-- The app's table ------------------------------------------------------------------

-- SQLSTATE classes and states of errors that pass: connection (08), transaction
-- rollback (40: a deadlock, a serialization failure), insufficient resources (53),
-- operator intervention (57: a shutdown, a statement timeout), system errors
-- (58); a read-only transaction (25006: a fail-over), a lock not available
-- (55P03). MySQL's own numbers for what it reports as HY000: a lock wait timeout
-- (1205), a read-only server (1290, 1836).
local PASSING_CLASSES = { ["08"] = true, ["40"] = true, ["53"] = true, ["57"] = true, ["58"] = true }
local PASSING_STATES = { ["25006"] = true, ["55P03"] = true }
local PASSING_MYSQL = { ["1205"] = true, ["1290"] = true, ["1836"] = true }
-- MySQL's numbers of errors that last though their SQLSTATE's class passes: a record
-- over max_allowed_packet (1153, 08S01).
local LASTING_MYSQL = { ["1153"] = true }

-- A QueryException's SQLSTATE and, for MySQL's, its error number.
local function query_error_codes(err)
    local message = type(err) == "table" and err.message
    if type(message) ~= "string" then return nil end
    local state = err.sqlstate or message:match("^SQLSTATE%[(%w+)%]")
    return state, message:match("^SQLSTATE%[%w+%]: [^:]*: (%d+) ")
end

-- Whether err, raised by a statement on the app's database, passes: the database
-- is down or cannot be reached (luaworker.db's lost connection), or is busy or
-- read-only for a while. Anything else lasts (no table, a permission, a login
-- refused, an encoding or a constraint the row breaks, a Lua error).
local function passing_query_error(err)
    local state, number = query_error_codes(err)
    -- a login refused (MySQL's 28000; libpq's comes as a lost connection) lasts
    if state and state:sub(1, 2) == "28" then return false end
    if LASTING_MYSQL[number] then return false end
    if db.lost_connection(err) then return true end
    if not state then return false end
    return PASSING_CLASSES[state:sub(1, 2)] or PASSING_STATES[state] or PASSING_MYSQL[number] or false
end

-- What a lasting error is said once for: its SQLSTATE (and MySQL's number), else
-- its text.
local function query_error_reason(err)
    local state, number = query_error_codes(err)
    return state and state .. " " .. (number or "") or tostring(err)
end

local function database_store(s)
    local uuids = s.driver == "database-uuids"
    local store = { name = s.driver }
    local id_column = uuids and "uuid" or "id"
    local function conn() return db.connection(s.connection) end
    local tbl = conn():wrap(s.table)

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
            local row = conn():select("select payload from " .. tbl .. " where uuid = ?", { id })[1]
            if not row then return id end
            if row.payload == r.payload then return nil end
            n = n + 1
            id = r.uuid .. "-" .. n
        end
    end

    -- database: whether a row of this payload is there already (checked only after
    -- a failed insert: the payload has no index).
    local function written(r)
        return #conn():select("select 1 as one from " .. tbl .. " where payload = ?", { r.payload }) > 0
    end

    -- Writes r's row unless it is there; returns its id (the uuid, or nil for database).
    local function insert(q, r, again)
        local failed_at = r.failed_at  -- the app's timezone, as Laravel's Date::now()
        if uuids then
            local id = free_uuid(r)
            if not id then return r.uuid end
            conn():insert("insert into " .. tbl .. " (uuid, connection, queue, payload, exception, "
                .. "failed_at) values (?, ?, ?, ?, ?, ?)",
                { id, r.connection, q, r.payload, r.exception, failed_at })
            return id
        end
        if again and written(r) then return nil end
        conn():insert("insert into " .. tbl .. " (connection, queue, payload, exception, "
            .. "failed_at) values (?, ?, ?, ?, ?)",
            { r.connection, q, r.payload, r.exception, failed_at })
        return nil
    end

    -- Writes r's row unless it is there (store.write, for logged_first).
    store.write = insert
    store.failing_where = s.table .. " on database connection " .. tostring(s.connection or "default")
    store.where = s.table
    store.passing = passing_query_error
    store.reason = query_error_reason

    -- At worker start: the table is there with the columns the store uses (a
    -- query that reads none of its rows). Raises as a write would.
    function store.check()
        conn():select("select id, " .. (uuids and "uuid, " or "") .. "connection, queue, payload, "
            .. "exception, failed_at from " .. tbl .. " where 1 = 0")
    end

    function store.all()
        local records = {}
        for i, row in ipairs(conn():select("select * from " .. tbl .. " order by id desc")) do
            records[i] = record(row)
        end
        return records
    end

    function store.find(id)
        return record(conn():select("select * from " .. tbl .. " where " .. id_column .. " = ?",
            { id })[1])
    end

    function store.forget(id)
        return conn():delete("delete from " .. tbl .. " where " .. id_column .. " = ?", { id }) > 0
    end

    function store.flush()
        return conn():delete("delete from " .. tbl)
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
    elseif s.driver == "luaworker-database" then
        chosen = failed_jobs_kept.store()
    elseif s.driver == "null" then
        chosen = null_store
    elseif s.driver == "file" then
        chosen = logged_first(failed_jobs_file.new(s))
    else
        chosen = logged_first(database_store(s))
    end
    if not chosen.retry then
        -- as queue:retry: the record's payload pushed back (attempts 0), then forgotten
        local store = chosen
        function store.retry(id, r, now)
            if r.connection == "database" then
                retry_on_database(id, r, now)
            elseif not queue.retry_payload(id, r.payload, r.queue or "default", now) then
                return false
            end
            store.forget(id)
            return true
        end
    end
    return chosen
end

-- The store s (M.settings) as a message names it.
local function named(s)
    if s.setting == s.driver then return "QUEUE_FAILED_DRIVER=" .. s.driver end
    if s.setting then
        return "QUEUE_FAILED_DRIVER=" .. s.setting .. " (" .. s.driver .. " before Laravel 10.10)"
    end
    return "the failed-job store " .. s.driver .. " (QUEUE_FAILED_DRIVER is not set, DB_CONNECTION is)"
end

-- At worker start: whether the store the settings choose can record a failed job
-- (its store.check: the table and its columns, the file's directories). Returns
-- true; true and a warning when it could not be checked for a passing reason (the
-- database is down: a job that fails meanwhile waits for it, as for any outage);
-- or false and why not, naming the store, where it writes and the error (a
-- lasting one: the worker must not start). Raises what M.settings raises.
function M.check()
    local s = M.settings()
    local store = M.store()
    if not store.check then return true end
    local ok, err = pcall(store.check)
    if ok then return true end
    local why = named(s) .. ": failed jobs cannot be recorded in " .. store.failing_where .. ": "
        .. tostring(err)
    if store.passing(err) then
        return true, why .. "; starting all the same: a job that fails meanwhile waits for it"
    end
    return false, why
end

-- For specs and the commands: the store of the settings now.
function M.reset()
    chosen = nil
end

return M
