-- luaworker.db: the Laravel app's database connections for handlers, shaped like its
-- DB facade: db:select(sql, bindings) -> rows (keyed by column; NULL as
-- luaworker.null; integer and float columns as numbers, 64-bit integers exact as
-- the PHP codec gives them), db:insert -> true, db:update and db:delete -> the rows
-- affected, db:statement -> true, db:transaction(fn) -> fn's results (committed; on
-- an error rolled back and raised again). `?` placeholders are bound as parameters,
-- never pasted into the text (bindings and drivers: luaworker.db_drivers). A
-- statement waits without holding up the worker: the other jobs in flight run
-- meanwhile. Errors raise an Illuminate\Database\QueryException "SQLSTATE[<code>]:
-- <the server's message> (SQL: <the statement>)": never a password, never the
-- bindings.
--
-- Pools. Connections are pooled per name in the process, at most pool_size() open
-- at once (LUAWORKER_DB_POOL, default 10): a job that finds none free waits, without
-- holding up the loop, for one to be given back. A connection goes back to the
-- pool after each statement, or after its transaction; one that failed, or that a
-- statement left inside a transaction (a BEGIN sent as a statement), is closed
-- instead (the server rolls the transaction back).
--
-- Transactions as Laravel's: inside db:transaction(fn) the calls of that job on that
-- db go to the transaction's connection, which no other job shares; a nested
-- db:transaction is a savepoint (SAVEPOINT trans2, ...), whose error rolls back to it
-- (ROLLBACK TO SAVEPOINT trans2) and is raised again, and whose success commits
-- nothing until the outermost commits.
--
-- Lost connections (Laravel's DetectsLostConnections): outside a transaction, a
-- statement whose connection turns out lost (the server restarted, ended it, or
-- closed it idle) is run once more on a new connection; inside one, it raises.
--
-- Jobs stopped for their timeout. A job abandoned where it waits (luaworker.task)
-- gives back what it held: the connections it had taken are closed (a transaction
-- it had open is rolled back by the server with them, its locks released) before
-- the next job can take them; a statement it was running is also ended on the
-- server, on a connection of its own (pg_terminate_backend, KILL): neither server
-- notices a client gone before the statement ends.
local host = require "luaworker.host"
local task = require "luaworker.loop.task"
local settings = require "luaworker.base.settings"
local values = require "luaworker.base.values"
local drivers = require "luaworker.db.drivers"
local backoff = require "luaworker.base.backoff"

local M = {}

local QUERY_EXCEPTION = "Illuminate\\Database\\QueryException"

-- What Laravel's QueryException adds to the driver's message, by version: 8 and 9
-- " (SQL: <sql>)"; 10.0+ " (Connection: <name>, SQL: <sql>)"; 12.45+ with the
-- connection's details after its name (", Host: h, Port: p, Database: d"; a socket
-- as ", Socket: s"; SQLite only its database). The SQL is the statement as written:
-- Laravel puts the bindings in, luaworker leaves them out (they may be secrets).
local function context(db, sql)
    if not settings.laravel_at_least(10, 0) then return " (SQL: " .. sql .. ")" end
    local details = ""
    if settings.laravel_at_least(12, 45) then
        local d = db.driver.details(db.settings)
        local parts = {}
        if db.driver_name ~= "sqlite" then
            if d.socket then
                parts[#parts + 1] = "Socket: " .. d.socket
            else
                parts[#parts + 1] = "Host: " .. tostring(d.host or "")
                parts[#parts + 1] = "Port: " .. tostring(d.port or "")
            end
        end
        parts[#parts + 1] = "Database: " .. tostring(d.database or "")
        details = ", " .. table.concat(parts, ", ")
    end
    return " (Connection: " .. db.name .. details .. ", SQL: " .. sql .. ")"
end

-- Raises err, a driver's error made the QueryException of sql on db (its message,
-- class, sqlstate and whether the connection was lost); another error as it is.
local function raise(db, err, sql)
    if not drivers.is_error(err) then error(err, 0) end
    local e = values.exception(QUERY_EXCEPTION, err.text .. context(db, sql))
    e.sqlstate, e.connection = err.state, db.name
    if err.lost then e.lost_connection = true end
    error(e, 0)
end

-- Whether err is a QueryException of a connection that failed or could not be made
-- (the database is down or unreachable), rather than of the statement.
function M.lost_connection(err)
    return type(err) == "table" and err.lost_connection == true
end

-- Whether err is a QueryException of a transaction the server rolled back whole to
-- end a deadlock or a serialization failure (SQLSTATE class 40; MySQL's 1213 is
-- 40001): nothing of it was done, and it may be run again at once (Laravel's
-- DetectsConcurrencyErrors, for which its transaction($callback, $attempts) tries
-- again).
function M.rolled_back(err)
    return type(err) == "table" and type(err.sqlstate) == "string" and err.sqlstate:sub(1, 2) == "40"
end

-- Seconds between tries while a database is waited out.
local OUTAGE_WAIT_FIRST, OUTAGE_WAIT_MAX = 1, 30

-- Runs fn(...) until it returns, for work a job must not skip: an error for which
-- retry(err) is true (or a number: the most seconds to wait before the next try) is
-- waited out, fn tried again 1, 2, 4... up to 30 seconds apart; say(err) is called
-- at the first (to log it once), and said() once fn succeeds after. Raises other
-- errors; and the last one when the worker stops meanwhile (what waited is left for
-- later). Returns fn's results.
function M.wait_out(fn, retry, say, said, ...)
    local waits, waited = backoff.new(OUTAGE_WAIT_FIRST, OUTAGE_WAIT_MAX), false
    while true do
        local results = { pcall(fn, ...) }
        if results[1] then
            if waited and said then said() end
            return unpack(results, 2, table.maxn(results))
        end
        local err = results[2]
        local again = retry(err)
        if not again or settings.giving_up() then error(err, 0) end
        if not waited then say(err) end
        waited = true
        local seconds = waits:next()
        if type(again) == "number" then seconds = math.min(seconds, math.max(again, 0.05)) end
        host.sleep(seconds, true)  -- a stop signal ends it early
    end
end

local POOL_DEFAULT, POOL_MAX = 10, 10000

-- The most connections a pool keeps open: LUAWORKER_DB_POOL, else 10. Raises for a
-- value that is not a whole number from 1 to 10000.
function M.pool_size()
    local v = os.getenv("LUAWORKER_DB_POOL")
    if v == nil or v == "" then return POOL_DEFAULT end
    local n = tonumber(v:match("^%d+$"))
    if not n or n < 1 or n > POOL_MAX then
        error("LUAWORKER_DB_POOL=" .. v .. ": expected a whole number from 1 to " .. POOL_MAX, 0)
    end
    return n
end

-- The pool ------------------------------------------------------------------------

local Db = {}
Db.__index = Db

-- Wakes the first job waiting for a connection of db (one abandoned meanwhile is
-- skipped).
local function wake_one(db)
    local q = db.waiters
    while q.first <= q.last do
        local key = q[q.first]
        q[q.first] = nil
        q.first = q.first + 1
        if task.wake(key) then return end
    end
    q.first, q.last = 1, 0
end

-- Waits until a connection of db is given back or closed.
local function wait_turn(db)
    local q, key = db.waiters, {}
    q.last = q.last + 1
    q[q.last] = key
    task.suspend(key)
end

-- Closes conn, taken from db, making room for another.
local function discard(db, conn)
    db.driver.close(conn)
    db.open = db.open - 1
    wake_one(db)
end

-- Gives conn, taken from db, back to its pool; closes it instead when it failed or
-- a statement left a transaction open on it.
local function give_back(db, conn)
    if not db.driver.alive(conn) then return discard(db, conn) end
    if db.driver.in_transaction and db.driver.in_transaction(conn) then
        io.stderr:write("luaworker.db: a job ended with a transaction open on connection ", db.name,
            " (a BEGIN without its COMMIT): the connection is closed, and the transaction rolled "
            .. "back with it\n")
        return discard(db, conn)
    end
    db.idle[#db.idle + 1] = conn
    wake_one(db)
end

-- Takes a connection of db for the calling job, to run sql: an idle one, else a new
-- one while fewer than db.size are open, else waits for one. Raises (the
-- QueryException of sql) when a connection cannot be made. The caller holds it
-- (task.hold) until it gives it back.
local function take(db, sql)
    while true do
        local conn = table.remove(db.idle)
        while conn and not db.driver.alive(conn) do
            db.driver.close(conn)
            db.open = db.open - 1
            conn = table.remove(db.idle)
        end
        if conn then return conn end
        if db.open < db.size then
            db.open = db.open + 1
            -- a job stopped while it connects: the room is made again
            local hold = task.hold(function()
                db.open = db.open - 1
                wake_one(db)
            end)
            local ok, made = pcall(db.driver.connect, db)
            task.let_go(hold)
            if ok then return made end
            db.open = db.open - 1
            wake_one(db)
            raise(db, made, sql)
        end
        wait_turn(db)
    end
end

-- A job stopped for its timeout while its statement ran has had its connection
-- closed; neither MySQL nor PostgreSQL (by default) notices that before the
-- statement ends, so a connection of its own asks the server to end it now.
local function end_on_server(db, id)
    local sql = db.driver.ending(id)
    local function ending()
        local ok, conn = pcall(db.driver.connect, db)
        if not ok then raise(db, conn, sql) end
        local err
        ok, err = pcall(db.driver.query, conn, sql, {}, 0)
        db.driver.close(conn)
        if not ok then raise(db, err, sql) end
    end
    task.spawn(function(_, ok, err)
        if not ok then
            io.stderr:write("luaworker.db: could not end the statement of a job stopped for its "
                .. "timeout on connection ", db.name, ": ", tostring(err), "\n")
        end
    end, nil, ending)
end

-- Runs sql with its n bindings on conn (of db). Returns rows, affected; raises the
-- QueryException.
local function run_on(db, conn, sql, bindings, n)
    local hold
    if db.driver.ending then
        local id = db.driver.id(conn)
        hold = task.hold(function() end_on_server(db, id) end)
    end
    local ok, rows, affected = pcall(db.driver.query, conn, sql, bindings, n)
    if hold then task.let_go(hold) end
    if not ok then raise(db, rows, sql) end
    return rows, affected
end

-- Tasks with a transaction open: task -> how many (on every db), and what waits
-- for the last to end (M.after_transactions).
local open_count = setmetatable({}, { __mode = "k" })
local after = setmetatable({}, { __mode = "k" })

-- Whether the calling job has a transaction open (on any connection).
function M.in_transaction()
    local t = task.current() or false
    return (open_count[t] or 0) > 0
end

-- Calls fn() once the calling job's transactions have all ended (committed or
-- rolled back), or now when it has none open. A job stopped for its timeout inside
-- one never calls it. fn's error is logged, never raised into the job.
function M.after_transactions(fn)
    local t = task.current() or false
    if (open_count[t] or 0) == 0 then return fn() end
    after[t] = after[t] or {}
    table.insert(after[t], fn)
end

local function transaction_opened(t)
    open_count[t] = (open_count[t] or 0) + 1
end

local function transaction_closed(t)
    open_count[t] = (open_count[t] or 1) - 1
    if open_count[t] > 0 then return end
    open_count[t] = nil
    local waiting = after[t]
    after[t] = nil
    for _, fn in ipairs(waiting or {}) do
        local ok, err = pcall(fn)
        if not ok then io.stderr:write("luaworker.db: after a transaction: ", tostring(err), "\n") end
    end
end

local dbs = {}

-- The transaction of the calling job on db (its connection and level), or nil.
local function pin_of(db)
    return db.pinned[task.current() or false]
end

-- Tasks whose statements run outside their own connection and transactions now
-- (M.outside_transactions): task -> how many such calls are under way.
local outside = setmetatable({}, { __mode = "k" })

-- Runs fn(...) with the calling job's open transactions set aside: its statements
-- take connections of their own, committed as they run (a transaction it opens is
-- its own). For the worker's records of the job (its batch's counts), which must not
-- be undone with a transaction the job rolls back; on SQLite they stay in it.
-- Returns fn's results; raises its error.
function M.outside_transactions(fn, ...)
    local t = task.current() or false
    local aside = {}
    for _, db in pairs(dbs) do
        -- not SQLite's: the job's transaction holds the database's write lock, which
        -- another connection of the same job would wait for without end
        if db.pinned[t] and db.driver_name ~= "sqlite" then
            aside[db] = db.pinned[t]
            db.pinned[t] = nil
        end
    end
    outside[t] = (outside[t] or 0) + 1
    local results = { pcall(fn, ...) }
    outside[t] = outside[t] > 1 and outside[t] - 1 or nil
    for db, pin in pairs(aside) do db.pinned[t] = pin end
    if not results[1] then error(results[2], 0) end
    return unpack(results, 2, table.maxn(results))
end

-- The calling job's own connection of db, as a PHP worker has one connection for
-- the job it runs: taken from the pool at the job's first statement (sql names it
-- in a failure), kept for the job's statements and transactions (its session: SET,
-- advisory locks, lastval() stay with it), given back when the job ends, closed
-- when it is abandoned (its timeout: the server rolls back what it had open).
local function session(db, sql)
    local t = task.current() or false
    local s = db.sessions[t]
    if s then return s.conn end
    local conn = take(db, sql)
    s = { conn = conn }
    db.sessions[t] = s
    s.hold = task.hold(function(ended)
        if db.sessions[t] == s then db.sessions[t] = nil end
        if ended.abandoned then discard(db, conn) else give_back(db, conn) end
    end)
    return conn
end

-- The calling job's connection of db failed: it is closed, and the job's next
-- statement takes another.
local function drop_session(db)
    local t = task.current() or false
    local s = db.sessions[t]
    if not s then return end
    db.sessions[t] = nil
    task.let_go(s.hold)
    discard(db, s.conn)
end

local function run(db, sql, bindings)
    if type(sql) ~= "string" then error("luaworker.db: expected SQL text, got " .. type(sql), 3) end
    bindings = bindings or {}
    local checked, n = pcall(drivers.check_bindings, sql, bindings)
    if not checked then raise(db, n, sql) end
    local pin = pin_of(db)
    if pin then return run_on(db, pin.conn, sql, bindings, n) end
    if outside[task.current() or false] then
        -- a connection of its own for this statement
        local conn = take(db, sql)
        local hold = task.hold(function() discard(db, conn) end)
        local ok, rows, affected = pcall(run_on, db, conn, sql, bindings, n)
        task.let_go(hold)
        give_back(db, conn)
        if not ok then error(rows, 0) end
        return rows, affected
    end
    for try = 1, 2 do
        local conn = session(db, sql)
        local ok, rows, affected = pcall(run_on, db, conn, sql, bindings, n)
        if ok then return rows, affected end
        if not db.driver.alive(conn) then drop_session(db) end
        if try == 2 or not M.lost_connection(rows) then
            error(rows, 0)
        end
        -- the server restarted or ended connections: the idle ones are as dead
        while #db.idle > 0 do discard(db, table.remove(db.idle)) end
    end
end

-- name (a table or column; "schema.table" names a table of another schema) quoted
-- as Laravel's grammar for this connection's driver wraps it (Grammar::wrap): each
-- part between dots in backticks on MySQL and MariaDB, in double quotes on
-- PostgreSQL and SQLite, the quote doubled inside. Raises for a name that is not a
-- non-empty string.
function Db:wrap(name)
    if type(name) ~= "string" or name == "" then
        error("luaworker.db: wrap(name): expected a table or column name, got " .. tostring(name), 2)
    end
    local q = (self.driver_name == "mysql" or self.driver_name == "mariadb") and "`" or '"'
    local parts = {}
    for part in (name .. "."):gmatch("(.-)%.") do
        parts[#parts + 1] = q .. part:gsub(q, q .. q) .. q
    end
    return table.concat(parts, ".")
end

function Db:select(sql, bindings) return (run(self, sql, bindings)) end
function Db:insert(sql, bindings) run(self, sql, bindings) return true end
function Db:update(sql, bindings) return select(2, run(self, sql, bindings)) end
function Db:delete(sql, bindings) return select(2, run(self, sql, bindings)) end
function Db:statement(sql, bindings) run(self, sql, bindings) return true end

-- A statement of the transaction machinery on conn; raises.
local function control(db, conn, sql)
    return run_on(db, conn, sql, {}, 0)
end

-- Inside a transaction of this job: a savepoint around fn, as Laravel's nested
-- transactions.
local function savepoint(db, pin, fn)
    local level = pin.level + 1
    control(db, pin.conn, "SAVEPOINT trans" .. level)
    pin.level = level
    local results = { pcall(fn, db) }
    pin.level = level - 1
    if results[1] then return unpack(results, 2, table.maxn(results)) end
    pcall(control, db, pin.conn, "ROLLBACK TO SAVEPOINT trans" .. level)
    error(results[2], 0)
end

-- Runs fn(db) in a transaction on a connection of its own: committed when fn
-- returns (its results returned), rolled back when it raises (the error raised
-- again). Calls on this db from the same job inside fn go to that connection; a
-- transaction inside it is a savepoint.
function Db:transaction(fn)
    local t = task.current() or false
    local pin = pin_of(self)
    if pin then return savepoint(self, pin, fn) end
    local begin = self.driver.begin or "BEGIN"
    local conn = session(self, begin)
    local ok, err = pcall(control, self, conn, begin)
    -- nothing was done yet: again on another connection, as Laravel's beginTransaction
    -- reconnects (pooled connections the server ended while idle: each is tried once
    -- and closed, then a new one)
    local tries = self.size
    while not ok and M.lost_connection(err) and tries > 0 do
        tries = tries - 1
        drop_session(self)
        conn = session(self, begin)
        ok, err = pcall(control, self, conn, begin)
    end
    if not ok then
        if not self.driver.alive(conn) then drop_session(self) end
        error(err, 0)
    end
    self.pinned[t] = { conn = conn, level = 1 }
    transaction_opened(t)
    local results = { pcall(fn, self) }
    self.pinned[t] = nil
    ok, err = pcall(control, self, conn, results[1] and "COMMIT" or "ROLLBACK")
    if not self.driver.alive(conn) then drop_session(self) end
    transaction_closed(t)
    if not results[1] then error(results[2], 0) end
    if not ok then error(err, 0) end
    return unpack(results, 2, table.maxn(results))
end

-- The table name the environment variable variable gives (else default): any
-- text Laravel takes, quoted where SQL names it (Db:wrap). Raises, naming the
-- variable, for an empty name or one with a control character.
function M.table_name(variable, default)
    local name = settings.env(variable) or default
    if name == "" or name:find("%c") then
        error(variable .. "=" .. name:gsub("%c", "?") .. ": expected a table name", 0)
    end
    return name
end

-- Whether a statement of a task that has no connection of db yet would be sent
-- at once: an open connection is idle in its pool (none to make, none to wait for).
function M.ready(db)
    local idle = db.idle
    while #idle > 0 and not db.driver.alive(idle[#idle]) do discard(db, table.remove(idle)) end
    return #idle > 0
end

-- Forgets the db of connection name, closing its idle connections: the next
-- M.connection(name) reads its settings again (luaworker.testing's database()).
function M.forget(name)
    local db = dbs[name]
    if not db then return end
    dbs[name] = nil
    while #db.idle > 0 do discard(db, table.remove(db.idle)) end
end

-- The db for the app's connection name (default DB_CONNECTION, else mysql, as
-- Laravel's default).
function M.connection(name)
    name = name or drivers.default_name()
    if type(name) ~= "string" then
        error("luaworker.db(name): expected a connection name, got " .. type(name), 2)
    end
    local db = dbs[name]
    if db then return db end
    local driver, driver_name, settings = drivers.driver(name)
    db = setmetatable({ name = name, driver = driver, driver_name = driver_name,
        settings = settings, size = M.pool_size(), open = 0, idle = {},
        waiters = { first = 1, last = 0 }, pinned = setmetatable({}, { __mode = "k" }),
        sessions = setmetatable({}, { __mode = "k" }) }, Db)
    dbs[name] = db
    return db
end

return M
