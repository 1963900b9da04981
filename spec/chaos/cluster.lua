-- The chaos soak's Redis Cluster (spec/chaos/driver.lua --transport=cluster; the same
-- store as spec/chaos/server.lua, see there): six redis-servers in the work directory
-- made three masters with a replica each by `redis-cli --cluster create`, on ports
-- below 20000 with explicit bus ports (as spec/redis_cluster.lua, which needs the spec
-- environment: the driver runs standalone under `make chaos` too). The workers, the
-- Laravel app and luaworker's commands get all six as REDIS_CLUSTER_NODES and the
-- queue {default}; the driver's own commands go to the master of their key's slot.
--
-- The soak's Redis restart is a failover here: the master of the queue's slot is
-- kill -9'd, its replica promoted (cluster-node-timeout 1 s), the killed node
-- started again on its port, directory and nodes.conf (it rejoins as the replica of
-- the new master), and the soak goes on once the replica has caught up (online,
-- acknowledging a WAIT) and every node says the cluster is ok.
--
-- What a failover loses, and how the verdict knows it. Replication is asynchronous:
-- the writes the dead master acknowledged after the last one its replica got are
-- gone. The chaos handlers keep their bookkeeping (chaos:{default}:runs, :done,
-- :early, :trail) in the queue's slot, so the queue's keys and the bookkeeping are
-- one stream of writes on one master, and the replica has a prefix of it: as if
-- every worker had been stopped at one moment (the cut) and Redis restarted there,
-- but for the commands a worker sends after the death, which reach the promoted
-- replica: a run may start before the cut and end after it, its delete lost and its
-- end recorded. Three measures make that exact rather than assumed:
--   * the cut: once the dead master is gone, the replica receives nothing until its
--     promotion; the driver reads, on it (READONLY), the length of the trail and
--     the jobs in the queue, delayed and reserved, and checks it was still a
--     replica, link down, at the same offset, after reading;
--   * what the dead master acknowledged: every node runs with appendonly and
--     appendfsync no (Redis writes its AOF before it sends the replies of the
--     event loop's turn, so a kill -9 leaves every acknowledged write in the file;
--     no fsync is needed when the machine stays up); the killed node's AOF is moved
--     aside before it starts again, and read at the end by a redis-server of its own;
--   * the difference: its trail beyond the cut (the runs started and ended in the
--     lost writes), its done and early hashes, and the jobs whose place or payload
--     differs between the dead master and the replica at the cut (a pop, delete,
--     release, fail or migration of theirs was lost: each of those that ran around
--     the failover, verdict.around_failovers, may run once more for it; luaworker's
--     guarantee is a rerun, never a loss).
-- evidence() hands these to the verdict (see driver.lua's verdict for their use).
local redis = require "redis"
local cjson = require "cjson"
local system = require "system"
local psignal = require "posix.signal"

local read_file, shell, quote = system.read_file, system.shell, system.quote
local alive, wait_for, sleep, clock = system.alive, system.wait_for, system.sleep, system.clock

local M = {}
local Cluster = {}
Cluster.__index = Cluster

local NODE_ARGS = "--cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 1000 "
    .. "--cluster-replica-validity-factor 0 --save '' --appendonly yes --appendfsync no "
    .. "--auto-aof-rewrite-percentage 0 --repl-diskless-sync-delay 0"

-- dir: the work directory; keys: {queue =, trail =, done =, early =}.
function M.new(dir, keys, lag)
    return setmetatable({ dir = dir, keys = keys, lag = lag or 0, clients = {}, dead = {}, owners = {},
        slots_of = {}, failovers = {}, ports = {}, readers = {} }, Cluster)
end

function Cluster:node_dir(port) return self.dir .. "/node-" .. port end

function Cluster:pid(port)
    local s = read_file(self:node_dir(port) .. "/redis.pid")
    return s and tonumber(s:match("%d+"))
end

-- A command of redis-lua's client: its own (HGETALL as a table), or a raw one (INFO
-- as Redis' text).
local function method(c, cmd)
    return cmd:upper() ~= "INFO" and c[cmd:lower()] or redis.command(cmd:upper())
end

local function connect(port)
    return redis.connect({ host = "127.0.0.1", port = port, timeout = 30 })
end

-- Whether something listens on port.
local function taken(port)
    local sock = require("socket").tcp()
    sock:settimeout(1)
    local ok = sock:connect("127.0.0.1", port)
    sock:close()
    return ok ~= nil
end

-- Runs a command on the node at port (a connection kept per node; dropped on error).
function Cluster:on(port, cmd, ...)
    local c = self.clients[port]
    if not c then
        c = connect(port)
        self.clients[port] = c
    end
    local ok, v = pcall(method(c, cmd), c, ...)
    if not ok then
        self.clients[port] = nil
        pcall(c.quit, c)
        error(v, 0)
    end
    return v
end

local function field(info, name) return info:match(name .. ":([^\r\n]*)") end

function Cluster:info(port, section) return self:on(port, "INFO", section or "all") end

-- Whether the redis-server of port's directory answers there (and not another one).
function Cluster:answers(port)
    local ok, info = pcall(self.info, self, port, "server")
    return ok and self:pid(port) ~= nil and tonumber(field(info, "process_id")) == self:pid(port)
end

function Cluster:start_node(port)
    local d = self:node_dir(port)
    os.execute("mkdir -p " .. quote(d))
    os.remove(d .. "/redis.pid")
    self.clients[port] = nil
    os.execute(string.format("redis-server --port %d --cluster-port %d --bind 127.0.0.1 --dir %s "
        .. "--daemonize yes --pidfile %s/redis.pid --logfile %s/redis.log %s >/dev/null 2>&1",
        port, port + 10, quote(d), quote(d), quote(d), NODE_ARGS))
    return wait_for(function() return self:answers(port) end, 10) ~= nil
end

-- A node that answers.
function Cluster:any()
    for _, port in ipairs(self.ports) do
        if not self.dead[port] and pcall(self.on, self, port, "PING") then return port end
    end
    error("chaos: no node of the cluster answers")
end

function Cluster:keyslot(key)
    if not self.slots_of[key] then self.slots_of[key] = self:on(self:any(), "CLUSTER", "KEYSLOT", key) end
    return self.slots_of[key]
end

-- The port of the master serving slot, as the node at port (or any) says now.
function Cluster:owner(slot, port)
    for _, r in ipairs(self:on(port or self:any(), "CLUSTER", "SLOTS")) do
        if slot >= r[1] and slot <= r[2] then return tonumber(r[3][2]) end
    end
end

-- A command on the master of its key's slot (key: the command's first argument),
-- tried again for up to 10 s while the map changes or a node is away.
function Cluster:r(cmd, key, ...)
    local slot, err = self:keyslot(key)
    local args = table.pack(...)
    for _ = 1, 40 do
        local ok, v = pcall(function()
            self.owners[slot] = self.owners[slot] or self:owner(slot)
            return self:on(self.owners[slot], cmd, key, table.unpack(args, 1, args.n))
        end)
        if ok then return v end
        self.owners[slot], err = nil, v
        sleep(0.25)
    end
    error("chaos: redis " .. cmd .. " " .. key .. " failed on the cluster: " .. tostring(err))
end

-- Whether every live node says the cluster is ok and, when port is given, that
-- port's node serves slot; each master has its replica online.
function Cluster:settled(slot, port)
    local ok, settled = pcall(function()
        for _, p in ipairs(self.ports) do
            if not self.dead[p] then
                if field(self:on(p, "CLUSTER", "INFO"), "cluster_state") ~= "ok" then return false end
                if slot and self:owner(slot, p) ~= port then return false end
            end
        end
        return true
    end)
    return ok and settled
end

-- Whether the node at port replicates the master at master, in sync, its data and
-- AOF loaded and written (an AOF rewrite follows a full sync: a node killed during
-- it would leave no whole AOF), and its master sees it online and has it
-- acknowledge all it wrote before now (WAIT: with the workers writing, the two
-- offsets are seldom equal at one instant).
function Cluster:caught_up(port, master)
    local ok, done = pcall(function()
        local info = self:info(port)
        if field(info, "role") ~= "slave" or tonumber(field(info, "master_port")) ~= master
            or field(info, "master_link_status") ~= "up" or field(info, "master_sync_in_progress") ~= "0"
            or field(info, "loading") ~= "0" or field(info, "aof_rewrite_in_progress") ~= "0"
            or field(info, "aof_rewrite_scheduled") ~= "0" or field(info, "aof_enabled") ~= "1" then
            return false
        end
        local seen = self:info(master, "replication"):match("slave%d+:ip=[^,]*,port=" .. port .. ",state=(%a+)")
        return seen == "online" and self:on(master, "WAIT", 1, 2000) >= 1
    end)
    return ok and done
end

function Cluster:start()
    local unistd = require "posix.unistd"
    for attempt = 1, 20 do
        -- not drawn from the seed: the chaos plan must not depend on the ports
        local base = 10000 + 20 * ((unistd.getpid() * 31 + attempt * 7919 + os.time()) % 500)
        self.ports, self.base = {}, base
        local started = true
        for i = 1, 9 do
            if taken(base + i) or i <= 6 and taken(base + 10 + i) then started = false end
        end
        for i = 1, started and 6 or 0 do
            self.ports[i] = base + i
            if not self:start_node(base + i) then started = false break end
        end
        if started then break end
        self:stop()
        self.ports = {}
    end
    if #self.ports ~= 6 then error("chaos: could not start the cluster's redis-servers") end
    local nodes = {}
    for i, port in ipairs(self.ports) do nodes[i] = "127.0.0.1:" .. port end
    local out = shell("redis-cli --cluster create " .. table.concat(nodes, " ")
        .. " --cluster-replicas 1 --cluster-yes 2>&1")
    if not out:match("All 16384 slots covered") then error("chaos: redis-cli --cluster create failed:\n" .. out) end
    if not wait_for(function()
        if not self:settled() then return false end
        for _, port in ipairs(self.ports) do
            local role = field(self:info(port, "replication"), "role")
            if role == "slave" then
                local master = tonumber(field(self:info(port, "replication"), "master_port"))
                if not self:caught_up(port, master) then return false end
            end
        end
        return true
    end, 60) then
        error("chaos: the cluster did not settle")
    end
end

function Cluster:describe()
    return string.format("a Redis Cluster of 3 masters and 3 replicas on ports %d-%d (their cluster bus "
        .. "%d-%d), the queue's slot %d on %d", self.ports[1], self.ports[6], self.ports[1] + 10,
        self.ports[6] + 10, self:keyslot(self.keys.queue), self:owner(self:keyslot(self.keys.queue)))
end

function Cluster:app_env()
    local nodes = {}
    for i, port in ipairs(self.ports) do nodes[i] = "127.0.0.1:" .. port end
    return "REDIS_CLUSTER_NODES=" .. table.concat(nodes, ",") .. " REDIS_QUEUE={default}"
end

function Cluster:worker_env() return self:app_env() end

-- The jobs of the queue, by uuid: where each is ("queue", "delayed", "reserved") and
-- its payload (its attempts), read by call(cmd, key, ...).
local function jobs(call, queue)
    local state = {}
    local function note(where, list)
        for _, payload in ipairs(list) do
            local ok, job = pcall(cjson.decode, payload)
            if ok and type(job) == "table" and job.uuid then state[job.uuid] = where .. " " .. payload end
        end
    end
    note("queue", call("LRANGE", queue, 0, -1))
    note("delayed", call("ZRANGE", queue .. ":delayed", 0, -1))
    note("reserved", call("ZRANGE", queue .. ":reserved", 0, -1))
    return state
end

-- The replica at port once its master is dead: the length of the trail and the
-- queue's jobs, which are the cut if it was a replica, link down, at one offset,
-- before and after (nothing can write to it then). Returns the cut, or nil and why.
function Cluster:read_cut(port)
    local c = connect(port)
    local function call(cmd, ...) return method(c, cmd)(c, ...) end
    local function frozen()
        local info = call("INFO", "replication")
        return field(info, "role") == "slave" and field(info, "master_link_status") == "down"
            and field(info, "slave_repl_offset")
    end
    local ok, cut = pcall(function()
        call("READONLY")
        local before = frozen()
        local cut = { length = call("LLEN", self.keys.trail), jobs = jobs(call, self.keys.queue) }
        local after = frozen()
        if not before or before ~= after then return nil end
        cut.offset = tonumber(after)
        return cut
    end)
    pcall(c.quit, c)
    if not ok then return nil, tostring(cut) end
    if not cut then return nil, "it was promoted, or its offset moved, while the driver read it" end
    return cut
end

-- The soak's n-th Redis restart: the failover of the queue's master (see above); the
-- killed node is down for down seconds after the promotion. Returns what it did.
function Cluster:restart(n, down)
    local slot = self:keyslot(self.keys.queue)
    local old = self:owner(slot)
    local replica = tonumber(self:info(old, "replication"):match("slave0:ip=[^,]*,port=(%d+)"))
    assert(replica, "chaos: the queue's master has no replica")
    -- mid-run: once a worker holds a job (when one does within 5 s)
    wait_for(function() return self:r("ZCARD", self.keys.queue .. ":reserved") > 0 end, 5)
    local pid, t0 = self:pid(old), clock()
    local lagging = self.lag > 0 and self:pid(replica)
    if lagging then
        -- the replica stopped, its link cut: the master's writes from here on are its
        -- alone (the replica cannot come back for them), and die with it
        psignal.kill(lagging, psignal.SIGSTOP)
        self:on(old, "CLIENT", "KILL", "TYPE", "replica")
        sleep(self.lag)
    end
    psignal.kill(pid, psignal.SIGKILL)
    if lagging then psignal.kill(lagging, psignal.SIGCONT) end
    self.dead[old], self.clients[old], self.owners[slot] = true, nil, nil
    if not wait_for(function() return not alive(pid) end, 10) then error("chaos: a killed master lives on") end
    local f = { n = n, killed = old, promoted = replica, aof = self.dir .. "/failover-" .. n }
    self.failovers[#self.failovers + 1] = f
    if not wait_for(function()
        return field(self:info(replica, "replication"), "master_link_status") == "down"
    end, 10) then
        error("chaos: the replica did not see its master die")
    end
    f.cut, f.cut_error = self:read_cut(replica)
    if not wait_for(function() return self:settled(slot, replica) end, 30) then
        error("chaos: the replica was not promoted within 30 s")
    end
    f.promoted_s = clock() - t0
    -- what the dead master acknowledged, kept before the node starts again
    os.execute(string.format("mkdir -p %s && mv %s/appendonlydir %s/", quote(f.aof), quote(self:node_dir(old)),
        quote(f.aof)))
    sleep(down)
    if not self:start_node(old) then error("chaos: the killed master did not start again") end
    self.dead[old] = nil
    if not wait_for(function() return self:caught_up(old, replica) and self:settled(slot, replica) end, 60) then
        error("chaos: the killed master did not rejoin as the replica of the new one")
    end
    return string.format("master %d of the queue's slot killed, replica %d promoted %.1fs later; %d is its "
        .. "replica again, caught up", old, replica, f.promoted_s, old)
end

-- Reads an AOF directory (a killed master's) with a redis-server of its own: the
-- trail, the keys of done and early, the queue's jobs.
function Cluster:read_aof(dir)
    local pidfile = dir .. "/redis.pid"
    self.readers[#self.readers + 1] = pidfile
    local function pid() return tonumber((read_file(pidfile) or ""):match("%d+")) end
    for port = self.base + 7, self.base + 9 do
        if not taken(port) then
            os.execute(string.format("redis-server --port %d --bind 127.0.0.1 --dir %s --appendonly yes "
                .. "--appendfsync no --save '' --daemonize yes --pidfile %s --logfile %s/redis.log "
                .. ">/dev/null 2>&1", port, quote(dir), quote(pidfile), quote(dir)))
            local c = wait_for(function()
                local ok, c = pcall(connect, port)
                if not ok then return false end
                local info = redis.command("INFO")(c)
                if pid() and tonumber(field(info, "process_id")) == pid() and field(info, "loading") == "0" then
                    return c
                end
                c:quit()
                return false
            end, 30)
            if c then
                local function call(cmd, ...) return method(c, cmd)(c, ...) end
                local server = { trail = call("LRANGE", self.keys.trail, 0, -1), done = call("HKEYS", self.keys.done),
                    early = call("HKEYS", self.keys.early), jobs = jobs(call, self.keys.queue) }
                local p = pid()
                pcall(call, "SHUTDOWN", "NOSAVE")
                wait_for(function() return not alive(p) end, 10)
                return server
            end
        end
    end
    error("chaos: could not read the AOF in " .. dir)
end

-- What the verdict reads beside the keys, given the trail as the cluster has it now
-- (problem(fmt, ...) for what does not add up): trail, the trail with, at each
-- failover's cut, a mark "d n" (as a restart's in the tcp form: the runs in flight
-- then were cut short) and the entries the dead master took with it, its starts as
-- "S" (runs cut short by the failover: their records, and maybe their job's pop or
-- outcome, died with it) and its ends as "E"; runs (uuid -> the runs those "S"
-- entries add), done and early (uuid -> true: what the dead masters had),
-- changed (n -> the set of the jobs whose change failover n lost: they differ between
-- the dead master and the replica at the cut), lost_starts, failovers (a summary of
-- each).
function Cluster:evidence(trail, problem)
    local ev = { runs = {}, done = {}, early = {}, changed = {}, lost_starts = 0, failovers = {} }
    local at = {}   -- trail index -> the entries to insert after it
    for _, f in ipairs(self.failovers) do
        local s = { killed = f.killed, promoted = f.promoted, promoted_s = tonumber(string.format("%.1f",
            f.promoted_s or -1)) }
        ev.failovers[#ev.failovers + 1] = s
        if not f.cut then
            problem("failover %d: the replica's state at the cut could not be read: %s", f.n, tostring(f.cut_error))
        else
            local ok, dead = pcall(self.read_aof, self, f.aof)
            if not ok then
                problem("failover %d: %s", f.n, tostring(dead))
            else
                s.cut_at, s.replica_offset, s.dead_trail = f.cut.length, f.cut.offset, #dead.trail
                s.at_cut = { queue = 0, delayed = 0, reserved = 0 }
                for _, state in pairs(f.cut.jobs) do
                    local where = state:match("^%a+")
                    s.at_cut[where] = s.at_cut[where] + 1
                end
                -- the replica had a prefix of the master's writes
                for i = 1, f.cut.length do
                    if dead.trail[i] ~= trail[i] then
                        problem("failover %d: the trail's entry %d is %s on the dead master, %s on the cluster",
                            f.n, i, tostring(dead.trail[i]), tostring(trail[i]))
                        break
                    end
                end
                local lost = { "d " .. f.n }
                for i = f.cut.length + 1, #dead.trail do
                    local entry = dead.trail[i]
                    local kind, uuid = entry:match("^(%a) (%S+)")
                    if kind == "s" then
                        entry = "S" .. entry:sub(2)
                        ev.runs[uuid] = (ev.runs[uuid] or 0) + 1
                        ev.lost_starts = ev.lost_starts + 1
                        s.lost_starts = (s.lost_starts or 0) + 1
                    elseif kind == "e" then
                        entry = "E" .. entry:sub(2)
                    end
                    lost[#lost + 1] = entry
                end
                s.lost_entries = #lost - 1
                at[f.cut.length] = at[f.cut.length] or {}
                for _, entry in ipairs(lost) do table.insert(at[f.cut.length], entry) end
                for _, uuid in ipairs(dead.done) do ev.done[uuid] = true end
                for _, uuid in ipairs(dead.early) do ev.early[uuid] = true end
                local changed, set = 0, {}
                ev.changed[f.n] = set
                local function differ(uuid)
                    if dead.jobs[uuid] ~= f.cut.jobs[uuid] and not set[uuid] then
                        set[uuid] = true
                        changed = changed + 1
                    end
                end
                for uuid in pairs(dead.jobs) do differ(uuid) end
                for uuid in pairs(f.cut.jobs) do differ(uuid) end
                s.changed_jobs = changed
            end
        end
    end
    local merged = {}
    for _, entry in ipairs(at[0] or {}) do merged[#merged + 1] = entry end
    for i, entry in ipairs(trail) do
        merged[#merged + 1] = entry
        for _, e in ipairs(at[i] or {}) do merged[#merged + 1] = e end
    end
    ev.trail = merged
    return ev
end

function Cluster:stop()
    for _, c in pairs(self.clients) do pcall(c.quit, c) end
    self.clients = {}
    local pids = {}
    for _, port in ipairs(self.ports) do pids[#pids + 1] = self:pid(port) end
    for _, pidfile in ipairs(self.readers) do pids[#pids + 1] = tonumber((read_file(pidfile) or ""):match("%d+")) end
    for _, pid in ipairs(pids) do
        if alive(pid) then
            psignal.kill(pid, psignal.SIGKILL)
            wait_for(function() return not alive(pid) end, 10)
        end
    end
end

return M
