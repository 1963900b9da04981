-- luaworker.db: the Laravel app's database connections for handlers, shaped like its
-- DB facade: db:select(sql, bindings) -> rows (keyed by column; NULL as
-- luaworker.null; integer and float columns as numbers, 64-bit integers exact as
-- the PHP codec gives them), db:insert -> true, db:update and db:delete -> the rows
-- affected, db:statement -> true, db:transaction(fn) -> fn's results (committed; on
-- an error rolled back and raised again). `?` placeholders are bound as parameters,
-- never pasted into the text. A statement waits without holding up the worker: the
-- other jobs in flight run meanwhile.
--
-- Settings as the app's config/database.php reads them from the environment (and the
-- .env the worker reads): DB_CONNECTION (the default name), DB_HOST, DB_PORT,
-- DB_DATABASE, DB_USERNAME, DB_PASSWORD, DB_SOCKET, and DATABASE_URL over them
-- (its scheme names the driver, as in Laravel). Drivers: pgsql (libpq's
-- asynchronous API); mysql and mariadb (MariaDB Connector/C's non-blocking API: a
-- statement with bindings is prepared on the server, one without goes as text;
-- each connection set up as Laravel's MySqlConnector does: DB_CHARSET, default
-- utf8mb4, DB_COLLATION, strict sql_mode; MYSQL_ATTR_SSL_CA; errors worded as
-- PDO's); sqlite (libsqlite3, in place: a statement blocks the loop
-- while SQLite works; a database locked by another connection or process is waited
-- out without blocking, and never made the job's error; DB_DATABASE is the file,
-- by default database/database.sqlite in the app, the directory of --env-file).
-- Connections are pooled per name in the process; inside
-- transaction(fn) the calls of that job on that db go to the transaction's
-- connection, which no other job shares. A connection that failed is closed, and the
-- next statement opens another. A job stopped for its timeout while a statement
-- of it ran has that connection closed, and the server asked on another to end
-- the statement (pg_terminate_backend, KILL): neither notices a client gone soon. Errors raise an Illuminate\Database\QueryException
-- "SQLSTATE[<code>]: <the server's message> (SQL: <the statement>)": never a password,
-- never the bindings.
local host = require "luaworker.host"
local task = require "luaworker.task"

local M = {}

local QUERY_EXCEPTION = "Illuminate\\Database\\QueryException"
local CONNECTION_FAILURE = "08006"

local function env(name, default)
    local v = os.getenv(name)
    if v == nil or v == "" then return default end
    return v
end

-- Drivers by Laravel's connection names (config/database.php).
local DRIVERS = { pgsql = "pgsql", mysql = "mysql", mariadb = "mysql", sqlite = "sqlite",
    sqlsrv = "sqlsrv" }

-- Raise the QueryException "<text> (SQL: <sql>)", or with text
-- "SQLSTATE[<state>]: <message>"; lost: the connection failed (or could not be
-- made), as M.lost_connection tells.
local function raise_text(text, sql, lost)
    local e = require("luaworker").exception(QUERY_EXCEPTION, text .. " (SQL: " .. sql .. ")")
    if lost then e.lost_connection = true end
    error(e, 0)
end

local function raise(state, message, sql, lost)
    raise_text(string.format("SQLSTATE[%s]: %s", state or "HY000", (message or ""):gsub("%s+$", "")),
        sql, lost)
end

-- Whether err is a QueryException of a connection that failed or could not be made
-- (the database is down or unreachable), rather than of the statement.
function M.lost_connection(err)
    return type(err) == "table" and err.lost_connection == true
end

-- Seconds between tries while a database is waited out.
local OUTAGE_WAIT_FIRST, OUTAGE_WAIT_MAX = 1, 30

-- Runs fn(...) until it returns, for work a job must not skip: an error for which
-- retry(err) is true is waited out, fn tried again 1, 2, 4... up to 30 seconds
-- apart; say(err) is called at the first (to log it once), and said() once fn
-- succeeds after. Raises other errors; and the last one when the worker stops
-- meanwhile (what waited is left for later). Returns fn's results.
function M.wait_out(fn, retry, say, said, ...)
    local wait, waited = OUTAGE_WAIT_FIRST, false
    while true do
        local results = { pcall(fn, ...) }
        if results[1] then
            if waited and said then said() end
            return unpack(results, 2, table.maxn(results))
        end
        local err = results[2]
        if not retry(err) or require("luaworker.settings").giving_up() then error(err, 0) end
        if not waited then say(err) end
        waited = true
        host.sleep(wait, true)  -- a stop signal ends it early
        wait = math.min(wait * 2, OUTAGE_WAIT_MAX)
    end
end

local function percent_decode(v)
    return v and (v:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
end

-- DATABASE_URL as Laravel's ConfigurationUrlParser reads it: the driver (its scheme),
-- host, port, username, password, database (the path), and the query's options; nil
-- when it is not set.
local URL_DRIVERS = { postgres = "pgsql", postgresql = "pgsql", pgsql = "pgsql",
    sqlite = "sqlite", sqlite3 = "sqlite", mysql = "mysql", mysql2 = "mysql",
    mariadb = "mysql" }

local function database_url()
    local url = env("DATABASE_URL")
    if not url then return nil end
    local scheme, rest = url:match("^([%w+.-]+)://(.*)$")
    if not scheme then
        error("luaworker.db: DATABASE_URL is not a URL such as pgsql://user:password@host:port/"
            .. "database", 4)
    end
    local authority, path, query = rest:match("^([^/?]*)(/?[^?]*)%??(.*)$")
    local userinfo, hostport = authority:match("^(.*)@(.*)$")
    hostport = hostport or authority
    local user, password = (userinfo or ""):match("^([^:]*):?(.*)$")
    local host, port = hostport:match("^%[(.*)%]:?(%d*)$")
    if not host then host, port = hostport:match("^([^:]*):?(%d*)$") end
    local u = { driver = URL_DRIVERS[scheme:lower()] or scheme:lower(), options = {},
        host = host ~= "" and percent_decode(host) or nil, port = port ~= "" and port or nil,
        username = user ~= "" and percent_decode(user) or nil,
        password = password ~= "" and percent_decode(password) or nil,
        database = path:len() > 1 and percent_decode(path:sub(2)) or nil }
    for k, v in query:gmatch("([^&=]+)=([^&]*)") do u.options[percent_decode(k)] = percent_decode(v) end
    return u
end

-- libpq's settings (Laravel's pgsql defaults), DATABASE_URL over DB_*.
local function pgsql_settings()
    local s = { host = env("DB_HOST", "127.0.0.1"), port = env("DB_PORT", "5432"),
        dbname = env("DB_DATABASE", "forge"), user = env("DB_USERNAME", "forge"),
        password = env("DB_PASSWORD", ""), sslmode = "prefer",
        application_name = "luaworker" }
    local socket = env("DB_SOCKET")
    if socket then s.host = socket end
    local u = database_url()
    if u then
        s.host, s.port = u.host or s.host, u.port or s.port
        s.dbname, s.user = u.database or s.dbname, u.username or s.user
        s.password = u.password or s.password
        s.sslmode = u.options.sslmode or s.sslmode
    end
    if s.password == "" then s.password = nil end
    return s
end

-- `?` placeholders as $1, $2... outside quoted strings, identifiers and comments.
local function numbered(sql)
    local out, n, i, len = {}, 0, 1, #sql
    while i <= len do
        local c = sql:sub(i, i)
        if c == "'" or c == '"' then
            local j = i + 1
            while j <= len do
                if sql:sub(j, j) == c then
                    if sql:sub(j + 1, j + 1) == c then j = j + 1 else break end
                end
                j = j + 1
            end
            out[#out + 1] = sql:sub(i, j)
            i = j + 1
        elseif c == "-" and sql:sub(i + 1, i + 1) == "-" then
            local j = sql:find("\n", i, true) or len
            out[#out + 1] = sql:sub(i, j)
            i = j + 1
        elseif c == "?" then
            n = n + 1
            out[#out + 1] = "$" .. n
            i = i + 1
        else
            local j = sql:find("['\"?%-]", i) or len + 1
            if j == i then j = i + 1 end
            out[#out + 1] = sql:sub(i, j - 1)
            i = j
        end
    end
    return table.concat(out), n
end

-- A binding as libpq's text parameter: false for NULL.
local function parameter(v, i)
    local t = type(v)
    if v == nil or v == require("luaworker").null then return false end
    if t == "string" then return v end
    if t == "boolean" then return v and "true" or "false" end
    if t == "number" then
        if v ~= v or v == math.huge or v == -math.huge then
            error("luaworker.db: binding " .. i .. " is " .. tostring(v) .. ": not a value SQL has", 4)
        end
        if v == math.floor(v) and math.abs(v) < 2 ^ 63 then return string.format("%d", v) end
        return string.format("%.17g", v)
    end
    if t == "cdata" then return (tostring(v):gsub("U?LL$", "")) end
    error("luaworker.db: binding " .. i .. " is a " .. t .. ": expected a string, number, boolean "
        .. "or luaworker.null", 4)
end

-- Drivers: settings() -> what connect needs; connect(db) -> a connection or raises;
-- alive(conn); close(conn); query(conn, sql, bindings) -> rows, affected or raises;
-- for a server that goes on with a statement whose connection closed: id(conn) ->
-- the connection's id on the server, and ending(id) -> the statement that ends it.
local drivers = {}

drivers.pgsql = {
    settings = pgsql_settings,
    connect = function(db)
        local conn, message = host.pg_open(db.settings)
        local ok = conn and true
        if conn then ok, message = host.pg_connected(conn) end
        if not ok then
            if conn then host.pg_close(conn) end
            raise(CONNECTION_FAILURE, message, "(connecting to " .. db.name .. ")", true)
        end
        return conn
    end,
    alive = function(conn) return host.pg_alive(conn) end,
    close = function(conn) host.pg_close(conn) end,
    id = function(conn) return host.pg_backend_pid(conn) end,
    ending = function(pid) return string.format("select pg_terminate_backend(%d)", pid) end,
    query = function(conn, sql, bindings)
        local text, n = numbered(sql)
        local params = {}
        for i = 1, n do params[i] = parameter(bindings[i], i) end
        local ok, a, b, kind = host.pg_query(conn, text, n, unpack(params, 1, n))
        if not ok then
            if kind == "memory" then raise_text(a, sql) end
            if kind == "connection" then
                host.pg_close(conn)
                raise(CONNECTION_FAILURE, a, sql, true)
            end
            raise(b, a, sql)
        end
        return a, b
    end,
}

-- MySQL / MariaDB (Laravel's mysql connection; mariadb in Laravel 11+) ------------

-- PDO's words for the SQLSTATEs MySQL reports most, so that messages read as
-- Laravel's ("SQLSTATE[23000]: Integrity constraint violation: 1062 Duplicate
-- entry ..."); any other state is PDO's "General error".
local SQLSTATE_WORDS = {
    ["01000"] = "Warning", ["08004"] = "Connection rejected", ["08S01"] = "Communication link failure",
    ["21S01"] = "Insert value list does not match column list", ["22001"] = "String data, right truncated",
    ["22003"] = "Numeric value out of range", ["22007"] = "Invalid datetime format",
    ["22012"] = "Division by zero", ["23000"] = "Integrity constraint violation",
    ["25000"] = "Invalid transaction state", ["28000"] = "Invalid authorization specification",
    ["3D000"] = "Invalid catalog name", ["40001"] = "Serialization failure",
    ["42000"] = "Syntax error or access violation", ["42S01"] = "Base table or view already exists",
    ["42S02"] = "Base table or view not found", ["42S21"] = "Column already exists",
    ["42S22"] = "Column not found", ["HY093"] = "Invalid parameter number",
}

-- Laravel's MySqlConnector: the connection's charset and collation (DB_CHARSET and
-- DB_COLLATION as Laravel 11 reads them) and its strict sql_mode, set at each connect.
local STRICT_MODE = "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,"
    .. "ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"

local function mysql_settings()
    local s = { host = env("DB_HOST", "127.0.0.1"), port = env("DB_PORT", "3306"),
        database = env("DB_DATABASE", "forge"), user = env("DB_USERNAME", "forge"),
        password = env("DB_PASSWORD"), socket = env("DB_SOCKET"),
        charset = env("DB_CHARSET", "utf8mb4"), ssl_ca = env("MYSQL_ATTR_SSL_CA") }
    local u = database_url()
    if u then
        s.host, s.port = u.host or s.host, u.port or s.port
        s.database, s.user = u.database or s.database, u.username or s.user
        s.password = u.password or s.password
        s.charset = u.options.charset or s.charset
    end
    local collation = env("DB_COLLATION", s.charset == "utf8mb4" and "utf8mb4_unicode_ci" or nil)
    s.init = "set names '" .. s.charset .. "'" .. (collation and " collate '" .. collation .. "'" or "")
        .. ", session sql_mode='" .. STRICT_MODE .. "'"
    if s.socket then s.host = "localhost" end
    return s
end

-- A binding as host.mysql_query takes it: nil for NULL, a string for an exact
-- 64-bit integer.
local function mysql_binding(v, i)
    if v == nil or v == require("luaworker").null then return nil end
    local p = parameter(v, i)
    if type(v) == "cdata" then return p end
    return v
end

local function raise_mysql(message, state, errno, sql, lost)
    raise(state, (SQLSTATE_WORDS[state] or "General error") .. ": " .. errno .. " " .. message, sql,
        lost)
end

drivers.mysql = {
    settings = mysql_settings,
    connect = function(db)
        local conn, message = host.mysql_open(db.settings)
        local ok, state, errno = conn and true, "HY000", 2000
        if conn then
            local _kind
            ok, message, state, _kind, errno = host.mysql_connected(conn)
        end
        if not ok then
            if conn then host.mysql_close(conn) end
            -- PDO's form for a failed connect: SQLSTATE[HY000] [2002] Connection refused
            raise_text(string.format("SQLSTATE[%s] [%d] %s", state, errno, message),
                "(connecting to " .. db.name .. ")", true)
        end
        return conn
    end,
    alive = function(conn) return host.mysql_alive(conn) end,
    close = function(conn) host.mysql_close(conn) end,
    id = function(conn) return host.mysql_thread_id(conn) end,
    ending = function(id) return string.format("KILL %d", id) end,
    query = function(conn, sql, bindings)
        local _, n = numbered(sql)
        local params = {}
        for i = 1, n do params[i] = mysql_binding(bindings[i], i) end
        local ok, a, b, kind, errno = host.mysql_query(conn, sql, n, unpack(params, 1, n))
        if not ok then
            if kind == "memory" then raise_text(a, sql) end
            if kind == "connection" then host.mysql_close(conn) end
            raise_mysql(a, b, errno, sql, kind == "connection")
        end
        return a, b
    end,
}

-- SQLite's result codes for a database another connection holds (BUSY, LOCKED and
-- their extended codes): waited out.
local SQLITE_BUSY = { [5] = true, [6] = true, [261] = true, [262] = true, [517] = true }
local SQLITE_WAIT_FIRST, SQLITE_WAIT_MAX = 0.005, 0.1

local function sqlite_binding(v, i)
    if v == true then return 1 end
    if v == false then return 0 end
    local p = parameter(v, i)
    if type(v) == "number" then return v end
    return p
end

drivers.sqlite = {
    -- the write lock at once: a transaction that read and then waits to write could
    -- wait forever for another that read too (SQLite does not wait them out)
    begin = "BEGIN IMMEDIATE",
    settings = function()
        local u = database_url()
        local path = u and u.database and "/" .. u.database or env("DB_DATABASE")
        if not path then
            local app = require("luaworker.settings").app_dir()
            if app then path = app .. "/database/database.sqlite" end
        end
        if not path then
            error("luaworker.db: the sqlite connection needs DB_DATABASE (the database file), or "
                .. "--env-file for the app's database/database.sqlite", 4)
        end
        return { path = path }
    end,
    connect = function(db)
        -- a lock is waited out here, without blocking the loop (busy timeout 0)
        local conn, message = host.sqlite_open(db.settings.path, 0)
        if not conn then
            raise("HY000", "[14] " .. message, "(connecting to " .. db.name .. ")", true)
        end
        return conn
    end,
    alive = function() return true end,
    close = function(conn) host.sqlite_close(conn) end,
    query = function(conn, sql, bindings)
        local params, n = {}, 0
        local _, count = numbered(sql)
        for i = 1, count do
            n = i
            params[i] = sqlite_binding(bindings[i], i)
            if params[i] == nil then params[i] = false end
        end
        local wait = SQLITE_WAIT_FIRST
        while true do
            local ok, a, b, kind = host.sqlite_query(conn, sql, n, unpack(params, 1, n))
            if ok then return a, b end
            if kind == "memory" then raise_text(a, sql) end
            if not SQLITE_BUSY[b] then raise("HY000", "General error: " .. b .. " " .. a, sql) end
            host.sleep(wait)
            wait = math.min(wait * 2, SQLITE_WAIT_MAX)
        end
    end,
}

local Db = {}
Db.__index = Db

-- The connection for the calling job: its transaction's, else one from the pool.
local function acquire(db)
    local pinned = db.pinned[task.current() or false]
    if pinned then return pinned, true end
    local conn = table.remove(db.idle)
    while conn and not db.driver.alive(conn) do
        db.driver.close(conn)
        conn = table.remove(db.idle)
    end
    return conn or db.driver.connect(db), false
end

local function release(db, conn)
    if db.driver.alive(conn) then
        db.idle[#db.idle + 1] = conn
    else
        db.driver.close(conn)
    end
end

-- A job stopped for its timeout while its statement ran has had its connection
-- closed; neither MySQL nor PostgreSQL (by default) notices that before the
-- statement ends, so a connection of its own asks the server to end it now.
local function end_on_server(db, id)
    local function ending()
        local conn = db.driver.connect(db)
        local ok, err = pcall(db.driver.query, conn, db.driver.ending(id), {})
        db.driver.close(conn)
        if not ok then error(err, 0) end
    end
    task.spawn(function(_, ok, err)
        if not ok then
            io.stderr:write("luaworker.db: could not end the statement of a job stopped for its "
                .. "timeout on connection ", db.name, ": ", tostring(err), "\n")
        end
    end, nil, ending)
end

-- Runs sql with bindings on conn (of db). Returns rows, affected; raises.
local function run_on(db, conn, sql, bindings)
    bindings = bindings or {}
    if type(bindings) ~= "table" then
        error("luaworker.db: bindings must be a list, got " .. type(bindings), 3)
    end
    local t = task.current()
    if not (t and db.driver.ending) then return db.driver.query(conn, sql, bindings) end
    local id = db.driver.id(conn)
    t.on_abandon = function() end_on_server(db, id) end
    local ok, rows, affected = pcall(db.driver.query, conn, sql, bindings)
    t.on_abandon = false
    if not ok then error(rows, 0) end
    return rows, affected
end

local function run(db, sql, bindings)
    if type(sql) ~= "string" then error("luaworker.db: expected SQL text, got " .. type(sql), 3) end
    local conn, pinned = acquire(db)
    local ok, rows, affected = pcall(run_on, db, conn, sql, bindings)
    if not pinned then release(db, conn) end
    if not ok then error(rows, 0) end
    return rows, affected
end

function Db:select(sql, bindings) return (run(self, sql, bindings)) end
function Db:insert(sql, bindings) run(self, sql, bindings) return true end
function Db:update(sql, bindings) return select(2, run(self, sql, bindings)) end
function Db:delete(sql, bindings) return select(2, run(self, sql, bindings)) end
function Db:statement(sql, bindings) run(self, sql, bindings) return true end

-- Runs fn(db) in a transaction on a connection of its own: committed when fn
-- returns (its results returned), rolled back when it raises (the error raised
-- again). Calls on this db from the same job inside fn go to that connection.
function Db:transaction(fn)
    local t = task.current() or false
    if self.pinned[t] then error("luaworker.db: a transaction is already open on " .. self.name, 2) end
    local conn = acquire(self)
    local ok, err = pcall(run_on, self, conn, self.driver.begin or "BEGIN")
    if not ok then
        release(self, conn)
        error(err, 0)
    end
    self.pinned[t] = conn
    local results = { pcall(fn, self) }
    self.pinned[t] = nil
    if results[1] then
        ok, err = pcall(run_on, self, conn, "COMMIT")
        release(self, conn)
        if not ok then error(err, 0) end
        return unpack(results, 2, table.maxn(results))
    end
    pcall(run_on, self, conn, "ROLLBACK")
    release(self, conn)
    error(results[2], 0)
end

local dbs = {}

-- The db for the app's connection name (default DB_CONNECTION, else mysql, as
-- Laravel's default).
function M.connection(name)
    name = name or env("DB_CONNECTION", "mysql")
    if type(name) ~= "string" then
        error("luaworker.db(name): expected a connection name, got " .. type(name), 2)
    end
    local db = dbs[name]
    if db then return db end
    -- DATABASE_URL's scheme names the driver, as in Laravel
    local u = database_url()
    local driver_name = u and u.driver or DRIVERS[name] or name
    local driver = drivers[driver_name]
    if not driver then
        error("luaworker.db: connection " .. name .. " (driver " .. driver_name
            .. ") is not supported yet: pgsql, mysql, mariadb and sqlite are", 2)
    end
    db = setmetatable({ name = name, driver = driver, driver_name = driver_name,
        settings = driver.settings(), idle = {},
        pinned = setmetatable({}, { __mode = "k" }) }, Db)
    dbs[name] = db
    return db
end

return M
