-- A redis-server of a spec's own (for specs that stop and restart it, or reach it
-- by another transport), with a client of the spec's.
--
-- start(opts) starts one on a free port and returns it (port, dir, r(), push(),
-- count_clients(), stop(), start()). opts.appendonly: it keeps its data across a
-- restart (AOF, fsync every second; stop() shuts it down cleanly); opts.unixsocket:
-- it listens on a unix socket too, its path in socket; opts.tls = {cert =, key =,
-- ca =, auth_clients =, client_cert =, client_key =}: it takes TLS on port + 1 too
-- (client certificates required with auth_clients; the spec's client shows
-- client_cert). opts.only: it takes no plain TCP connection at all (port 0): the
-- spec's client comes over TLS (LuaSec) or the unix socket, as the workers must.
local redis = require "redis"
local socket = require "socket"
local H = require "spec.helpers"

local Server = {}
Server.__index = Server

local M = {}

function M.start(opts)
    opts = opts or {}
    local srv = setmetatable({ dir = H.tmpdir(), appendonly = opts.appendonly, tls = opts.tls,
        only = opts.only }, Server)
    if opts.unixsocket then srv.socket = srv.dir .. "/redis.sock" end
    assert(not srv.only or srv.tls or srv.socket, "a server that takes no plain TCP needs TLS or a socket")
    for _ = 1, 50 do
        srv.port = 20000 + 2 * math.random(0, 9999)
        if srv:start() then return srv end
    end
    error("could not start a redis-server for the spec")
end

function Server:start()
    local ok = os.execute(string.format("redis-server --port %d --bind 127.0.0.1 --dir %s --save '' "
        .. "--appendonly %s --daemonize yes --pidfile %s/redis.pid --logfile %s/redis.log%s",
        self.only and 0 or self.port, self.dir, self.appendonly and "yes" or "no", self.dir, self.dir,
        (self.socket and " --unixsocket " .. self.socket .. " --unixsocketperm 700" or "")
        .. (self.tls and string.format(" --tls-port %d --tls-cert-file %s --tls-key-file %s "
            .. "--tls-ca-cert-file %s --tls-auth-clients %s", self.port + 1, self.tls.cert, self.tls.key,
            self.tls.ca, self.tls.auth_clients and "yes" or "no") or "")))
    if not ok then return false end
    return self:connect()
end

-- A new client of the server: over its plain TCP port, or, on a server that takes
-- none, over TLS or its unix socket. Raises when it cannot connect.
function Server:client()
    if not self.only then return redis.connect("127.0.0.1", self.port) end
    if self.tls then
        local ssl = require "ssl"
        local tcp = socket.tcp()
        tcp:settimeout(5)
        assert(tcp:connect("127.0.0.1", self.port + 1))
        local conn = assert(ssl.wrap(tcp, { mode = "client", protocol = "any", verify = "peer",
            cafile = self.tls.ca, certificate = self.tls.client_cert, key = self.tls.client_key }))
        assert(conn:dohandshake())
        return redis.connect({ socket = conn })
    end
    return redis.connect({ scheme = "unix", path = self.socket })
end

-- Connects the server's client, once it answers (not LOADING its data) and is this
-- server (the process its pidfile names: a daemonized redis-server that cannot bind
-- its port exits quietly, and another shard's may answer there). Returns whether it
-- did within 5 s.
function Server:connect()
    return (pcall(H.wait_until, function()
        return pcall(function()
            local conn = self:client()
            local pid = (H.read_file(self.dir .. "/redis.pid") or ""):match("%d+")
            local info = redis.command("INFO")(conn, "server")
            if not pid or info:match("process_id:(%d+)") ~= pid then
                pcall(function() conn.network.socket:close() end)
                error("not this server")
            end
            conn:ping()
            self.conn = conn
        end)
    end, 5, "redis-server to start"))
end

-- Whether process pid runs: a zombie does not (a daemon's parent, init here, may
-- reap it late).
local function running(pid)
    local stat = H.read_file("/proc/" .. pid .. "/stat")
    return stat ~= nil and stat:match("^%d+ %b() (%a)") ~= "Z"
end

-- Stops the server as SHUTDOWN does (TERM: an appendonly one writes its AOF first),
-- and waits until it is gone.
function Server:stop()
    local pid = (H.read_file(self.dir .. "/redis.pid") or ""):match("%d+")
    -- (the socket closed as it is: QUIT over LuaSec's socket, which has no shutdown(),
    -- would raise, and a read of a closed TLS session can spin)
    if self.conn then pcall(function() self.conn.network.socket:close() end) end
    self.conn = nil
    if pid then os.execute("kill -TERM " .. pid .. " 2>/dev/null") end
    H.wait_until(function() return not pid or not running(pid) end, 10, "redis-server to stop")
end

local commands = {}

function Server:r(cmd, ...)
    local f = commands[cmd] or redis.command(cmd:upper())
    commands[cmd] = f
    return f(self.conn, ...)
end

-- Pushes payload (a table) onto the default queue of database db (0 by default),
-- with its notify token, as Laravel's push does.
function Server:push(payload, db)
    local list, _, _, notify = H.keys()
    self:r("SELECT", db or 0)
    self:r("RPUSH", list, H.json.encode(payload))
    self:r("RPUSH", notify, "1")
    self:r("SELECT", 0)
end

-- The server's clients but the spec's own, counted by kind(line of CLIENT LIST),
-- each count starting from counts' (e.g. { unix = 0, tcp = 0 }).
function Server:count_clients(kind, counts)
    local own = self:r("CLIENT", "ID")
    for line in self:r("CLIENT", "LIST"):gmatch("[^\n]+") do
        if tonumber(line:match("id=(%d+)")) ~= own then
            local k = kind(line)
            counts[k] = counts[k] + 1
        end
    end
    return counts
end

return M
