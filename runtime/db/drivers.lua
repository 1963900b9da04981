-- luaworker.db.drivers: the database drivers under luaworker.db (pgsql, mysql and
-- mariadb, sqlite), their settings as the app's config/database.php reads them,
-- bindings as Laravel and PDO send them, and errors worded as PDO's (raised as
-- driver errors, M.fail, which luaworker.db makes Laravel's QueryException).
--
-- Settings: DB_HOST, DB_PORT, DB_DATABASE, DB_USERNAME, DB_PASSWORD, DB_SOCKET,
-- DB_CHARSET, DB_COLLATION, MYSQL_ATTR_SSL_CA, and DATABASE_URL over them (its
-- scheme names the driver, as in Laravel), from the environment (and the .env the
-- worker reads).
--
-- Bindings (Connection::prepareBindings, then PDO): NULL for nil and luaworker.null;
-- a boolean as the integer 1 or 0; an integral number below 2^53 as an integer; any
-- other number as PHP's (string) of a float (precision 14: "0.1", "1.0E+25"), since
-- Laravel binds floats as PDO::PARAM_STR; an int64 cdata by its digits; a string as
-- it is. The count of bindings must be the count of `?` placeholders (outside
-- quotes and comments), else SQLSTATE[HY093], as PDO.
--
-- A driver: settings() -> what connect needs; details(settings) -> {host, port,
-- database, socket} as Laravel's QueryException names them; connect(db) -> a
-- connection or raises; alive(conn); in_transaction(conn) (optional); close(conn); query(conn,
-- sql, bindings) -> rows, affected or raises; begin (optional: the statement that
-- starts a transaction); for a server that goes on with a statement whose
-- connection closed: id(conn) -> the connection's id on the server, and ending(id)
-- -> the statement that ends it.
local host = require "luaworker.host"
local php = require "luaworker.php"

local M = {}

local sqlstates = require "luaworker.db.sqlstates"
local settings = require "luaworker.base.settings"
local values = require "luaworker.base.values"
local backoff = require "luaworker.base.backoff"

local env = settings.env

-- A driver's error: text, PDO's message ("SQLSTATE[42P01]: Undefined table: 7
-- ERROR:  relation ..."); state, its SQLSTATE (nil for one of luaworker's own, a
-- result too big); lost, whether the connection failed or could not be made.
-- luaworker.db makes it Laravel's QueryException, adding the SQL and the connection.
local DriverError = {}
DriverError.__index = DriverError

local function fail(text, state, lost)
    error(setmetatable({ text = text, state = state, lost = lost or false }, DriverError), 0)
end
M.fail = fail

function M.is_error(v)
    return getmetatable(v) == DriverError
end

-- message without the line breaks it ends with, as PDO trims a driver's message.
local function trimmed(message)
    return ((message or ""):gsub("[\r\n]+$", ""))
end

-- PDO's message for a statement's error: "SQLSTATE[<state>]: <PDO's words>: <code>
-- <message>".
local function statement_error(state, code, message, lost)
    state = state or "HY000"
    fail(string.format("SQLSTATE[%s]: %s: %s %s", state, sqlstates.words(state), tostring(code),
        trimmed(message)), state, lost)
end

-- Drivers by Laravel's connection names (config/database.php).
local DRIVERS = { pgsql = "pgsql", mysql = "mysql", mariadb = "mysql", sqlite = "sqlite",
    sqlsrv = "sqlsrv" }

local function percent_decode(v)
    return v and (v:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end))
end

-- DATABASE_URL (DB_URL) as Laravel's ConfigurationUrlParser reads it: the driver (its scheme),
-- host, port, username, password, database (the path), and the query's options; nil
-- when it is not set.
local URL_DRIVERS = { postgres = "pgsql", postgresql = "pgsql", pgsql = "pgsql",
    sqlite = "sqlite", sqlite3 = "sqlite", mysql = "mysql", mysql2 = "mysql",
    mariadb = "mysql" }

-- The variable is DB_URL from Laravel 11 on (its config/database.php's name),
-- DATABASE_URL before; the other name is read when the version's is not set.
local function database_url()
    local names = settings.laravel_at_least(11, 0) and { "DB_URL", "DATABASE_URL" }
        or { "DATABASE_URL", "DB_URL" }
    local name, url = names[1], env(names[1])
    if not url then name, url = names[2], env(names[2]) end
    if not url then return nil end
    local scheme, rest = url:match("^([%w+.-]+)://(.*)$")
    if not scheme then
        error("luaworker.db: " .. name .. " is not a URL such as pgsql://user:password@host:port/"
            .. "database", 5)
    end
    local authority, path, query = rest:match("^([^/?]*)(/?[^?]*)%??(.*)$")
    local userinfo, hostport = authority:match("^(.*)@(.*)$")
    hostport = hostport or authority
    local user, password = (userinfo or ""):match("^([^:]*):?(.*)$")
    local h, port = hostport:match("^%[(.*)%]:?(%d*)$")
    if not h then h, port = hostport:match("^([^:]*):?(%d*)$") end
    local u = { driver = URL_DRIVERS[scheme:lower()] or scheme:lower(), options = {},
        host = h ~= "" and percent_decode(h) or nil, port = port ~= "" and port or nil,
        username = user ~= "" and percent_decode(user) or nil,
        password = password ~= "" and percent_decode(password) or nil,
        database = path:len() > 1 and percent_decode(path:sub(2)) or nil }
    for k, v in query:gmatch("([^&=]+)=([^&]*)") do u.options[percent_decode(k)] = percent_decode(v) end
    return u
end

-- `?` placeholders as $1, $2... outside quoted strings, identifiers (in double
-- quotes, or MySQL's backticks) and comments; and their count.
local function numbered(sql)
    local out, n, i, len = {}, 0, 1, #sql
    while i <= len do
        local c = sql:sub(i, i)
        if c == "'" or c == '"' or c == "`" then
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
            local j = sql:find("['\"`?%-]", i) or len + 1
            if j == i then j = i + 1 end
            out[#out + 1] = sql:sub(i, j - 1)
            i = j
        end
    end
    return table.concat(out), n
end

-- Checks bindings against sql's placeholders (raises HY093 as PDO, or a usage
-- error for what is not a list); returns the count of placeholders.
function M.check_bindings(sql, bindings)
    if type(bindings) ~= "table" then
        error("luaworker.db: bindings must be a list, got " .. type(bindings), 0)
    end
    local _, n = numbered(sql)
    local given = table.maxn(bindings)
    if given ~= n then
        fail(string.format("SQLSTATE[HY093]: Invalid parameter number: number of bound variables does "
            .. "not match number of tokens (%d bound, %d expected; a NULL is luaworker.null, not nil)",
            given, n), "HY093")
    end
    return n
end

local TWO_53 = 2 ^ 53

-- A binding as Laravel and PDO send it (see the top): nil for NULL, true/false for
-- a boolean's 1/0 where the driver binds integers, a number for an integer, a
-- string otherwise.
local function binding(v, i)
    if v == nil or v == values.null then return nil end
    local t = type(v)
    if t == "string" then return v end
    if t == "boolean" then return v and 1 or 0 end
    if t == "number" then
        if v ~= v or v == math.huge or v == -math.huge then
            error("luaworker.db: binding " .. i .. " is " .. tostring(v) .. ": not a value SQL has", 0)
        end
        if v == math.floor(v) and math.abs(v) < TWO_53 then return v end
        return php.float_string(v)
    end
    if t == "cdata" then return (tostring(v):gsub("U?LL$", "")) end
    error("luaworker.db: binding " .. i .. " is a " .. t .. ": expected a string, number, boolean "
        .. "or luaworker.null", 0)
end

-- An integer binding's digits.
local function digits(v)
    return string.format("%d", v)
end

-- PostgreSQL (libpq's asynchronous API) ------------------------------------------

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

local drivers = {}

drivers.pgsql = {
    settings = pgsql_settings,
    details = function(s) return { host = s.host, port = s.port, database = s.dbname } end,
    connect = function(db)
        local conn, message = host.pg_open(db.settings)
        local ok = conn and true
        if conn then ok, message = host.pg_connected(conn) end
        if not ok then
            if conn then host.pg_close(conn) end
            -- PDO's form for a failed connect: SQLSTATE[08006] [7] connection to server ...
            fail(string.format("SQLSTATE[08006] [7] %s", trimmed(message)), "08006", true)
        end
        return conn
    end,
    alive = function(conn) return host.pg_alive(conn) end,
    in_transaction = function(conn) return host.pg_in_transaction(conn) end,
    close = function(conn) host.pg_close(conn) end,
    id = function(conn) return host.pg_backend_pid(conn) end,
    ending = function(pid) return string.format("select pg_terminate_backend(%d)", pid) end,
    query = function(conn, sql, bindings, n)
        local text = numbered(sql)
        local params = {}
        for i = 1, n do
            local v = binding(bindings[i], i)
            if v == nil then v = false elseif type(v) == "number" then v = digits(v) end
            params[i] = v
        end
        -- true, rows, affected | false, message, kind, sqlstate (vm_push_error's shape)
        local ok, a, b, state = host.pg_query(conn, text, n, unpack(params, 1, n))
        if not ok then
            local message, kind = a, b
            if kind == "memory" then fail(message) end
            if kind == "connection" then host.pg_close(conn) end
            -- 7: libpq's PGRES_FATAL_ERROR, the code PDO gives every pgsql error
            statement_error(state, 7, message, kind == "connection")
        end
        return a, b
    end,
}

-- MySQL / MariaDB (Laravel's mysql connection; mariadb in Laravel 11+) ------------

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

-- A statement whose packet passes the server's max_allowed_packet is refused before
-- it is sent, with the error the server gives it (1153), since the server may
-- instead just close the connection, which then reads as a lost one ("2006 Server
-- has gone away") and is waited out for good. The limit is asked of the server
-- once per connection, for the first statement over PACKET_CHECKED_FROM bytes.
local PACKET_CHECKED_FROM = 65536
local PACKET_MARGIN = 1024          -- the packet's own bytes beyond the values
local max_packets = setmetatable({}, { __mode = "k" })  -- connection -> its limit

-- Runs sql with the n values params (bound already) on conn: rows and the rows
-- affected, or raises the statement's QueryException (a lost connection closed
-- first).
local function mysql_execute(conn, sql, n, params)
    -- true, rows, affected | false, message, kind, sqlstate, errno (vm_push_error's)
    local ok, a, b, state, errno = host.mysql_query(conn, sql, n, unpack(params, 1, n))
    if not ok then
        local message, kind = a, b
        if kind == "memory" then fail(message) end
        if kind == "connection" then host.mysql_close(conn) end
        statement_error(state, errno, message, kind == "connection")
    end
    return a, b
end

local function check_packet(conn, bytes)
    local limit = max_packets[conn]
    if not limit then
        local rows = mysql_execute(conn, "select @@max_allowed_packet as m", 0, {})
        limit = tonumber(rows[1] and rows[1].m) or math.huge
        max_packets[conn] = limit
    end
    if bytes + PACKET_MARGIN > limit then
        statement_error("08S01", 1153, "Got a packet bigger than 'max_allowed_packet' bytes")
    end
end

-- The driver's query: binds the values, refuses a packet past the server's limit,
-- then runs the statement.
local function mysql_query(conn, sql, bindings, n)
    local params, bytes = {}, #sql
    for i = 1, n do
        local v = binding(bindings[i], i)
        params[i] = v
        bytes = bytes + (type(v) == "string" and #v or 0) + 9
    end
    if bytes > PACKET_CHECKED_FROM then check_packet(conn, bytes) end
    return mysql_execute(conn, sql, n, params)
end

drivers.mysql = {
    settings = mysql_settings,
    details = function(s) return { host = s.host, port = s.port, database = s.database, socket = s.socket } end,
    connect = function(db)
        local conn, message = host.mysql_open(db.settings)
        local ok, state, errno = conn and true, "HY000", 2000
        if conn then
            local _kind
            ok, message, _kind, state, errno = host.mysql_connected(conn)
        end
        if not ok then
            if conn then host.mysql_close(conn) end
            -- PDO's form for a failed connect: SQLSTATE[HY000] [2002] Connection refused
            fail(string.format("SQLSTATE[%s] [%d] %s%s", state, errno, trimmed(message),
                M.unconfigured_hint()), state, true)
        end
        return conn
    end,
    alive = function(conn) return host.mysql_alive(conn) end,
    in_transaction = function(conn) return host.mysql_in_transaction(conn) end,
    close = function(conn) host.mysql_close(conn) end,
    id = function(conn) return host.mysql_thread_id(conn) end,
    ending = function(id) return string.format("KILL %d", id) end,
    query = mysql_query,
}

-- SQLite (libsqlite3, in place) -----------------------------------------------------

-- SQLite's result codes for a database another connection holds (BUSY, LOCKED and
-- their extended codes): waited out.
local SQLITE_BUSY = { [5] = true, [6] = true, [261] = true, [262] = true, [517] = true }
local SQLITE_WAIT_FIRST, SQLITE_WAIT_MAX = 0.005, 0.1
-- The SQLSTATEs PDO gives SQLite's result codes (else HY000): NOTFOUND, INTERRUPT,
-- NOLFS, TOOBIG, CONSTRAINT.
local SQLITE_STATES = { [12] = "42S02", [9] = "01002", [22] = "HYC00", [18] = "22001",
    [19] = "23000" }

drivers.sqlite = {
    -- the write lock at once: a transaction that read and then waits to write could
    -- wait forever for another that read too (SQLite does not wait them out)
    begin = "BEGIN IMMEDIATE",
    details = function(s) return { database = s.path } end,
    settings = function()
        local u = database_url()
        local path = u and u.database and "/" .. u.database or env("DB_DATABASE")
        if not path then
            local app = settings.app_dir()
            if app then path = app .. "/database/database.sqlite" end
        end
        if not path then
            error("luaworker.db: the sqlite connection needs DB_DATABASE (the database file), or "
                .. "--env-file for the app's database/database.sqlite", 5)
        end
        return { path = path }
    end,
    connect = function(db)
        local path = db.settings.path
        if not (path == ":memory:" or path:find("[?&]mode=memory")) and not host.file_kind(path) then
            -- as Laravel's SQLiteConnector, which opens no file that is not there
            -- (SQLite would make an empty one): lasting, not an outage
            local app = settings.app_dir()
            if app and path:sub(1, 1) ~= "/" and host.file_kind(app .. "/" .. path) then
                -- (11+'s base_path($path); for 8-10 too: luaworker's directory need
                -- not be the app's, where artisan runs)
                path = app .. "/" .. path
                db.settings.path = path
            else
                fail(settings.laravel_at_least(11, 0)
                    and "Database file at path [" .. path .. "] does not exist. Ensure this is an absolute "
                        .. "path to the database."
                    or "Database (" .. path .. ") does not exist.")
            end
        end
        -- a lock is waited out here, without blocking the loop (busy timeout 0)
        local conn, message = host.sqlite_open(path, 0)
        if not conn then fail("SQLSTATE[HY000] [14] " .. message, "HY000", true) end
        return conn
    end,
    alive = function() return true end,
    in_transaction = function(conn) return host.sqlite_in_transaction(conn) end,
    close = function(conn) host.sqlite_close(conn) end,
    query = function(conn, sql, bindings, n)
        local params = {}
        for i = 1, n do
            local v = binding(bindings[i], i)
            if v == nil then v = false end
            params[i] = v
        end
        local waits = backoff.new(SQLITE_WAIT_FIRST, SQLITE_WAIT_MAX)
        while true do
            -- true, rows, changes | false, message, kind, code (vm_push_error's shape)
            local ok, a, b, code = host.sqlite_query(conn, sql, n, unpack(params, 1, n))
            if ok then return a, b end
            local message, kind = a, b
            if kind == "memory" then fail(message) end
            if not SQLITE_BUSY[code] then
                -- PDO's: the primary result code, and the SQLSTATE it maps it to
                local primary = code % 256
                statement_error(SQLITE_STATES[primary] or "HY000", primary, message)
            end
            host.sleep(waits:next())
        end
    end,
}

-- The driver for the app's connection name: the driver, its name, its settings.
-- Raises for a driver luaworker does not have.
function M.driver(name)
    -- DATABASE_URL's scheme names the driver, as in Laravel
    local u = database_url()
    local driver_name = u and u.driver or DRIVERS[name] or name
    local driver = drivers[driver_name]
    if not driver then
        error("luaworker.db: connection " .. name .. " (driver " .. driver_name
            .. ") is not supported yet: pgsql, mysql, mariadb and sqlite are", 3)
    end
    return driver, driver_name, driver.settings()
end

-- The default connection's name: DB_CONNECTION, else Laravel's default (mysql
-- before 11, sqlite from 11: config/database.php's 'default').
function M.default_name()
    return env("DB_CONNECTION", settings.laravel_at_least(11, 0) and "sqlite" or "mysql")
end

-- Words to add to a connect failure when nothing names the app's database (no
-- DB_CONNECTION, no DB_HOST, DB_DATABASE or URL): luaworker then ran without the
-- app's .env, and tried Laravel's defaults. "" otherwise.
function M.unconfigured_hint()
    for _, name in ipairs({ "DB_CONNECTION", "DB_HOST", "DB_DATABASE", "DB_SOCKET", "DATABASE_URL", "DB_URL" }) do
        if env(name) then return "" end
    end
    return " (no DB_CONNECTION nor DB_ variable is set, and Laravel's default connection was "
        .. "tried: give luaworker the app's .env with --env-file)"
end

return M
