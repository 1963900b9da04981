-- Spec helpers: a client of the private redis-server spec/run started, the
-- luaworker binary run as a user runs it (a subprocess, with a deadline), handler
-- directories made per spec, and the Laravel 8 app in examples/laravel.
local redis = require "redis"
local cjson = require "cjson"

local H = {}

-- Each busted process its own sequence (spec/run runs two at once): the ports the
-- specs pick for their servers must not collide.
do
    local f = io.open("/dev/urandom", "rb")
    local b = f and f:read(4) or ""
    if f then f:close() end
    local seed = os.time()
    for i = 1, #b do seed = seed * 256 + b:byte(i) end
    math.randomseed(seed % 2147483647)
end

H.root = os.getenv("PWD")
H.port = tonumber(os.getenv("LUAWORKER_SPEC_REDIS_PORT") or "")
assert(H.port, "LUAWORKER_SPEC_REDIS_PORT is not set: run the specs with spec/run")
H.tmp = os.getenv("LUAWORKER_SPEC_TMP") or "/tmp"
-- The Laravel 8 app the specs drive: spec/run gives each shard a copy of
-- examples/laravel of its own (its database and caches are files).
H.app = os.getenv("LUAWORKER_SPEC_APP") or H.root .. "/examples/laravel"
H.json = cjson
H.prefix = "laravel_database_"
H.cache_prefix = "laravel_database_laravel_cache:"

local clients = {}

-- A client on database db (default 0).
function H.client(db)
    db = db or 0
    if not clients[db] then
        local c = redis.connect("127.0.0.1", H.port)
        if db ~= 0 then c:select(db) end
        clients[db] = c
    end
    return clients[db]
end

local commands = {}

-- H.r("CMD", args...) runs a command on database 0; H.rdb(db, "CMD", ...) on db.
function H.rdb(db, cmd, ...)
    local f = commands[cmd]
    if not f then
        f = redis.command(cmd:upper())
        commands[cmd] = f
    end
    return f(H.client(db), ...)
end

function H.r(cmd, ...)
    return H.rdb(0, cmd, ...)
end

-- HGETALL of key as a table (empty when the key does not exist).
function H.hash(key, db)
    local flat, t = H.rdb(db or 0, "HGETALL", key), {}
    for i = 1, #flat, 2 do t[flat[i]] = flat[i + 1] end
    return t
end

-- ZRANGE key 0 -1 WITHSCORES as a list of {member, score}.
function H.zscores(key)
    local flat, t = H.r("ZRANGE", key, 0, -1, "WITHSCORES"), {}
    for i = 1, #flat, 2 do t[#t + 1] = { flat[i], tonumber(flat[i + 1]) } end
    return t
end

-- The failed-job record with id (luaworker's store), as a table.
function H.failed_record(id)
    return H.hash(H.prefix .. "luaworker:failed_jobs:" .. id)
end

function H.flush()
    H.r("FLUSHALL")
end

-- Every key of database 0 and its DUMP, for H.restore to put the same state back.
function H.snapshot()
    local keys = {}
    for _, k in ipairs(H.r("KEYS", "*")) do keys[k] = H.r("DUMP", k) end
    return keys
end

function H.restore(keys)
    H.flush()
    for k, v in pairs(keys) do H.r("RESTORE", k, 0, v) end
end

-- The four keys of queue q with the default prefix.
function H.keys(q)
    local k = H.prefix .. "queues:" .. (q or "default")
    return k, k .. ":delayed", k .. ":reserved", k .. ":notify"
end

local function quote(s)
    return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end
H.quote = quote

local counter = 0

-- A fresh directory under the run's temporary directory.
function H.tmpdir()
    counter = counter + 1
    local dir = string.format("%s/d%d-%d", H.tmp, counter, math.random(1e9))
    assert(os.execute("mkdir -p " .. quote(dir)))
    return dir
end

function H.write_file(path, text)
    assert(os.execute("mkdir -p " .. quote(path:match("^(.*)/[^/]*$"))))
    local f = assert(io.open(path, "wb"))
    f:write(text)
    f:close()
end

function H.read_file(path)
    local f = io.open(path, "rb")
    if not f then return nil end
    local s = f:read("*a")
    f:close()
    return s
end

-- A handler directory holding files { ["App/Jobs/X.lua"] = "source", ... }.
function H.handlers(files)
    local dir = H.tmpdir()
    for name, text in pairs(files) do H.write_file(dir .. "/" .. name, text) end
    return dir
end

-- "env [-u NAME]... NAME=value..." for the extra environment (false unsets a name).
local function env_prefix(env)
    local unset, set = { "env" }, { "REDIS_HOST=127.0.0.1", "REDIS_PORT=" .. H.port }
    for k, v in pairs(env or {}) do
        if v == false then
            unset[#unset + 1] = "-u " .. k
        else
            set[#set + 1] = k .. "=" .. quote(v)
        end
    end
    return table.concat(unset, " ") .. " " .. table.concat(set, " ")
end

local function command_line(args, env)
    local words = { env_prefix(env), quote(H.root .. "/luaworker") }
    for _, a in ipairs(args) do words[#words + 1] = quote(a) end
    return table.concat(words, " ")
end

-- Whether program is on PATH (a tool a spec runs where it is installed).
function H.installed(program)
    local ok = os.execute("command -v " .. program .. " >/dev/null 2>&1")
    return ok == true or ok == 0
end

-- Runs the shell command cmd; returns its exit status (0 on success) and what it
-- wrote, standard error with standard output (or dropped, with drop_stderr).
function H.sh(cmd, drop_stderr)
    local p = io.popen(cmd .. (drop_stderr and " 2>/dev/null" or " 2>&1"))
    local out = p:read("*a")
    local ok, _, status = p:close()
    return ok and 0 or status, out
end

-- Runs luaworker with args (a list) and returns {status, stdout, stderr} (status
-- 128+n for signal n).
-- opts.env: extra environment (false unsets); opts.timeout: seconds (default 60);
-- opts.cwd: the directory it runs in (default the repository's); opts.stdin: a
-- file for its standard input.
function H.run(args, opts)
    opts = opts or {}
    local dir = H.tmpdir()
    local cmd = string.format("cd %s && timeout -s KILL %d %s >%s/out 2>%s/err <%s",
        quote(opts.cwd or H.root), opts.timeout or 60, command_line(args, opts.env), dir, dir,
        quote(opts.stdin or "/dev/null"))
    local _, how, status = os.execute(cmd)
    if how == "signal" then status = 128 + status end  -- the shell itself was killed
    return { status = status, stdout = H.read_file(dir .. "/out"), stderr = H.read_file(dir .. "/err") }
end

local function sleep(s)
    os.execute("sleep " .. s)
end
H.sleep = sleep

-- Polls fn every 50 ms until it returns a true value (returned) or timeout seconds
-- pass (then raises with what, or returns nil when opts.soft).
function H.wait_until(fn, timeout, what)
    local deadline = os.time() + (timeout or 10)
    repeat
        local v = fn()
        if v then return v end
        sleep(0.05)
    until os.time() > deadline
    error("timed out waiting for " .. (what or "a condition"), 2)
end

local Proc = {}
Proc.__index = Proc

-- Starts luaworker in the background. Returns a process with pid, kill(sig),
-- kill_group(sig), wait(timeout) -> exit status (128+n for signal n), stdout(),
-- stderr(). opts.env: extra environment (false unsets); opts.group: in a process
-- group of its own (setsid: its pid is the group's), for kill_group.
function H.spawn(args, opts)
    opts = opts or {}
    local dir = H.tmpdir()
    local cmd = string.format("cd %s && ( %s%s >%s/out 2>%s/err </dev/null & echo $! >%s/pid; "
        .. "wait $!; echo $? >%s/status.tmp; mv %s/status.tmp %s/status ) >/dev/null 2>&1 &",
        quote(H.root), opts.group and "setsid " or "", command_line(args, opts.env), dir, dir, dir,
        dir, dir, dir)
    assert(os.execute(cmd))
    local p = setmetatable({ dir = dir }, Proc)
    p.pid = tonumber(H.wait_until(function()
        local s = H.read_file(dir .. "/pid")
        return s and s:match("%d+")
    end, 10, "the worker's pid"))
    return p
end

function Proc:kill(sig)
    os.execute("kill -" .. (sig or "TERM") .. " " .. self.pid .. " 2>/dev/null")
end

-- Sends sig to the whole process group of a process spawned with opts.group: the
-- supervisor and its workers get it in one kill(2), none acts in between (a worker
-- whose supervisor died first would hear TERM, see spawn in supervisor.c).
function Proc:kill_group(sig)
    os.execute("kill -" .. (sig or "TERM") .. " -" .. self.pid .. " 2>/dev/null")
end

function Proc:status()
    local s = H.read_file(self.dir .. "/status")
    return s and tonumber(s:match("%d+"))
end

function Proc:wait(timeout)
    local ok, status = pcall(H.wait_until, function() return self:status() end, timeout or 20,
        "the worker to exit")
    if not ok then
        self:kill("KILL")
        error(status, 2)
    end
    return status
end

-- The pids of the processes pid started (a supervisor's workers).
function H.children(pid)
    local f = io.popen("pgrep -P " .. pid)
    local pids = {}
    for p in f:read("*a"):gmatch("%d+") do pids[#pids + 1] = tonumber(p) end
    f:close()
    return pids
end

function Proc:stdout() return H.read_file(self.dir .. "/out") or "" end
function Proc:stderr() return H.read_file(self.dir .. "/err") or "" end

-- Workers a describe block starts with spawn(args, opts) (as H.spawn), and PHP's
-- with artisan(args, env) (as H.spawn_artisan), each stopped by stop_all, which the
-- block calls in its after_each.
function H.worker_set()
    local set, phps = {}, {}
    function set.spawn(args, opts)
        local w = H.spawn(args, opts)
        set[#set + 1] = w
        return w
    end
    function set.artisan(args, env)
        local p = H.spawn_artisan(args, env)
        phps[#phps + 1] = p
        return p
    end
    function set.stop_all()
        for i = #phps, 1, -1 do
            phps[i].stop()
            phps[i] = nil
        end
        for i = #set, 1, -1 do
            set[i]:stop()
            set[i] = nil
        end
    end
    return set
end

-- Stops a worker still running at the end of a spec.
function Proc:stop()
    if not self:status() then
        self:kill("TERM")
        -- (not Proc.wait, which kills the process alone at its deadline: a supervisor
        -- whose workers then go on, orphaned)
        pcall(H.wait_until, function() return self:status() end, 10)
        if not self:status() then
            -- its workers too: they would go on, orphaned, after the spec
            for _, child in ipairs(H.children(self.pid)) do
                os.execute("kill -KILL " .. child .. " 2>/dev/null")
            end
            self:kill("KILL")
        end
    end
end

-- What the sqlite3 shell prints for sql on the database file (columns joined by '|').
function H.sqlite(file, sql)
    -- (a lock a worker holds is waited for, up to 5 s)
    local f = io.popen("sqlite3 -cmd '.timeout 5000' -separator '|' " .. H.quote(file) .. " " .. H.quote(sql))
    local out = f:read("*a")
    f:close()
    return out
end

-- A Laravel-format payload (8.83 field set) for a job class, with overrides.
function H.payload(fields)
    local p = {
        uuid = string.format("%08x-0000-4000-8000-%012x", math.random(0, 0x7fffffff), math.random(0, 0x7fffffff)),
        displayName = "App\\Jobs\\Spec",
        job = "Illuminate\\Queue\\CallQueuedHandler@call",
        maxTries = cjson.null, maxExceptions = cjson.null, failOnTimeout = false,
        backoff = cjson.null, timeout = cjson.null, retryUntil = cjson.null,
        data = { commandName = "App\\Jobs\\Spec",
                 command = 'O:13:"App\\Jobs\\Spec":1:{s:1:"n";i:1;}' },
        id = string.format("spec%028d", math.random(0, 1e9)),
        attempts = 0,
    }
    for k, v in pairs(fields or {}) do p[k] = v end
    return p
end

-- A payload of job class `class`, with overrides; its command has the properties
-- (a list of {name, PHP-serialized value}, none when nil).
function H.class_payload(class, fields, properties)
    fields = fields or {}
    properties = properties or {}
    local members = {}
    for i, p in ipairs(properties) do members[i] = string.format('s:%d:"%s";%s', #p[1], p[1], p[2]) end
    fields.displayName = class
    fields.data = { commandName = class, command = string.format('O:%d:"%s":%d:{%s}', #class, class,
        #properties, table.concat(members)) }
    return H.payload(fields)
end

-- A handler that records each job's payload id in the list spec:ran.
H.RECORD_ID = [[
local lw = require "luaworker"
return { handle = function(job) lw.redis("RPUSH", "spec:ran", job:payload().id) end }
]]

-- Pushes a payload (table or raw string) as Laravel's push script does.
function H.push(payload, q)
    local text = type(payload) == "table" and cjson.encode(payload) or payload
    local list, _, _, notify = H.keys(q)
    H.r("RPUSH", list, text)
    H.r("RPUSH", notify, "1")
    return text
end

-- Runs the Laravel 8 app's artisan (H.app's) with args; returns stdout, or raises
-- with its output.
function H.artisan(args, env)
    local words = { env_prefix(env), "php", quote(H.app .. "/artisan") }
    for _, a in ipairs(args) do words[#words + 1] = quote(a) end
    local out = H.tmpdir() .. "/artisan.out"
    local ok = os.execute(table.concat(words, " ") .. " >" .. out .. " 2>&1 </dev/null")
    local text = H.read_file(out) or ""
    if not ok then error("artisan " .. table.concat(args, " ") .. " failed:\n" .. text, 2) end
    return text
end

-- Waits up to `seconds` for n runs to have ended on the overlap trail at key (see
-- H.runs_without_overlap), then returns its runs, each once, by runtime: runs,
-- {lua =, php =}. Raises when one overlapped another or ran twice.
function H.overlap_runs(key, n, seconds)
    H.wait_until(function()
        local ends = 0
        for _, e in ipairs(H.r("LRANGE", key, 0, -1)) do
            if e:match("^e ") then ends = ends + 1 end
        end
        return ends == n
    end, seconds, "the " .. n .. " jobs")
    local runs, seen, by = H.runs_without_overlap(H.r("LRANGE", key, 0, -1)), {}, { lua = 0, php = 0 }
    for _, r in ipairs(runs) do
        assert(not seen[r.n], "job " .. r.n .. " ran twice")
        seen[r.n] = true
        by[r.by] = by[r.by] + 1
    end
    return runs, by
end

-- The runs on an overlap trail (a list of "s <n> <by>" as a run starts and "e <n>
-- <by>" as it ends, examples/laravel's App\Jobs\Overlapping and its Lua twin):
-- {n =, by =} in order of their start; raises when one started while another was
-- running. Other entries are passed over.
function H.runs_without_overlap(trail)
    local open, runs = nil, {}
    for _, entry in ipairs(trail) do
        local kind, n, by = entry:match("^(%a) (%S+) (%a+)$")
        if kind == "s" then
            assert(open == nil, "run " .. n .. " (" .. by .. ") started while " .. tostring(open) .. " ran")
            open = n .. " " .. by
            runs[#runs + 1] = { n = n, by = by }
        elseif kind == "e" then
            assert(open == n .. " " .. by, "run " .. n .. " ended, not the one that ran")
            open = nil
        end
    end
    return runs
end

-- Runs `jobs:dispatch` and returns the pushed jobs as a list of {id =, uuid =}.
function H.dispatch(job, ...)
    local args = { "jobs:dispatch", job }
    for _, a in ipairs({ ... }) do args[#args + 1] = a end
    local out = H.artisan(args)
    local pushed = {}
    for id, uuid in out:gmatch("(%S+) (%S+)\n") do
        pushed[#pushed + 1] = { id = id, uuid = uuid }
    end
    return pushed
end

-- The JSON strings of list key, decoded.
function H.json_list(key)
    local out = {}
    for i, s in ipairs(H.r("LRANGE", key, 0, -1)) do out[i] = cjson.decode(s) end
    return out
end

-- `php artisan <args>` in the background, as H.spawn does for luaworker; env: extra
-- environment, as H.artisan's.
function H.spawn_artisan(args, env)
    local dir = H.tmpdir()
    local words = { env_prefix(env), "php", H.quote(H.app .. "/artisan") }
    for _, a in ipairs(args) do words[#words + 1] = H.quote(a) end
    local cmd = string.format("( %s >%s/out 2>&1 </dev/null & echo $! >%s/pid; wait $!; "
        .. "echo $? >%s/status.tmp; mv %s/status.tmp %s/status ) >/dev/null 2>&1 &",
        table.concat(words, " "), dir, dir, dir, dir, dir)
    assert(os.execute(cmd))
    local p = { dir = dir }
    p.pid = tonumber(H.wait_until(function()
        local s = H.read_file(dir .. "/pid")
        return s and s:match("%d+")
    end, 10, "php's pid"))
    function p.status()
        local s = H.read_file(dir .. "/status")
        return s and tonumber(s:match("%d+"))
    end
    function p.output() return H.read_file(dir .. "/out") or "" end
    function p.wait(timeout)
        local ok, err = pcall(H.wait_until, p.status, timeout or 20, "php artisan " .. args[1] .. " to exit")
        if not ok then
            os.execute("kill -KILL " .. p.pid .. " 2>/dev/null")
            error(err .. "\n" .. p.output(), 2)
        end
        return p.status()
    end
    function p.stop()
        if not p.status() then
            os.execute("kill -TERM " .. p.pid .. " 2>/dev/null")
            pcall(H.wait_until, p.status, 5)
            if not p.status() then os.execute("kill -KILL " .. p.pid .. " 2>/dev/null") end
        end
    end
    return p
end

-- A private MariaDB (examples/private-mariadb.sh) in a directory of its own, with
-- database "app" and user "luaworker": {port, socket, password, env(extra) (the DB_
-- variables of its mysql connection, with extra), root(sql) (as root on the
-- socket, in app; returns the output), stop() (at once, a crash as clients see it),
-- serve() (again, on its port), remove() (stopped and thrown away)}.
function H.mariadb()
    local f = io.popen("mktemp -d /tmp/luaworker-mariadb.XXXXXX")
    local db = { dir = f:read("*l") }
    f:close()
    local function script(call)
        return "bash -c " .. quote(". " .. H.root .. "/examples/private-mariadb.sh && " .. call)
    end
    f = io.popen(script("private_mariadb_start " .. quote(db.dir) .. " && echo $private_mariadb_port "
        .. "$private_mariadb_socket $private_mariadb_password"))
    local out = f:read("*a")
    f:close()
    db.port, db.socket, db.password = out:match("(%d+) (%S+) (%S+)")
    assert(db.port, "MariaDB did not start: " .. out .. (H.read_file(db.dir .. "/mariadb-install.log") or "")
        .. (H.read_file(db.dir .. "/mariadb.log") or ""))
    function db.env(extra)
        local e = { DB_CONNECTION = "mysql", DB_HOST = "127.0.0.1", DB_PORT = db.port,
            DB_DATABASE = "app", DB_USERNAME = "luaworker", DB_PASSWORD = db.password }
        for k, v in pairs(extra or {}) do e[k] = v end
        return e
    end
    function db.root(sql)
        local p = io.popen(string.format("mariadb --no-defaults -S %s -uroot -N app -e %s 2>&1",
            quote(db.socket), quote(sql)))
        local text = p:read("*a")
        p:close()
        return text
    end
    function db.stop() os.execute(script("private_mariadb_stop " .. quote(db.dir))) end
    function db.serve()
        assert(os.execute(script("private_mariadb_serve " .. quote(db.dir) .. " " .. db.port)))
    end
    function db.remove()
        db.stop()
        os.execute("rm -rf " .. quote(db.dir))
    end
    return db
end

local laravel_ready = false

-- The peak resident memory (VmHWM) of process pid, in kB.
function H.peak_kb(pid)
    local f = assert(io.open("/proc/" .. pid .. "/status"))
    local status = f:read("*a")
    f:close()
    return tonumber(status:match("VmHWM:%s*(%d+)"))
end

-- A loopback TCP port nothing listens on now, below the kernel's range for the local
-- ports of outgoing connections (32768 and up), so that no client socket takes it
-- before the caller's server binds it. A server that still finds it taken (another
-- spec's, in the other shard) is started again on another (see H.postgresql).
function H.free_port()
    local socket = require "socket"
    for _ = 1, 100 do
        local p = math.random(20000, 32000)
        local s = socket.tcp()
        local bound = s:bind("127.0.0.1", p)
        s:close()
        if bound then return p end
    end
    error("no free loopback port between 20000 and 32000")
end

-- COMMAND (a shell command line; its paths absolute) as the user nobody, from a
-- directory nobody can enter (examples/as-nobody.sh): the checkout may be one only
-- root can enter. A shell command line, to which the caller adds its redirections.
function H.as_nobody(command)
    return quote(H.root .. "/examples/as-nobody.sh") .. " " .. command
end

-- A throwaway PostgreSQL cluster (Debian's newest: initdb and pg_ctl as the user
-- nobody (H.as_nobody), in a directory of its own; TCP logins need the password,
-- scram-sha-256): {port, dir, password, bin, env(extra) (the DB_ variables of its
-- pgsql connection, with extra), psql(sql) (its output, through the trusted
-- socket), psql_command(sql) (the shell command that runs it), restart(), remove()}.
function H.postgresql()
    local bin = (io.popen("ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1"):read("*l")
        or "/usr/lib/postgresql/bin") .. "/"
    local f = io.popen("mktemp -d /tmp/luaworker-pg.XXXXXX")
    local pg = { dir = f:read("*l"), password = "spec-pg-pa55word", bin = bin }
    f:close()
    local function sh(cmd) assert(os.execute(cmd), cmd) end
    sh("chown nobody " .. H.quote(pg.dir))
    H.write_file(pg.dir .. "/pw", pg.password .. "\n")
    sh("chown nobody " .. H.quote(pg.dir .. "/pw"))
    sh(H.as_nobody(string.format("%sinitdb -D %s/data -U postgres --pwfile=%s/pw "
        .. "--auth-host=scram-sha-256 --auth-local=trust -E UTF8 --locale=C", bin, pg.dir, pg.dir))
        .. " >/dev/null 2>&1")
    -- a port taken between H.free_port and the start: another one
    local started, start
    for _ = 1, 5 do
        pg.port = H.free_port()
        start = H.as_nobody(string.format("%spg_ctl -D %s/data -l %s/log -w -o \"-p %d -k %s "
            .. "-c listen_addresses=127.0.0.1\" start", bin, pg.dir, pg.dir, pg.port, pg.dir))
            .. " >/dev/null 2>&1"
        started = os.execute(start)
        if started then break end
    end
    if not started then
        local log = H.read_file(pg.dir .. "/log") or ""
        os.execute("rm -rf " .. H.quote(pg.dir))
        error(start .. "\n" .. log, 2)
    end
    function pg.env(extra)
        local e = { DB_CONNECTION = "pgsql", DB_HOST = "127.0.0.1", DB_PORT = tostring(pg.port),
            DB_DATABASE = "postgres", DB_USERNAME = "postgres", DB_PASSWORD = pg.password }
        for k, v in pairs(extra or {}) do e[k] = v end
        return e
    end
    function pg.psql_command(sql)
        return H.as_nobody(string.format("%spsql -h %s -p %d -U postgres -At -c %s -q postgres",
            bin, pg.dir, pg.port, H.quote(sql)))
    end
    function pg.psql(sql)
        local p = io.popen(pg.psql_command(sql) .. " 2>&1")
        local out = p:read("*a")
        p:close()
        return out
    end
    -- Restarts the server (a fast shutdown: its connections are ended), with its options.
    function pg.restart()
        assert(os.execute(H.as_nobody(string.format("%spg_ctl -D %s/data -m fast -w restart", bin, pg.dir))
            .. " >/dev/null 2>&1"))
    end
    function pg.remove()
        os.execute(H.as_nobody(string.format("%spg_ctl -D %s/data -m immediate stop", bin, pg.dir))
            .. " >/dev/null 2>&1")
        os.execute("rm -rf " .. H.quote(pg.dir))
    end
    return pg
end

-- Makes sure the Laravel 8 app (H.app) is set up (storage, SQLite failed_jobs table).
-- The Laravel 8 app and luaworker share the Redis queue env reaches (srv: its
-- server, for the checks; q: the queue, REDIS_QUEUE's, "default" when nil):
-- luaworker runs the 3 NoOp jobs the app's jobs:dispatch pushed, the app's
-- queue:work the one luaworker pushed, and the queue is empty after. Raises saying
-- which did not happen.
function H.shares_queue_with_laravel(env, srv, q)
    H.laravel_setup()
    local list, _, reserved = H.keys(q)
    H.artisan({ "jobs:dispatch", "NoOp", "--count=3" }, env)
    assert(srv:r("LLEN", list) == 3, "the app's dispatch did not push 3 jobs")
    local r = H.run({ "work", "--handlers=" .. H.root .. "/examples/bench/handlers", "--stop-when-empty" },
        { env = env })
    local _, processed = r.stdout:gsub("Processed:  App\\Jobs\\NoOp", "")
    assert(r.status == 0 and processed == 3, "luaworker did not run the app's jobs: " .. r.stdout .. r.stderr)
    r = H.run({ "push", "App\\Jobs\\NoOp" }, { env = env })
    assert(r.status == 0, "luaworker push: " .. r.stderr)
    local out = H.artisan({ "queue:work", "--stop-when-empty" }, env)
    assert(out:match("Processed:%s+App\\Jobs\\NoOp"), "the app's queue:work did not run luaworker's job: " .. out)
    assert(srv:r("LLEN", list) == 0 and srv:r("ZCARD", reserved) == 0, "jobs were left in the queue")
end

function H.laravel_setup()
    if laravel_ready then return end
    local out = H.tmpdir() .. "/setup.out"
    local ok = os.execute(env_prefix() .. " " .. quote(H.app .. "/setup.sh") .. " >" .. out .. " 2>&1")
    if not ok then error(H.app .. "/setup.sh failed:\n" .. (H.read_file(out) or ""), 2) end
    laravel_ready = true
end

return H
