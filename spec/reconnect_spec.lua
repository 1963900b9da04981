-- The worker against a Redis that goes away, or cannot run commands for a while,
-- and comes back: the queue's own commands wait it out, a handler's luaworker.redis
-- waits a bounded time, nothing done meanwhile is lost.
local H = require "spec.helpers"
local redis_server = require "spec.redis_server"
local cjson = H.json
local socket = require "socket"

-- Records each run; "slow" waits spec:slow seconds first; "write" waits spec:slow
-- seconds, then INCRs spec:count (and records a RedisError's message in spec:error);
-- "shutdown" shuts Redis down (the worker sees its connection go).
local HANDLER = [[
local luaworker = require "luaworker"
return { handle = function(job, command)
    luaworker.redis("RPUSH", "spec:ran", job:id())
    if command.action == "shutdown" then pcall(luaworker.redis, "SHUTDOWN") end
    if command.action == "slow" or command.action == "write" then
        luaworker.sleep(tonumber(luaworker.redis("GET", "spec:slow")) or 1)
    end
    if command.action == "write" then
        local ok, err = pcall(luaworker.redis, "INCR", "spec:count")
        if not ok then
            luaworker.redis("SET", "spec:error", tostring(err))
            error(err, 0)
        end
    end
end }
]]

local function spec_job(action, id)
    return H.payload({ id = id, data = { commandName = "App\\Jobs\\Spec", command = string.format(
        'O:13:"App\\Jobs\\Spec":1:{s:6:"action";s:%d:"%s";}', #action, action) } })
end

describe("luaworker work when Redis goes away", function()
    local srv, handlers, workers, env

    before_each(function()
        handlers = H.handlers({ ["App/Jobs/Spec.lua"] = HANDLER })
        workers = {}
    end)

    after_each(function()
        for _, w in ipairs(workers) do w:stop() end
        if srv then pcall(srv.stop, srv) end
        srv = nil
    end)

    local function server(opts)
        srv = redis_server.start(opts)
        env = { REDIS_PORT = tostring(srv.port) }
        return srv
    end

    local function push(payload)
        local list, _, _, notify = H.keys()
        srv:r("RPUSH", list, cjson.encode(payload))
        srv:r("RPUSH", notify, "1")
    end

    local function ran()
        local ok, list = pcall(srv.r, srv, "LRANGE", "spec:ran", 0, -1)
        return ok and list or {}
    end

    local function start(args)
        local full = { "work", "--handlers=" .. handlers, "--sleep=0.05" }
        for _, a in ipairs(args or {}) do full[#full + 1] = a end
        local w = H.spawn(full, { env = env })
        workers[#workers + 1] = w
        return w
    end

    -- The spec that waits 10 s on a Redis that refuses writes begins with the file:
    -- its server and worker, a job of its own that has started, and from when that
    -- Redis refuses writes.
    local readonly = {}
    setup(function()
        handlers = H.handlers({ ["App/Jobs/Spec.lua"] = HANDLER })
        workers = {}
        server()
        srv:r("SET", "spec:slow", "0.5")
        push(spec_job("write", "j1"))
        local w = start({ "--tries=1" })
        H.wait_until(function() return #ran() == 1 end, 10, "the job to start")
        srv:r("REPLICAOF", "127.0.0.1", "1")
        readonly.srv, readonly.worker, readonly.started, readonly.since = srv, w, os.time(), socket.gettime()
        srv = nil
    end)
    teardown(function()
        if readonly.worker then readonly.worker:stop() end
        if readonly.srv then pcall(readonly.srv.stop, readonly.srv) end
    end)

    it("logs the outage once, reconnects, loads its scripts again and drains the queue", function()
        server()
        -- idle in its wait on the notify list (--sleep=3) when Redis goes, so that the
        -- connection is lost under a command: between two waits of 0.05 s a loaded
        -- worker may find it gone at its next command ("cannot connect", not "lost")
        local w = H.spawn({ "work", "--handlers=" .. handlers, "--sleep=3" }, { env = env })
        workers[#workers + 1] = w
        push(H.payload({ id = "before" }))
        H.wait_until(function() return #ran() == 1 end, 10, "the first job")

        srv:stop()
        H.sleep(2.5)
        assert.is_nil(w:status())
        srv:start()
        push(H.payload({ id = "after" }))
        H.wait_until(function()
            local list = ran()
            return #list == 1 and list[1] == "after"
        end, 10, "the job pushed after the restart")
        w:kill("TERM")
        assert.are.equal(0, w:wait())

        local err = w:stderr()
        local _, lost = err:gsub("lost: ", "")
        assert.are.equal(1, lost)
        assert.matches("retrying, at least every second", err)
        assert.matches("connection to Redis at 127.0.0.1:" .. srv.port .. "/0 is back", err)
    end)

    it("waits out a Redis that refuses writes (READONLY, as a replica in a failover), then runs the job once", function()
        server()
        push(spec_job("ok", "j1"))
        -- a replica of a master that cannot be reached: it keeps its data, refuses writes
        srv:r("REPLICAOF", "127.0.0.1", "1")
        local w = start()
        H.sleep(1.5)
        assert.are.same({}, ran())
        srv:r("REPLICAOF", "NO", "ONE")
        H.wait_until(function() return #ran() == 1 end, 10, "the job")
        local list, _, reserved = H.keys()
        H.wait_until(function() return srv:r("ZCARD", reserved) == 0 end, 5, "its delete")
        assert.are.equal(0, srv:r("LLEN", list))
        w:kill("TERM")
        assert.are.equal(0, w:wait())
        assert.matches("READONLY [^\n]*; retrying, at least every second", w:stderr())
        assert.matches("is back", w:stderr())
    end)

    it("lets a handler's luaworker.redis wait out a Redis that refuses writes for a while", function()
        server()
        srv:r("SET", "spec:slow", "0.5")
        push(spec_job("write", "j1"))
        local w = start()
        H.wait_until(function() return #ran() == 1 end, 10, "the job to start")
        srv:r("REPLICAOF", "127.0.0.1", "1")
        H.sleep(2)
        srv:r("REPLICAOF", "NO", "ONE")
        local _, _, reserved = H.keys()
        H.wait_until(function() return srv:r("ZCARD", reserved) == 0 end, 10, "the job to end")
        assert.are.same({ "1", false }, { srv:r("GET", "spec:count"), srv:r("EXISTS", "spec:error") == 1 })
        assert.are.equal(1, #ran())
        w:kill("TERM")
        assert.are.equal(0, w:wait())
    end)

    it("makes a handler's luaworker.redis raise after 10 s of a Redis that refuses writes", function()
        -- begun by the setup above: the specs before this one ran meanwhile
        srv, env = readonly.srv, { REDIS_PORT = tostring(readonly.srv.port) }
        workers[#workers + 1] = readonly.worker
        local w, started = readonly.worker, readonly.started
        H.sleep(string.format("%.2f", math.max(0, readonly.since + 11 - socket.gettime())))
        srv:r("REPLICAOF", "NO", "ONE")
        H.wait_until(function() return srv:r("EXISTS", "spec:error") == 1 end, 10, "the handler's error")
        assert.is_true(os.time() - started >= 10)
        assert.matches("^READONLY", srv:r("GET", "spec:error"))
        assert.is_nil(srv:r("GET", "spec:count"))
        w:kill("TERM")
        assert.are.equal(0, w:wait())
    end)

    it("writes a job's delete made while Redis is away once it is back: the job does not run again", function()
        server({ appendonly = true })
        srv:r("SET", "spec:slow", "1")
        push(spec_job("slow", "j1"))
        local w = start({ "--retry-after=60" })
        H.wait_until(function() return #ran() == 1 end, 10, "the job to start")
        -- the handler returns, and its delete is made, while Redis is down
        srv:stop()
        H.sleep(2.5)
        srv:start()
        local list, _, reserved = H.keys()
        H.wait_until(function() return srv:r("ZCARD", reserved) == 0 end, 10, "the delete")
        H.sleep(1)
        assert.are.same({ 0, 1 }, { srv:r("LLEN", list), #ran() })
        w:kill("TERM")
        assert.are.equal(0, w:wait())
    end)

    it("does not run a job it held while Redis was away, when another process gave it back before Redis was back for it", function()
        server({ appendonly = true })
        start({ "--heartbeat=1", "--retry-after=60" })
        -- quick jobs first: the worker then takes batches, and holds the jobs behind
        -- the one that shuts Redis down; it starts the next at once, its lease still held
        local list, _, _, notify = H.keys()
        for i = 1, 40 do push(spec_job("ok", "w" .. i)) end
        H.wait_until(function() return #ran() == 40 end, 20, "the first jobs")
        local batch, tokens = { cjson.encode(spec_job("shutdown", "j1")) }, { "1" }
        for i = 2, 11 do batch[i], tokens[i] = cjson.encode(spec_job("ok", "j" .. i)), "1" end
        srv:r("RPUSH", list, unpack(batch))
        srv:r("RPUSH", notify, unpack(tokens))
        H.wait_until(function() return not pcall(srv.r, srv, "PING") end, 10, "the shutdown")
        -- Redis comes back with its data (the heartbeat expired meanwhile), first where
        -- only this spec reaches it: as another luaworker would, it gives back what the
        -- worker holds and had not started; then on its port again
        H.sleep(1.2)
        local sock = srv.dir .. "/redis.sock"
        assert(os.execute(string.format("redis-server --port 0 --unixsocket %s --dir %s --save '' "
            .. "--appendonly yes --daemonize yes --pidfile %s/redis.pid --logfile %s/redis.log",
            sock, srv.dir, srv.dir, srv.dir)))
        local cli = "redis-cli -s " .. sock .. " "
        H.wait_until(function() return io.popen(cli .. "PING"):read("*a"):match("PONG") end, 5, "Redis")
        local set = H.prefix .. "queues:default:luaworker:workers"
        local id = io.popen(cli .. "SMEMBERS " .. set):read("*l")
        local record = H.prefix .. "queues:default:luaworker:" .. id
        local given = io.popen(cli .. "--eval " .. H.root .. "/scripts/give_back.lua " .. table.concat(
            { list, select(3, H.keys()), notify, record, set, record .. ":alive" }, " ")
            .. " , " .. id .. " dead"):read("*a")
        assert.matches("^%d+", given)
        assert(os.execute(cli .. "CONFIG SET port " .. srv.port .. " >/dev/null"))
        assert(srv:connect())
        H.wait_until(function() return #ran() >= 51 end, 20, "the other jobs")
        H.wait_until(function() return srv:r("ZCARD", (select(3, H.keys()))) == 0 end, 10, "the last delete")
        H.sleep(0.5)
        local runs = {}
        for _, job_id in ipairs(ran()) do runs[job_id] = (runs[job_id] or 0) + 1 end
        for i = 2, 11 do
            assert.are.equal(1, runs["j" .. i], "j" .. i .. " ran " .. tostring(runs["j" .. i]) .. " times")
        end
        assert.matches("left this worker's hands while it could not reach Redis", workers[1]:stderr())
    end)

    it("stops on TERM while Redis is away, without waiting for it", function()
        server()
        local w = start()
        push(H.payload({ id = "j1" }))
        H.wait_until(function() return #ran() == 1 end, 10, "the job")
        srv:stop()
        H.sleep(1)
        w:kill("TERM")
        assert.are.equal(0, w:wait(10))
    end)

    it("gives up a connection that is not up within 5 s (a host that answers nothing), as an outage", function()
        -- a listener whose one-place backlog is full: the kernel drops the next SYNs,
        -- as from a machine that is gone
        local listener = assert(socket.bind("127.0.0.1", 0, 0))
        local _, port = listener:getsockname()
        local filler = socket.tcp()
        filler:settimeout(1)
        filler:connect("127.0.0.1", port)
        local started = socket.gettime()
        local r = H.run({ "size" }, { env = { REDIS_PORT = tostring(port) } })
        assert.are.equal(1, r.status, r.stderr)
        assert.matches("cannot connect to Redis at 127.0.0.1:" .. port .. "/0: no answer within 5 s",
            r.stderr, 1, true)
        assert.is_true(socket.gettime() - started < 10)
        filler:close()
        listener:close()
    end)
end)
