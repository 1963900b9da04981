-- A Redis Cluster as managed services run it: TLS only for clients (the bus and
-- replication over TLS too), and an ACL user limited to the app's keys. Every
-- connection of the worker reaches each master on its TLS port as that user,
-- MOVED and the map naming the TLS ports, through a failover.
local H = require "spec.helpers"
local redis_cluster = require "spec.redis_cluster"
local certificates = require "spec.tls_certificates"

local HANDLER = redis_cluster.HANDLER

local USER = { name = "luaworker", password = "s3cret-pass",
    rules = "'~laravel_database_*' '~spec:*' '&*' '+@all'" }

describe("Redis Cluster over TLS, with an ACL user", function()
    local cluster, certs, handlers, workers

    setup(function()
        certs = H.tmpdir()
        certificates(certs)
        cluster = redis_cluster.start({ user = USER,
            tls = { cert = certs .. "/server.crt", key = certs .. "/server.key", ca = certs .. "/ca.crt" } })
        handlers = H.handlers({ ["App/Jobs/Spec.lua"] = HANDLER })
    end)
    teardown(function() if cluster then cluster:stop() end end)

    before_each(function() workers = H.worker_set() end)
    after_each(function() workers.stop_all() end)

    local function env()
        return { REDIS_CLUSTER_NODES = cluster:seeds(true), REDIS_SCHEME = "tls",
            LUAWORKER_REDIS_CA_FILE = certs .. "/ca.crt", REDIS_USERNAME = USER.name,
            REDIS_PASSWORD = USER.password, REDIS_QUEUE = "{default}", QUEUE_CONNECTION = "redis" }
    end

    local function ran()
        return cluster:r("spec:{default}:ran", "LRANGE", 0, -1)
    end

    -- The user's connections on the live nodes, by the port they came to: {tls =, plain =}.
    local function connections()
        local counts = { tls = 0, plain = 0 }
        local tls = {}
        for _, p in ipairs(cluster.tls_ports) do tls[p] = true end
        for _, port in ipairs(cluster.ports) do
            if not cluster.dead[port] then
                for line in cluster:on(port, "CLIENT", "LIST"):gmatch("[^\n]+") do
                    if line:match(" user=" .. USER.name .. " ") then
                        local at = tonumber(line:match(" laddr=[^ ]*:(%d+) "))
                        if tls[at] then counts.tls = counts.tls + 1 else counts.plain = counts.plain + 1 end
                    end
                end
            end
        end
        return counts
    end

    it("reaches each master on its TLS port as the ACL user, through a failover, nothing lost", function()
        local n, file = 200, H.tmpdir() .. "/ran"
        local function ran_file() return redis_cluster.runs_in(file) end
        for i = 1, n do cluster:push(H.payload({ id = "t" .. i, sleep = 10, file = file }), "{default}") end
        local w = workers.spawn({ "work", "--handlers=" .. handlers, "--sleep=3", "--concurrency=4",
            "--retry-after=5", "--timeout=4" }, { env = env() })
        H.wait_until(function() return #ran_file() >= 40 end, 30, "a part of the jobs")
        local counts = connections()
        assert.are.equal(0, counts.plain)
        assert.is_true(counts.tls >= 3, "the queue's, the wait's and the subscription's")
        H.wait_until(function() return cluster:replicated() end, 10, "the replicas to catch up")
        cluster:kill_master_of(H.prefix .. "queues:{default}")
        H.wait_until(function()
            local seen = {}
            for _, id in ipairs(ran_file()) do seen[id] = true end
            for i = 1, n do if not seen["t" .. i] then return false end end
            return true
        end, 60, "every job to run")
        -- an idle worker is woken by a push, through the new master
        cluster:push(H.payload({ id = "after" }), "{default}")
        H.wait_until(function() return ran()[#ran()] == "after" end, 3, "the job pushed after the failover")
        assert.are.equal(0, connections().plain)
        assert.is_nil(w:status(), "the worker is alive")
        w:kill("TERM")
        assert.are.equal(0, w:wait(15), w:stderr())
        assert.is_nil(w:stderr():find(USER.password, 1, true), "the password in stderr")
    end)

    it("refuses a wrong password at start, exit 2, without the password in the message", function()
        local e = env()
        e.REDIS_PASSWORD = "not-the-password"
        local r = H.run({ "work", "--handlers=" .. handlers, "--once" }, { env = e })
        assert.are.equal(2, r.status, r.stderr)
        assert.matches("WRONGPASS", r.stderr, 1, true)
        assert.is_nil(r.stderr:find("not-the-password", 1, true))
    end)
end)
