-- A real Redis Cluster for specs: six redis-servers made a cluster of three masters,
-- each with a replica, by `redis-cli --cluster create`, on ports of its own. The
-- spec's own client reaches each node on its port and routes by CLUSTER SLOTS.
local redis = require "redis"
local H = require "spec.helpers"

local Cluster = {}
Cluster.__index = Cluster

local M = {}

-- The specs' handler: it sleeps the payload's `sleep` ms, then records its run by the
-- payload's id: in the payload's `file` when it names one (the failover specs: Redis
-- may lose the last writes a master acknowledged, this record's among them), else
-- in spec:{default}:ran, in the slot of the queue {default}.
M.HANDLER = [[
local luaworker = require "luaworker"
return { handle = function(job)
    local ms = tonumber(job:payload().sleep or 0)
    if ms > 0 then luaworker.sleep(ms / 1000) end
    local file = job:payload().file
    if file then
        local f = assert(io.open(file, "a"))
        f:write(job:payload().id, "\n")
        f:close()
    else
        luaworker.redis("RPUSH", "spec:{default}:ran", job:payload().id)
    end
end }
]]

-- The ids of the runs HANDLER recorded in file, in order.
function M.runs_in(file)
    local ids = {}
    for id in (H.read_file(file) or ""):gmatch("[^\n]+") do ids[#ids + 1] = id end
    return ids
end

local function sh(cmd)
    local f = io.popen(cmd .. " 2>&1")
    local out = f:read("*a")
    local ok, _, status = f:close()
    return out, ok == true or status == 0
end

-- A client on the node at port (kept).
function Cluster:node(port)
    if not self.clients[port] then self.clients[port] = redis.connect("127.0.0.1", port) end
    return self.clients[port]
end

-- Runs a command on the node at port.
function Cluster:on(port, cmd, ...)
    return redis.command(cmd:upper())(self:node(port), ...)
end

-- The masters by slot range now: a list of {first, last, port, id}.
function Cluster:slots(port)
    local ranges = {}
    for _, r in ipairs(self:on(port or self:any_port(), "CLUSTER", "SLOTS")) do
        ranges[#ranges + 1] = { first = r[1], last = r[2], port = tonumber(r[3][2]), id = r[3][3] }
    end
    return ranges
end

-- A node that answers.
function Cluster:any_port()
    for _, port in ipairs(self.ports) do
        if not self.dead[port] and pcall(self.on, self, port, "PING") then return port end
        self.clients[port] = nil
    end
    error("no node of the cluster answers")
end

-- The port of the master serving key, by what the cluster says now.
function Cluster:master_of(key)
    local slot = self:on(self:any_port(), "CLUSTER", "KEYSLOT", key)
    for _, r in ipairs(self:slots()) do
        if slot >= r.first and slot <= r.last then return r.port, slot, r.id end
    end
    error("no master serves slot " .. slot)
end

-- Runs a command on the master of key (the command's first key).
function Cluster:r(key, cmd, ...)
    return self:on(self:master_of(key), cmd, key, ...)
end

-- Pushes a payload onto queue q (its name with the hash tag: the keys'), as
-- Laravel's push script does.
function Cluster:push(payload, q)
    local list = H.prefix .. "queues:" .. q
    local port = self:master_of(list)
    local text = type(payload) == "table" and H.json.encode(payload) or payload
    self:on(port, "RPUSH", list, text)
    self:on(port, "RPUSH", list .. ":notify", "1")
end

-- "127.0.0.1:port,..." of every node (their TLS ports with tls).
function Cluster:seeds(tls)
    local list = {}
    for i, port in ipairs(tls and self.tls_ports or self.ports) do
        list[i] = "127.0.0.1:" .. port
    end
    return table.concat(list, ",")
end

-- Whether every live node says the cluster is ok and agrees on who serves slot.
function Cluster:settled(slot)
    local owner
    for _, port in ipairs(self.ports) do
        if not self.dead[port] then
            local ok, info = pcall(self.on, self, port, "CLUSTER", "INFO")
            if not ok or not info:match("cluster_state:ok") then return false end
            if slot then
                for _, r in ipairs(self:slots(port)) do
                    if slot >= r.first and slot <= r.last then
                        if owner and owner ~= r.port or self.dead[r.port] then return false end
                        owner = r.port
                    end
                end
            end
        end
    end
    return true
end

-- Whether every master's replica has all it wrote.
function Cluster:replicated()
    for _, r in ipairs(self:slots()) do
        local info = self:on(r.port, "INFO", "replication")
        local offset = info:match("master_repl_offset:(%d+)")
        local replica = info:match("slave0:[^\r\n]*offset=(%d+)")
        if not replica or replica ~= offset then return false end
    end
    return true
end

-- kill -9's the master serving key and waits until its replica serves its slots.
-- Returns the port of the new master.
function Cluster:kill_master_of(key)
    local port, slot = self:master_of(key)
    local pid = (H.read_file(self.dirs[port] .. "/redis.pid") or ""):match("%d+")
    os.execute("kill -9 " .. pid)
    self.dead[port] = true
    self.clients[port] = nil
    H.wait_until(function() return self:settled(slot) end, 30, "the replica to take over")
    return (self:master_of(key))
end

-- Moves the slot of key to another master, as `redis-cli --cluster reshard` does:
-- IMPORTING and MIGRATING, its keys MIGRATEd a few at a time (between, each call
-- of the worker meets ASK or TRYAGAIN), then the slot given to the new master.
-- Returns the new master's port.
function Cluster:move_slot(key)
    local from, slot, from_id = self:master_of(key)
    local to, to_id
    for _, r in ipairs(self:slots()) do
        if r.port ~= from then to, to_id = r.port, r.id end
    end
    self:on(to, "CLUSTER", "SETSLOT", slot, "IMPORTING", from_id)
    self:on(from, "CLUSTER", "SETSLOT", slot, "MIGRATING", to_id)
    while true do
        local keys = self:on(from, "CLUSTER", "GETKEYSINSLOT", slot, 2)
        if #keys == 0 then break end
        self:on(from, "MIGRATE", "127.0.0.1", to, "", 0, 5000, "KEYS", unpack(keys))
        H.sleep(0.05)
    end
    for _, r in ipairs(self:slots()) do
        self:on(r.port, "CLUSTER", "SETSLOT", slot, "NODE", to_id)
    end
    return to
end

-- kill -9's the replica of the master at port.
function Cluster:kill_replica_of(port)
    local info = self:on(port, "INFO", "replication")
    local replica = tonumber(info:match("slave0:[^\r\n]*port=(%d+)"))
    local pid = (H.read_file(self.dirs[replica] .. "/redis.pid") or ""):match("%d+")
    os.execute("kill -9 " .. pid)
    self.dead[replica] = true
    self.clients[replica] = nil
    H.wait_until(function()
        return self:on(port, "INFO", "replication"):match("connected_slaves:0")
    end, 10, "the master to lose its replica")
end

function Cluster:stop()
    for _, c in pairs(self.clients) do pcall(c.quit, c) end
    for _, port in ipairs(self.ports) do
        local pid = (H.read_file(self.dirs[port] .. "/redis.pid") or ""):match("%d+")
        if pid then os.execute("kill -9 " .. pid .. " 2>/dev/null") end
    end
end

-- Whether the redis-server of dir answers on port, and is that one (the process its
-- pidfile names: a daemonized redis-server that cannot bind its port exits quietly,
-- and another's may answer there).
local function answers(c, port, dir)
    return pcall(function()
        local pid = (H.read_file(dir .. "/redis.pid") or ""):match("%d+")
        local info = c:on(port, "INFO", "server")
        assert(pid and info:match("process_id:(%d+)") == pid)
    end)
end

-- Starts six nodes on ports from base + 1, their cluster bus ports from base + 11,
-- their TLS ports (with opts.tls) from base + 21 (below the ports the other specs'
-- servers take, 20000 and up). Returns whether all six run.
local function start_nodes(c, base, opts)
    c.ports, c.dirs, c.clients, c.tls_ports = {}, {}, {}, {}
    for i = 1, 6 do
        local port, dir = base + i, H.tmpdir()
        c.ports[i], c.dirs[port] = port, dir
        local extra = ""
        if opts.tls then
            c.tls_ports[i] = base + 20 + i
            extra = string.format(" --tls-port %d --tls-cluster yes --tls-replication yes "
                .. "--tls-cert-file %s --tls-key-file %s --tls-ca-cert-file %s --tls-auth-clients no",
                base + 20 + i, opts.tls.cert, opts.tls.key, opts.tls.ca)
        end
        if opts.user then
            extra = extra .. string.format(" --user %s on '>%s' %s", opts.user.name, opts.user.password,
                opts.user.rules)
        end
        os.execute(string.format("redis-server --port %d --cluster-port %d --bind 127.0.0.1 --dir %s "
            .. "--save '' --appendonly no --daemonize yes --pidfile %s/redis.pid --logfile %s/redis.log "
            .. "--cluster-enabled yes --cluster-config-file %s/nodes.conf --cluster-node-timeout 1000 "
            .. "--cluster-replica-validity-factor 0%s",
            port, base + 10 + i, dir, dir, dir, dir, extra))
    end
    for _, port in ipairs(c.ports) do
        if not pcall(H.wait_until, function() return answers(c, port, c.dirs[port]) end, 5,
            "a cluster node to start") then
            return false
        end
    end
    return true
end

-- Starts the cluster; raises when it cannot. opts (optional): tls = {cert =, key =,
-- ca =} adds a TLS port to each node (c.tls_ports), the cluster's bus and
-- replication over TLS too; user = {name =, password =, rules =} an ACL user beside
-- the default one (the spec's client stays the default user, on the plain ports).
function M.start(opts)
    local c = setmetatable({ dead = {} }, Cluster)
    local started = false
    for _ = 1, 10 do
        started = start_nodes(c, 10000 + 30 * math.random(0, 330), opts or {})
        if started then break end
        c:stop()
    end
    if not started then error("could not start the cluster's redis-servers") end
    local out, ok = sh("redis-cli --cluster create " .. c:seeds():gsub(",", " ")
        .. " --cluster-replicas 1 --cluster-yes")
    if not ok then
        c:stop()
        error("redis-cli --cluster create failed: " .. out)
    end
    local settled, err = pcall(H.wait_until, function() return c:settled() end, 30, "the cluster to be ok")
    if not settled then
        c:stop()  -- the spec's teardown has no cluster to stop
        error(err, 0)
    end
    return c
end

return M
