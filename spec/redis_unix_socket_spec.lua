-- Redis on a unix socket, as apps that run it on the same host reach it: a REDIS_HOST
-- that is the socket's path (phpredis' form, REDIS_PORT 0), REDIS_SCHEME=unix with
-- REDIS_PATH (predis' options), and unix:// URLs. Every connection the worker opens
-- goes there: its queue connection (and handlers' luaworker.redis), the idle wait's,
-- the subscription to the delayed sets' changes, the cache store's.
local H = require "spec.helpers"
local redis_server = require "spec.redis_server"

-- Records each run on the connection it is given (luaworker.redis).
local HANDLER = [[
local luaworker = require "luaworker"
return { handle = function(job) luaworker.redis("RPUSH", "spec:ran", job:id()) end }
]]

describe("Redis on a unix socket", function()
    local srv, handlers, workers

    setup(function()
        srv = redis_server.start({ unixsocket = true, only = true })
        handlers = H.handlers({ ["App/Jobs/Spec.lua"] = HANDLER })
    end)
    teardown(function() if srv then srv:stop() end end)

    before_each(function()
        srv:r("FLUSHALL")
        workers = {}
    end)
    after_each(function()
        for _, w in ipairs(workers) do w:stop() end
    end)

    local function push(id, db)
        srv:push(H.payload({ id = id }), db)
    end

    local function ran(db)
        srv:r("SELECT", db or 0)
        local list = srv:r("LRANGE", "spec:ran", 0, -1)
        srv:r("SELECT", 0)
        return list
    end

    -- The clients of the server but the spec's own, by how they came: {unix =, tcp =}.
    local function clients()
        return srv:count_clients(function(line)
            return line:match(" flags=%S*U") and "unix" or "tcp"
        end, { unix = 0, tcp = 0 })
    end

    it("is reached at a REDIS_HOST that is the socket's path, REDIS_PORT 0, by every connection of the worker, the heartbeat's too", function()
        local env = { REDIS_HOST = srv.socket, REDIS_PORT = "0", QUEUE_CONNECTION = "redis" }
        local w = H.spawn({ "work", "--handlers=" .. handlers, "--sleep=3" }, { env = env })
        workers[1] = w
        push("a")
        H.wait_until(function() return #ran() == 1 end, 10, "the job")
        -- the queue's, the idle wait's, the delayed sets' subscription, the cache's, the
        -- heartbeat's (worker/lease_keeper.h)
        H.wait_until(function() return clients().unix >= 5 end, 10, "the worker's connections")
        assert.are.same({ unix = 5, tcp = 0 }, clients())
        -- an idle worker woken through the socket's wait
        push("b")
        H.wait_until(function() return #ran() == 2 end, 2, "the job pushed to the idle worker")
        w:kill("TERM")
        assert.are.equal(0, w:wait(10), w:stderr())
        assert.are.equal("", w:stderr())
    end)

    it("is reached with REDIS_SCHEME=unix and REDIS_PATH, in the database REDIS_DB names", function()
        push("c", 2)
        local r = H.run({ "work", "--handlers=" .. handlers, "--stop-when-empty" }, { env = {
            REDIS_SCHEME = "unix", REDIS_PATH = srv.socket, REDIS_HOST = "no-such-host.invalid",
            REDIS_PORT = "1", REDIS_DB = "2" } })
        assert.are.equal(0, r.status, r.stderr)
        assert.are.same({ "c" }, ran(2))
    end)

    it("is reached with unix:///path and unix:/path URLs, their database in the query", function()
        for db, url in pairs({ [3] = "unix://" .. srv.socket .. "?database=3",
                               [4] = "unix:" .. srv.socket .. "?db=4" }) do
            local r = H.run({ "push", "App\\Jobs\\Spec" }, { env = { REDIS_URL = url } })
            assert.are.equal(0, r.status, r.stderr)
            local list = H.keys()
            srv:r("SELECT", db)
            assert.are.equal(1, srv:r("LLEN", list), url)
            srv:r("SELECT", 0)
        end
    end)

    it("shares the socket with the Laravel 8 app: luaworker runs what PHP's dispatch pushed, PHP's "
        .. "queue:work what luaworker pushed", function()
        H.shares_queue_with_laravel({ REDIS_HOST = srv.socket, REDIS_PORT = "0",
            QUEUE_FAILED_DRIVER = "luaworker-redis" }, srv)
    end)

    it("names the socket when it cannot be reached, and a run meant to end gives up after 10 s", function()
        local r = H.run({ "work", "--handlers=" .. handlers, "--stop-when-empty" },
            { env = { REDIS_HOST = srv.dir .. "/gone.sock", REDIS_PORT = "0" } })
        assert.are.equal(1, r.status)
        assert.matches("unix:" .. srv.dir:gsub("%p", "%%%0") .. "/gone%.sock%?database=0", r.stderr)
        assert.matches("No such file or directory", r.stderr)
    end)
end)
