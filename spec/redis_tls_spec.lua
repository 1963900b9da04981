-- Redis over TLS, as managed services offer it only: REDIS_SCHEME=tls (predis), a
-- tls:// REDIS_HOST (phpredis), rediss:// and tls:// URLs; the server's certificate
-- checked against LUAWORKER_REDIS_CA_FILE or OpenSSL's default paths
-- (SSL_CERT_FILE), and its name; a client certificate where the server asks for
-- one. Every connection of the worker goes over TLS. A real redis-server with
-- TLS, and certificates made by openssl for the spec.
local H = require "spec.helpers"
local redis_server = require "spec.redis_server"

-- Records each run on the queue's connection (luaworker.redis).
local HANDLER = [[
local luaworker = require "luaworker"
return { handle = function(job) luaworker.redis("RPUSH", "spec:ran", job:id()) end }
]]

local certificates = require "spec.tls_certificates"

describe("Redis over TLS", function()
    local srv, mutual, handlers, workers, certs

    setup(function()
        certs = H.tmpdir()
        certificates(certs)
        local tls = { cert = certs .. "/server.crt", key = certs .. "/server.key", ca = certs .. "/ca.crt" }
        -- TLS only, as managed services offer it: the spec's own client comes over TLS too
        srv = redis_server.start({ tls = tls, only = true })
        mutual = redis_server.start({ only = true, tls = { cert = tls.cert, key = tls.key, ca = tls.ca,
            auth_clients = true, client_cert = certs .. "/client.crt", client_key = certs .. "/client.key" } })
        handlers = H.handlers({ ["App/Jobs/Spec.lua"] = HANDLER })
    end)
    teardown(function()
        if srv then srv:stop() end
        if mutual then mutual:stop() end
    end)

    before_each(function()
        srv:r("FLUSHALL")
        workers = {}
    end)
    after_each(function()
        for _, w in ipairs(workers) do w:stop() end
    end)

    -- The environment of a luaworker on s's TLS port.
    local function env(s, extra)
        local e = { REDIS_HOST = "127.0.0.1", REDIS_PORT = tostring(s.port + 1), REDIS_SCHEME = "tls",
            LUAWORKER_REDIS_CA_FILE = certs .. "/ca.crt" }
        for k, v in pairs(extra or {}) do e[k] = v end
        return e
    end

    local function push(id, db)
        srv:push(H.payload({ id = id }), db)
    end

    local function ran()
        return srv:r("LRANGE", "spec:ran", 0, -1)
    end

    -- The clients of the server but the spec's own, by the port they came to:
    -- {tls =, plain =}.
    local function clients()
        return srv:count_clients(function(line)
            return tonumber(line:match(" laddr=%S+:(%d+)")) == srv.port + 1 and "tls" or "plain"
        end, { tls = 0, plain = 0 })
    end

    it("runs jobs with every connection of the worker over TLS: the queue's, the idle wait's, the delayed "
        .. "sets' subscription, the cache's, the heartbeat's", function()
        local w = H.spawn({ "work", "--handlers=" .. handlers, "--sleep=3" }, { env = env(srv) })
        workers[1] = w
        push("a")
        H.wait_until(function() return #ran() == 1 end, 10, "the job")
        H.wait_until(function() return clients().tls >= 5 end, 10, "the worker's connections")
        assert.are.same({ tls = 5, plain = 0 }, clients())
        -- woken through the idle wait's connection, and by the delayed set's change
        push("b")
        H.wait_until(function() return #ran() == 2 end, 2, "the job pushed to the idle worker")
        local r = H.run({ "push", "App\\Jobs\\Spec", "--delay=1" }, { env = env(srv) })
        assert.are.equal(0, r.status, r.stderr)
        H.wait_until(function() return #ran() == 3 end, 4, "the delayed job")
        w:kill("TERM")
        assert.are.equal(0, w:wait(10), w:stderr())
        assert.are.equal("", w:stderr())
    end)

    it("is chosen by a tls:// REDIS_HOST, and by rediss:// and tls:// URLs, checking the server's name",
        function()
        push("c")
        local r = H.run({ "work", "--handlers=" .. handlers, "--stop-when-empty" },
            { env = env(srv, { REDIS_SCHEME = false, REDIS_HOST = "tls://localhost" }) })
        assert.are.equal(0, r.status, r.stderr)
        assert.are.same({ "c" }, ran())
        for db, url in pairs({ [2] = "rediss://localhost:" .. (srv.port + 1) .. "/2",
                               [3] = "tls://127.0.0.1:" .. (srv.port + 1) .. "/3" }) do
            r = H.run({ "push", "App\\Jobs\\Spec" }, { env = env(srv, { REDIS_SCHEME = false, REDIS_URL = url }) })
            assert.are.equal(0, r.status, r.stderr)
            srv:r("SELECT", db)
            assert.are.equal(1, srv:r("LLEN", (H.keys())), url)
            srv:r("SELECT", 0)
        end
    end)

    it("takes the CA of SSL_CERT_FILE, as OpenSSL's default paths, when no CA file is given", function()
        local r = H.run({ "size" }, { env = env(srv, { LUAWORKER_REDIS_CA_FILE = false,
            SSL_CERT_FILE = certs .. "/ca.crt" }) })
        assert.are.equal(0, r.status, r.stderr)
    end)

    it("refuses, with status 2 at start, a certificate of another CA or for another name, unless told not "
        .. "to check", function()
        push("d")
        local cases = {
            { { LUAWORKER_REDIS_CA_FILE = certs .. "/other.crt" }, "certificate refused: self%-signed certificate in "
                .. "certificate chain" },
            { { LUAWORKER_REDIS_SERVER_NAME = "redis.example.com" }, "certificate refused: hostname mismatch" },
        }
        for _, case in ipairs(cases) do
            local r = H.run({ "work", "--handlers=" .. handlers, "--stop-when-empty" }, { env = env(srv, case[1]) })
            assert.are.equal(2, r.status, r.stderr)
            assert.matches("cannot start: .*TLS handshake with Redis at 127%.0%.0%.1:" .. (srv.port + 1)
                .. "/0 failed: " .. case[2], r.stderr)
            r = H.run({ "size" }, { env = env(srv, case[1]) })
            assert.are.equal(2, r.status, r.stderr)
        end
        assert.are.same({}, ran())
        local r = H.run({ "work", "--handlers=" .. handlers, "--stop-when-empty" },
            { env = env(srv, { LUAWORKER_REDIS_CA_FILE = certs .. "/other.crt", LUAWORKER_REDIS_VERIFY = "0" }) })
        assert.are.equal(0, r.status, r.stderr)
        assert.are.same({ "d" }, ran())
    end)

    it("gives a client certificate to a server that asks for one", function()
        local e = env(mutual)
        -- without one: Redis' refusal, which TLS 1.3 tells after the handshake, lasts
        local r = H.run({ "size" }, { env = e })
        assert.are.equal(2, r.status, r.stderr)
        assert.matches("failed: certificate refused: Redis refused this end's certificate, or its lack of one", r.stderr)
        e.LUAWORKER_REDIS_CERT_FILE, e.LUAWORKER_REDIS_KEY_FILE = certs .. "/client.crt", certs .. "/client.key"
        r = H.run({ "size" }, { env = e })
        assert.are.equal(0, r.status, r.stderr)
        e.LUAWORKER_REDIS_KEY_FILE = certs .. "/server.key"
        r = H.run({ "size" }, { env = e })
        assert.are.equal(2, r.status)
        assert.matches("LUAWORKER_REDIS_KEY_FILE=[^ ]+/server%.key: not the key of LUAWORKER_REDIS_CERT_FILE=", r.stderr)
    end)

    it("logs in over TLS as an ACL user, never printing the user or password", function()
        srv:r("ACL", "SETUSER", "spectls", "on", ">tls-s3cret", "~*", "&*", "+@all")
        push("e")
        local r = H.run({ "work", "--handlers=" .. handlers, "--stop-when-empty" },
            { env = env(srv, { REDIS_USERNAME = "spectls", REDIS_PASSWORD = "tls-s3cret" }) })
        assert.are.equal(0, r.status, r.stderr)
        assert.are.same({ "e" }, ran())
        r = H.run({ "size" }, { env = env(srv, { REDIS_USERNAME = "spectls", REDIS_PASSWORD = "wrong" }) })
        assert.are.equal(2, r.status)
        assert.is_nil((r.stdout .. r.stderr):find("spectls", 1, true))
        assert.is_nil((r.stdout .. r.stderr):find("s3cret", 1, true))
        srv:r("ACL", "DELUSER", "spectls")
    end)

    it("refuses TLS files OpenSSL cannot use at start, naming the variable", function()
        local r = H.run({ "size" }, { env = env(srv, { LUAWORKER_REDIS_CA_FILE = "/nonexistent/ca.crt" }) })
        assert.are.same({ 2, "luaworker: LUAWORKER_REDIS_CA_FILE=/nonexistent/ca.crt: No such file or directory\n" },
            { r.status, r.stderr })
        r = H.run({ "size" }, { env = env(srv, { LUAWORKER_REDIS_CA_FILE = certs .. "/server.csr" }) })
        assert.are.equal(2, r.status)
        assert.matches("LUAWORKER_REDIS_CA_FILE=[^ ]+/server%.csr: not a CA certificate OpenSSL can read", r.stderr)
        r = H.run({ "size" }, { env = env(srv, { LUAWORKER_REDIS_CERT_FILE = certs .. "/client.crt" }) })
        assert.are.equal(2, r.status)
        assert.matches("expected LUAWORKER_REDIS_CERT_FILE and LUAWORKER_REDIS_KEY_FILE together", r.stderr)
    end)

    it("shares Redis over TLS with the Laravel 8 app: luaworker runs what PHP's dispatch pushed, "
        .. "PHP's queue:work what luaworker pushed", function()
        -- (the app's config/database.php reads REDIS_SCHEME, and luaworker's CA variable as phpredis'
        -- context)
        H.shares_queue_with_laravel(env(srv, { QUEUE_FAILED_DRIVER = "luaworker-redis" }), srv)
    end)

    it("waits out a Redis restarted under a running worker, over TLS, and runs the next job", function()
        local w = H.spawn({ "work", "--handlers=" .. handlers, "--sleep=0.2" }, { env = env(srv) })
        workers[1] = w
        push("f")
        H.wait_until(function() return #ran() == 1 end, 10, "the job")
        srv:stop()
        H.sleep(1)
        assert(srv:start(), "redis-server did not start again")
        -- (a server started afresh: without the first job's record)
        push("g")
        H.wait_until(function() return ran()[1] == "g" end, 15, "the job after the restart")
        w:kill("TERM")
        assert.are.equal(0, w:wait(10), w:stderr())
    end)
end)
