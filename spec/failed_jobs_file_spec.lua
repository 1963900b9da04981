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

-- Runs luaworker with args (and env) in directory dir; returns {status, stdout, stderr}.
local function run_in(dir, args, env)
    local words = { "env", "REDIS_HOST=127.0.0.1", "REDIS_PORT=" .. H.port }
    for k, v in pairs(env or {}) do words[#words + 1] = k .. "=" .. H.quote(v) end
    words[#words + 1] = H.quote(H.root .. "/luaworker")
    for _, a in ipairs(args) do words[#words + 1] = H.quote(a) end
    local out = H.tmpdir()
    local _, _, status = os.execute(string.format("cd %s && timeout -s KILL 60 %s >%s/out 2>%s/err </dev/null",
        H.quote(dir), table.concat(words, " "), out, out))
    return { status = status, stdout = H.read_file(out .. "/out"), stderr = H.read_file(out .. "/err") }
end

-- What directory dir holds, by name.
local function listing(dir)
    local f = io.popen("ls -A " .. H.quote(dir))
    local names = f:read("*a")
    f:close()
    return names
end

-- Where PHP's file cache store of app keeps the lock of the failed jobs (12.36+).
local function php_lock(app)
    local hash = php("echo sha1('file-store-lock:laravel-failed-jobs');")
    return app .. "/storage/framework/cache/data/" .. hash:sub(1, 2) .. "/" .. hash:sub(3, 4) .. "/" .. hash
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
        -- before 12.36 the lock's key has no prefix: a worker of 12.35 on a queue of its
        -- own waits for that lock meanwhile (its 10 s beside the other worker's)
        local old = php("echo sha1('laravel-failed-jobs');")
        local old_lock = app .. "/storage/framework/cache/data/" .. old:sub(1, 2) .. "/" .. old:sub(3, 4) .. "/" .. old
        H.write_file(old_lock, string.format("%010d", os.time() + 60) .. 's:16:"PHPOWNER12345678";')
        H.push(H.class_payload("App\\Jobs\\Failing", nil, { { "message", 's:8:"old lock";' } }), "old")
        local old_worker = H.spawn({ "work", "--handlers=" .. handlers, "--sleep=0.05", "--laravel=12.35",
            "--queue=old", env_file })
        finally(function() old_worker:stop() end)
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
        -- the lock under its name before 12.36
        w = old_worker
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

    it("records an error message that is not UTF-8 with each bad sequence a '?', as PHP's mb_scrub", function()
        local h = H.handlers({ ["App/Jobs/NotUtf8.lua"] =
            [[return { handle = function() error("no \255 way \226\130 here") end }]] })
        H.push(H.class_payload("App\\Jobs\\NotUtf8"))
        local r = H.run({ "work", "--handlers=" .. h, "--stop-when-empty", "--laravel=11", env_file })
        assert.are.equal(0, r.status, r.stderr)
        assert.matches("no ? way ? here", records()[1].exception, 1, true)
    end)

    it("keeps a payload that is not UTF-8, which the file cannot hold for PHP, in luaworker's Redis store",
        function()
        local p = H.class_payload("App\\Jobs\\Failing", nil, { { "message", 's:5:"caf\233!";' } })
        local text = H.push(p)
        local r = work()
        assert.is_nil(H.read_file(file))
        assert.are.equal(text, H.failed_record(p.uuid).payload)
        assert.matches("failed job " .. p.uuid .. " kept in luaworker's Redis failed store, not in " .. file, r.stderr,
            1, true)
        assert.matches("\n\n[luaworker] This failed job could not be recorded in " .. file .. " (the payload is not "
            .. "valid UTF-8, which the file's JSON cannot hold (PHP's json_decode would read no record of the "
            .. "file)), so it is kept in luaworker's Redis failed store", H.failed_record(p.uuid).exception, 1, true)
    end)

    it("refuses to start with status 2 when its file cannot be made or written", function()
        H.write_file(app .. "/blocker", "a file, not a directory")
        local path = app .. "/blocker/failed-jobs.json"
        local r = H.run({ "work", "--handlers=" .. handlers, "--stop-when-empty", "--laravel=11", env_file },
            { env = { LUAWORKER_FAILED_PATH = path } })
        assert.are.equal(2, r.status)
        assert.matches("cannot start: QUEUE_FAILED_DRIVER=file: failed jobs cannot be recorded in " .. path
            .. ": cannot make a file beside " .. path .. ": Not a directory\n", r.stderr, 1, true)
        assert.is_true(os.execute("mkdir -p " .. H.quote(app .. "/a-directory")))
        r = H.run({ "work", "--handlers=" .. handlers, "--stop-when-empty", "--laravel=11", env_file },
            { env = { LUAWORKER_FAILED_PATH = app .. "/a-directory" } })
        assert.are.equal(2, r.status)
        assert.matches("cannot start: QUEUE_FAILED_DRIVER=file: failed jobs cannot be recorded in " .. app
            .. "/a-directory: cannot write " .. app .. "/a-directory: Is a directory\n", r.stderr, 1, true)
        -- the lock's directory, in the app's cache store, too
        H.write_file(app .. "/storage/framework/cache/data", "a file")
        r = H.run({ "work", "--handlers=" .. handlers, "--stop-when-empty", "--laravel=12.36", env_file })
        assert.are.equal(2, r.status)
        assert.matches("cannot start: QUEUE_FAILED_DRIVER=file: failed jobs cannot be recorded in " .. file
            .. ": cannot make the directories of " .. php_lock(app) .. ": Not a directory\n", r.stderr, 1, true)
    end)

    it("keeps a job in luaworker's Redis store when the file cannot be written at run time, and runs the next "
        .. "at once", function()
        local h = H.handlers({ ["App/Jobs/Failing.lua"] = FAILING, ["App/Jobs/Spec.lua"] = H.RECORD_ID })
        local w = H.spawn({ "work", "--handlers=" .. h, "--sleep=0.05", "--concurrency=1", "--laravel=11",
            env_file })
        local first = H.payload()
        H.push(first)
        H.wait_until(function() return H.r("LLEN", "spec:ran") == 1 end, 10, "the worker to run a job")
        assert.is_true(os.execute("mkdir -p " .. H.quote(file)))
        local p = failing("refused")
        local next_one = H.payload()
        H.push(next_one)
        local pushed = os.time()
        H.wait_until(function() return H.r("LLEN", "spec:ran") == 2 end, 10, "the next job")
        assert.is_true(os.time() - pushed <= 3, "the next job waited")
        assert.matches("lua says no: refused", H.failed_record(p.uuid).exception, 1, true)
        assert.matches("cannot record failed jobs in " .. file .. " (cannot read " .. file .. ": Is a directory): "
            .. "not an outage", w:stderr(), 1, true)
        w:kill("TERM")
        assert.are.equal(0, w:wait())
    end)

    it("takes its lock in the app the file belongs to, never in the current directory", function()
        local cwd = H.tmpdir()
        local other = H.tmpdir()  -- an app without .env: only its file is named
        local path = other .. "/storage/framework/cache/failed-jobs.json"
        local env = { QUEUE_FAILED_DRIVER = "file", LUAWORKER_FAILED_PATH = path }
        local r = run_in(cwd, { "forget", "nope", "--laravel=12.36" }, env)
        assert.are.equal(1, r.status, r.stderr)
        assert.are.equal("luaworker: No failed job matches the given ID.\n", r.stderr)
        assert.are.equal("", listing(cwd))
        assert.are.equal("[]", H.read_file(path))
        -- the lock was taken in that app's cache store (its directories stay, as PHP's)
        assert.is_true(os.execute("test -d " .. H.quote(php_lock(other):match("^(.*)/"))))
        -- the lock PHP holds there is waited for
        local lock = php_lock(other)
        H.write_file(lock, string.format("%010d", os.time() + 120) .. 's:16:"PHPOWNER12345678";')
        r = run_in(cwd, { "forget", "nope", "--laravel=12.36" }, env)
        assert.are.equal(1, r.status)
        assert.are.equal("luaworker: cannot lock the failed jobs: the lock laravel-failed-jobs (" .. lock
            .. ") was held for 10 s\n", r.stderr)
        os.remove(lock)
        -- a worker too
        local p = failing("elsewhere")
        r = run_in(cwd, { "work", "--handlers=" .. handlers, "--stop-when-empty", "--laravel=12.36" }, env)
        assert.are.equal(0, r.status, r.stderr)
        assert.are.equal(p.uuid, cjson.decode(H.read_file(path))[1].id)
        assert.are.equal("", listing(cwd))
    end)

    it("refuses a LUAWORKER_FAILED_PATH of no app without --env-file, with status 2", function()
        local cwd = H.tmpdir()
        local path = app .. "/failed.json"
        local env = { QUEUE_FAILED_DRIVER = "file", LUAWORKER_FAILED_PATH = path }
        local message = "QUEUE_FAILED_DRIVER=file: LUAWORKER_FAILED_PATH=" .. path .. " is not an app's "
            .. "storage/framework/cache/failed-jobs.json, so the lock PHP takes on it (in the app's "
            .. "storage/framework/cache/data) is not known; give --env-file (the app's .env)\n"
        local r = run_in(cwd, { "forget", "nope", "--laravel=11" }, env)
        assert.are.equal(2, r.status)
        assert.are.equal("luaworker: " .. message, r.stderr)
        r = run_in(cwd, { "work", "--handlers=" .. handlers, "--stop-when-empty", "--laravel=11" }, env)
        assert.are.equal(2, r.status)
        assert.matches("cannot start: " .. message, r.stderr, 1, true)
        assert.are.equal("", listing(cwd))
        -- with --env-file, the lock is in that app's cache store
        r = run_in(cwd, { "forget", "nope", "--laravel=11", env_file }, env)
        assert.are.equal(1, r.status)
        assert.are.equal("", listing(cwd))
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
