-- `luaworker status`: every live worker on the connection, fleet by fleet, from the
-- records the workers keep where their queue lives: Redis, or on the database
-- queue the app's cache store. A fleet stopped with TERM leaves the list at once,
-- a killed one when its heartbeat's TTL lapses.
local H = require "spec.helpers"
local cjson = H.json

local function status(env, args)
    local full = { "status", "--json" }
    for _, a in ipairs(args or {}) do full[#full + 1] = a end
    local r = H.run(full, { env = env })
    assert.are.equal(0, r.status, r.stderr)
    local records = {}
    for line in r.stdout:gmatch("[^\n]+") do records[#records + 1] = cjson.decode(line) end
    return records
end

local function pids(records, supervisor)
    local list = {}
    for _, r in ipairs(records) do
        if r.supervisor == supervisor then list[#list + 1] = r.pid end
    end
    table.sort(list)
    return list
end

local function sorted(list)
    table.sort(list)
    return list
end

describe("luaworker status", function()
    local workers

    before_each(function()
        H.flush()
        workers = {}
    end)

    after_each(function()
        for _, w in ipairs(workers) do w:kill_group("KILL") end
    end)

    -- A fleet of n processes, started with args.
    local function fleet(n, args, env)
        local handlers = H.handlers({ ["App/Jobs/Spec.lua"] = "return { handle = function() end }" })
        local full = { "work", "--handlers=" .. handlers, "--sleep=0.1", "--heartbeat=1",
            "--processes=" .. n }
        for _, a in ipairs(args) do full[#full + 1] = a end
        local w = H.spawn(full, { env = env, group = true })
        workers[#workers + 1] = w
        H.wait_until(function() return #H.children(w.pid) == n end, 10, "the fleet's workers")
        return w
    end

    it("lists two fleets' workers, the one stopped with TERM gone at once, the killed one within its TTL", function()
        local a = fleet(2, { "--queue=default", "--concurrency=2" })
        local b = fleet(1, { "--queue=high,default" })
        for _ = 1, 3 do H.push(H.class_payload("App\\Jobs\\Spec")) end
        local records
        H.wait_until(function()
            records = status()
            local done = 0
            for _, r in ipairs(records) do done = done + r.done end
            return #records == 3 and done == 3
        end, 10, "three workers, three jobs done")
        assert.are.same(sorted(H.children(a.pid)), pids(records, a.pid))
        assert.are.same(sorted(H.children(b.pid)), pids(records, b.pid))
        for _, r in ipairs(records) do
            assert.are.same({ "redis", r.supervisor == a.pid and "default" or "high,default",
                r.supervisor == a.pid and 2 or 1, 0 },
                { r.connection, r.queues, r.concurrency, r.in_flight })
            assert.is_true(r.rss_mb > 0)
            assert.is_true(math.abs(os.time() - r.started_at) < 30)
        end
        local text = H.run({ "status" })
        assert.matches("^Host +Supervisor +PID +Connection +Queues +In flight +Done +Uptime +Memory\n", text.stdout)
        assert.matches("\n3 workers in 2 fleets\n$", text.stdout)

        a:kill("TERM")
        assert.are.equal(0, a:wait(10))
        assert.are.same({}, pids(status(), a.pid))
        assert.are.equal(1, #status())

        b:kill_group("KILL")
        b:wait(10)
        -- its record lives out its heartbeat's TTL (1 s)
        H.wait_until(function() return #status() == 0 end, 5, "the killed fleet's record to lapse")
        assert.are.equal("No luaworker is running here.\n", H.run({ "status" }).stdout)
    end)

    it("keeps the database queue's records in the app's cache store, and refuses the file store", function()
        local file = H.tmpdir() .. "/app.sqlite"
        H.write_file(file, "")
        H.sqlite(file, 'create table "jobs" ("id" integer primary key autoincrement not null, "queue" '
            .. 'varchar not null, "payload" text not null, "attempts" integer not null, "reserved_at" '
            .. 'integer, "available_at" integer not null, "created_at" integer not null); '
            .. 'create table "cache" ("key" varchar not null primary key, "value" text not null, '
            .. '"expiration" integer not null)')
        local env = { QUEUE_CONNECTION = "database", DB_CONNECTION = "sqlite", DB_DATABASE = file,
            QUEUE_FAILED_DRIVER = "luaworker-database", CACHE_DRIVER = "database" }
        local w = fleet(2, { "database" }, env)
        local records
        H.wait_until(function()
            records = status(env)
            return #records == 2
        end, 10, "two workers in the cache table")
        assert.are.same(sorted(H.children(w.pid)), pids(records, w.pid))
        assert.are.equal("database", records[1].connection)
        -- no Redis was needed
        assert.are.same({}, H.r("KEYS", "*luaworker:fleet*"))
        w:kill("TERM")
        assert.are.equal(0, w:wait(10))
        assert.are.same({}, status(env))

        env.CACHE_DRIVER = "file"
        local r = H.run({ "status" }, { env = env })
        assert.are.equal(2, r.status)
        assert.matches("the cache store file %(CACHE_STORE / CACHE_DRIVER%) cannot list its keys", r.stderr)
    end)
end)
