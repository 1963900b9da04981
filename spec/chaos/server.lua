-- The chaos soak's own redis-server (spec/chaos/driver.lua, --transport=tcp, tls or
-- unix): appendonly, appendfsync everysec, in the soak's work directory, so that the
-- driver can restart it. The workers reach it on its TCP port, its TLS port (a CA
-- made with openssl) or its unix socket; the Laravel app and the driver itself use
-- the TCP port. spec/chaos/cluster.lua is the same for --transport=cluster.
--
-- A store (both modules): store:start(), :describe(), :app_env() (how the app and
-- luaworker's commands reach it, as variables), :worker_env() (how the workers do),
-- :r(cmd, key, ...) (a command), :restart(n, down) (the soak's Redis restart),
-- :evidence(trail) (what the verdict reads beside the keys: here the trail as it is),
-- :stop().
local redis = require "redis"
local system = require "system"

local read_file, shell, quote = system.read_file, system.shell, system.quote
local alive, wait_for, sleep = system.alive, system.wait_for, system.sleep

local M = {}
local Server = {}
Server.__index = Server

-- dir: the work directory; transport: tcp, tls or unix; trail: the key of the trail
-- (the restart marks its place in it).
function M.new(dir, transport, trail)
    return setmetatable({ dir = dir, transport = transport, trail = trail }, Server)
end

function Server:pid()
    local s = read_file(self.dir .. "/redis.pid")
    return s and tonumber(s:match("%d+"))
end

-- Starts redis-server on port p; true once it answers PING (its AOF loaded) and is
-- the server we started (a daemonized redis-server that cannot bind exits quietly,
-- and another one may answer on that port).
function Server:start_on(p)
    local dir = self.dir
    os.remove(dir .. "/redis.pid")
    local transport = ""
    if self.transport == "tls" then
        transport = string.format(" --tls-port %d --tls-cert-file %s/server.crt --tls-key-file %s/server.key "
            .. "--tls-ca-cert-file %s/ca.crt --tls-auth-clients no", p + 1, quote(dir), quote(dir), quote(dir))
    elseif self.transport == "unix" then
        transport = string.format(" --unixsocket %s/redis.sock --unixsocketperm 700", quote(dir))
    end
    local ok = os.execute(string.format("redis-server --port %d --bind 127.0.0.1 --dir %s "
        .. "--save '' --appendonly yes --appendfsync everysec --daemonize yes "
        .. "--pidfile %s/redis.pid --logfile %s/redis.log%s >/dev/null 2>&1", p, quote(dir),
        quote(dir), quote(dir), transport))
    if not ok then return false end
    return wait_for(function()
        local pid = self:pid()
        if not pid then return false end
        local info = shell("redis-cli -p " .. p .. " info server 2>/dev/null")
        if tonumber(info:match("process_id:(%d+)")) ~= pid then return false end
        return shell("redis-cli -p " .. p .. " ping 2>/dev/null"):match("PONG")
    end, 20) ~= nil
end

-- A free port for the first start, not drawn from the seed: the chaos plan must not
-- depend on which ports happen to be taken.
local function free_port(attempt)
    local p = 20000 + 2 * ((require("posix.unistd").getpid() * 31 + attempt * 7919 + os.time()) % 10000)
    if pcall(redis.connect, "127.0.0.1", p) or pcall(redis.connect, "127.0.0.1", p + 1) then return nil end
    return p
end

-- A CA and a certificate it signed for 127.0.0.1, in dir (for --transport=tls).
function Server:make_certificates()
    local script = "set -e; cd " .. quote(self.dir) .. "; "
        .. "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -subj '/CN=chaos CA'; "
        .. "openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj '/CN=localhost'; "
        .. "printf 'subjectAltName=IP:127.0.0.1\\n' > server.ext; "
        .. "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt "
        .. "-days 2 -extfile server.ext"
    assert(os.execute("bash -c " .. quote(script) .. " >/dev/null 2>&1"), "chaos: openssl failed")
end

function Server:start()
    if self.transport == "tls" then self:make_certificates() end
    for attempt = 1, 50 do
        local p = free_port(attempt)
        if p and self:start_on(p) then self.port = p break end
    end
    if not self.port then error("chaos: could not start a redis-server") end
end

function Server:describe()
    return string.format("redis-server on port %d, the workers on its %s", self.port,
        ({ tcp = "TCP port", tls = "TLS port " .. (self.port + 1), unix = "unix socket" })[self.transport])
end

function Server:app_env()
    return "REDIS_HOST=127.0.0.1 REDIS_PORT=" .. self.port
end

function Server:worker_env()
    if self.transport == "tls" then
        return string.format("REDIS_HOST=127.0.0.1 REDIS_PORT=%d REDIS_SCHEME=tls LUAWORKER_REDIS_CA_FILE=%s",
            self.port + 1, quote(self.dir .. "/ca.crt"))
    elseif self.transport == "unix" then
        return string.format("REDIS_HOST=%s REDIS_PORT=0", quote(self.dir .. "/redis.sock"))
    end
    return self:app_env()
end

function Server:r(cmd, ...)
    for _ = 1, 2 do
        if not self.client then
            local ok, c = pcall(redis.connect, "127.0.0.1", self.port)
            if ok then self.client = c end
        end
        if self.client then
            local ok, result = pcall(self.client[cmd:lower()], self.client, ...)
            if ok then return result end
            self.client = nil
        end
    end
    error("chaos: redis " .. cmd .. " failed on port " .. tostring(self.port))
end

function Server:drop_client()
    if self.client then pcall(self.client.quit, self.client) end
    self.client = nil
end

-- Sends RPUSH of mark to the trail and SHUTDOWN in one write: Redis runs them back
-- to back, with no other client's command between, so the mark is the last entry
-- before the restart. Returns once redis-server has exited.
function Server:mark_and_shutdown(mark)
    local pid = self:pid()
    self:drop_client()
    local function bulk(v) return "$" .. #v .. "\r\n" .. v .. "\r\n" end
    local sock = require("socket").tcp()
    sock:settimeout(30)
    assert(sock:connect("127.0.0.1", self.port))
    assert(sock:send("*3\r\n" .. bulk("RPUSH") .. bulk(self.trail) .. bulk(mark)
        .. "*1\r\n" .. bulk("SHUTDOWN")))
    sock:receive("*a")
    sock:close()
    return wait_for(function() return not alive(pid) end, 30)
end

-- The soak's n-th Redis restart: "d n" on the trail and SHUTDOWN (nothing lost: it
-- writes its AOF), down seconds down, started again, "r n" on the trail.
function Server:restart(n, down)
    if not self:mark_and_shutdown("d " .. n) then error("chaos: redis-server did not shut down") end
    sleep(down)
    if not self:start_on(self.port) then error("chaos: redis-server did not start again") end
    self:r("RPUSH", self.trail, "r " .. n)
    return "redis-server restarted"
end

-- A restart loses nothing: the trail is the whole story.
function Server:evidence(trail)
    return { trail = trail, runs = {}, done = {}, early = {}, changed = {}, lost_starts = 0 }
end

function Server:stop()
    local pid = self:pid()
    if not (self.port and alive(pid)) then return end
    self:drop_client()
    os.execute("redis-cli -p " .. self.port .. " shutdown nosave >/dev/null 2>&1")
    wait_for(function() return not alive(pid) end, 30)
end

return M
