-- The `file` failed-job store (QUEUE_FAILED_DRIVER=file, Laravel 10.10+): the JSON
-- file PHP's FileFailedJobProvider reads and writes, under the lock PHP's file
-- cache store gives it, and the commands on it.
local H = require "spec.helpers"
local cjson = require "cjson"

local FAILING = [[return { handle = function(_, command) error("lua says no: " .. command.message) end }]]

local function php(code)
    local f = io.popen("php -r " .. H.quote(code) .. " 2>&1")
    local out = f:read("*a")
    f:close()
    return out
end

describe("the file failed-job store", function()
    local handlers, app, file, env_file
    setup(function()
        handlers = H.handlers({ ["App/Jobs/Failing.lua"] = FAILING })
    end)
    before_each(function()
        H.flush()
        app = H.tmpdir()
        H.write_file(app .. "/.env", "APP_NAME=Laravel\nQUEUE_FAILED_DRIVER=file\n")
        env_file = "--env-file=" .. app .. "/.env"
        file = app .. "/storage/framework/cache/failed-jobs.json"
    end)

    local function failing(message)
        local p = H.class_payload("App\\Jobs\\Failing", nil, { { "message", string.format('s:%d:"%s";',
            #message, message) } })
        H.push(p)
        return p
    end

    local function work(version, env)
        local r = H.run({ "work", "--handlers=" .. handlers, "--stop-when-empty", "--sleep=0",
            "--laravel=" .. (version or "11"), env_file }, { env = env })
        assert.are.equal(0, r.status, r.stderr)
        return r
    end

    local function records()
        return cjson.decode(H.read_file(file))
    end

    it("writes the file as PHP's provider does, newest first, which PHP's json_decode reads", function()
        local a, b = failing("first"), failing("second")
        work()
        local list = records()
        assert.are.same({ b.uuid, a.uuid }, { list[1].id, list[2].id })
        assert.are.same({ "redis", "default" }, { list[1].connection, list[1].queue })
        assert.are.equal(0, H.r("ZCARD", (select(3, H.keys()))))
        assert.matches("lua says no: second", list[1].exception, 1, true)
        assert.matches("^%d%d%d%d%-%d%d%-%d%d %d%d:%d%d:%d%d$", list[1].failed_at)
        assert.is_true(math.abs(list[1].failed_at_timestamp - os.time()) < 60)
        assert.are.equal(0, cjson.decode(list[1].payload).attempts)
        -- JSON_PRETTY_PRINT's layout, keys in the provider's order
        assert.matches('^%[\n    {\n        "id": "' .. b.uuid:gsub("%-", "%%-") .. '",\n        "connection": '
            .. '"redis",\n        "queue": "default",\n        "payload": "{\\"', H.read_file(file))
        assert.are.equal(b.uuid .. "|" .. a.uuid, php("$j = json_decode(file_get_contents('" .. file
            .. "')); echo $j[0]->id, '|', $j[1]->id;"))
    end)

    it("keeps the newest LUAWORKER_FAILED_LIMIT records, and what was there", function()
        H.write_file(file, '[\n    {\n        "id": "old",\n        "queue": "x",\n        "failed_at_timestamp": 1\n    }\n]')
        local a, b = failing("a"), failing("b")
        work("11", { LUAWORKER_FAILED_LIMIT = "2" })
        local list = records()
        assert.are.same({ b.uuid, a.uuid }, { list[1].id, list[2].id })
        assert.are.equal(2, #list)
        H.write_file(file, '[{"id": "old", "queue": "x", "failed_at_timestamp": 1}]')
        work("11")
        assert.are.equal("old", records()[1].id)
    end)

    it("waits for the lock PHP holds, the job kept reserved, and leaves no lock of its own", function()
        -- FileStore::lock's item: the sha1 of its key, under its first two hex pairs
        local hash = php("echo sha1('file-store-lock:laravel-failed-jobs');")
        local lock = app .. "/storage/framework/cache/data/" .. hash:sub(1, 2) .. "/" .. hash:sub(3, 4) .. "/" .. hash
        H.write_file(lock, string.format("%010d", os.time() + 120) .. 's:16:"PHPOWNER12345678";')
        local p = failing("locked")
        local w = H.spawn({ "work", "--handlers=" .. handlers, "--sleep=0.05", "--laravel=12.36", env_file })
        -- held past luaworker's 10 s: said, the job kept reserved, nothing written
        H.wait_until(function() return w:stderr():find("cannot lock the failed jobs", 1, true) end, 40,
            "luaworker to give up waiting for the lock once")
        assert.is_nil(H.read_file(file))
        assert.are.equal(1, H.r("ZCARD", (select(3, H.keys()))))
        -- PHP releases it (CacheLock::release deletes the file): written then
        os.remove(lock)
        H.wait_until(function() return H.read_file(file) end, 40, "the record after the lock went")
        assert.are.equal(p.uuid, records()[1].id)
        H.wait_until(function() return H.r("ZCARD", (select(3, H.keys()))) == 0 end, 5, "the reservation to go")
        w:kill("TERM")
        assert.are.equal(0, w:wait())
        assert.is_nil(H.read_file(lock))
        -- before 12.36 the lock's key has no prefix
        local old = php("echo sha1('laravel-failed-jobs');")
        local old_lock = app .. "/storage/framework/cache/data/" .. old:sub(1, 2) .. "/" .. old:sub(3, 4) .. "/" .. old
        H.write_file(old_lock, string.format("%010d", os.time() + 60) .. 's:16:"PHPOWNER12345678";')
        failing("old lock")
        w = H.spawn({ "work", "--handlers=" .. handlers, "--sleep=0.05", "--laravel=12.35", env_file })
        H.wait_until(function() return w:stderr():find("cannot lock the failed jobs", 1, true) end, 40,
            "luaworker to wait for the lock under its older name")
        assert.are.equal(1, #records())
        w:kill("TERM")
        w:wait()
    end)

    it("is what the failed, retry, forget and flush commands work on", function()
        local a, b, c = failing("a"), failing("b"), failing("c")
        work()
        local function cmd(args)
            local full = { args[1], "--laravel=11", env_file }
            for i = 2, #args do full[#full + 1] = args[i] end
            local r = H.run(full)
            assert.are.equal(0, r.status, r.stderr)
            return r.stdout
        end
        local listed = cmd({ "failed" })
        for _, p in ipairs({ a, b, c }) do assert.matches(p.uuid, listed, 1, true) end
        cmd({ "retry", a.uuid })
        local list, ready = records(), H.r("LRANGE", (H.keys()), 0, -1)
        assert.are.equal(2, #list)
        assert.are.equal(a.uuid, cjson.decode(ready[1]).uuid)
        cmd({ "forget", b.uuid })
        assert.are.same({ c.uuid }, { records()[1].id, records()[2] })
        cmd({ "flush" })
        assert.are.same({}, records())
        assert.are.equal("[]", H.read_file(file))
    end)

    it("leaves a payload the pop cannot use in luaworker's Redis store, and says how to see it", function()
        H.r("RPUSH", (H.keys()), "{not json")
        local r = work()
        assert.matches("kept as failed job [%w%-]+ %(see QUEUE_FAILED_DRIVER=luaworker%-redis luaworker failed%)",
            r.stderr)
        local listed = H.run({ "failed", env_file }, { env = { QUEUE_FAILED_DRIVER = "luaworker-redis" } })
        assert.matches("(not JSON)", listed.stdout, 1, true)
    end)

    it("stops the worker at start with status 2 when it has no file to use", function()
        local r = H.run({ "work", "--handlers=" .. handlers, "--stop-when-empty", "--laravel=11" },
            { env = { QUEUE_FAILED_DRIVER = "file" } })
        assert.are.equal(2, r.status)
        assert.matches("QUEUE_FAILED_DRIVER=file: the failed-jobs file is in the app's storage, found beside "
            .. "--env-file; give --env-file or LUAWORKER_FAILED_PATH", r.stderr, 1, true)
        r = H.run({ "work", "--handlers=" .. handlers, "--stop-when-empty", "--laravel=11", env_file },
            { env = { LUAWORKER_FAILED_LIMIT = "many" } })
        assert.are.equal(2, r.status)
        assert.matches("LUAWORKER_FAILED_LIMIT=many: expected a whole number", r.stderr, 1, true)
    end)

    it("is the database store before Laravel 10.10, as Laravel takes it", function()
        failing("x")
        local w = H.spawn({ "work", "--handlers=" .. handlers, "--sleep=0.05", "--laravel=10.9", env_file },
            { env = { DB_CONNECTION = "sqlite", DB_DATABASE = app .. "/none.sqlite" } })
        H.wait_until(function() return w:stderr():find("in failed_jobs on database connection sqlite", 1, true) end,
            10, "the database store's complaint")
        w:kill("TERM")
        w:wait()
        assert.is_nil(H.read_file(file))
    end)
end)
