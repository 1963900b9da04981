-- What luaworker says when something is wrong: a status and a message that name the
-- input and what was expected, and nothing that waits forever or stays silent.
local H = require "spec.helpers"
local redis_server = require "spec.redis_server"

local job = H.class_payload

local RECORD = H.RECORD_ID

-- A port nothing listens on.
local function closed_port()
    local srv = redis_server.start()
    local port = srv.port
    srv:stop()
    return port
end

local function work(files, args, opts)
    local full = { "work", "--handlers=" .. H.handlers(files or {}), "--sleep=0.05", "--no-watch" }
    for _, a in ipairs(args or {}) do full[#full + 1] = a end
    return H.run(full, opts)
end

describe("luaworker's errors", function()
    before_each(function() H.flush() end)

    -- the workers that wait out an unreachable Redis (10 s each), started together
    -- at the file's start; each spec below waits for its own
    local unreachable = {}
    setup(function()
        for _, mode in ipairs({ "--stop-when-empty", "--once" }) do
            unreachable[mode] = H.spawn({ "work", "--handlers=" .. H.handlers({}), "--sleep=0.05", "--no-watch",
                mode }, { env = { REDIS_PORT = tostring(closed_port()) } })
        end
    end)
    teardown(function()
        for _, w in pairs(unreachable) do w:stop() end
    end)

    for _, mode in ipairs({ "--stop-when-empty", "--once" }) do
        it("ends work " .. mode .. " with status 1 when Redis cannot be reached for 10 s", function()
            local w = unreachable[mode]
            local r = { status = w:wait(60), stderr = w:stderr() }
            assert.are.equal(1, r.status, r.stderr)
            assert.matches("Connection refused; retrying for up to 10s", r.stderr, 1, true)
            assert.matches("gave up after 10s without Redis running the queue's commands: ending with "
                .. "status 1", r.stderr, 1, true)
            assert.is_nil(r.stderr:find("could not give back", 1, true), r.stderr)
        end)
    end

    it("says once that it cannot read the restart signal, and works on", function()
        local p = job("App\\Jobs\\Rec")
        H.push(p)
        local r = work({ ["App/Jobs/Rec.lua"] = RECORD }, { "--stop-when-empty" },
            { env = { REDIS_CACHE_DB = "99" } })
        assert.are.equal(0, r.status, r.stderr)
        assert.are.same({ p.id }, H.r("LRANGE", "spec:ran", 0, -1))
        local _, said = r.stderr:gsub("cannot read the restart signal", "")
        assert.are.equal(1, said, r.stderr)
        assert.matches("refused SELECT: ERR DB index is out of range%): queue:restart cannot stop this "
            .. "worker until it can", r.stderr)
    end)

    it("keeps no empty traceback in an error luaworker raised itself, in the record or the log", function()
        -- a job past its tries at the pop: MaxAttemptsExceededException, raised by the
        -- worker, no handler frame below it
        local p = job("App\\Jobs\\Rec", { attempts = 3, maxTries = 1 })
        H.push(p)
        local r = work({ ["App/Jobs/Rec.lua"] = "return { handle = function() end }" }, { "--stop-when-empty" })
        assert.are.equal(0, r.status, r.stderr)
        assert.are.equal("Illuminate\\Queue\\MaxAttemptsExceededException: App\\Jobs\\Rec has been attempted "
            .. "too many times or run too long. The job may have previously timed out.",
            H.failed_record(p.uuid).exception)
        assert.is_nil(r.stdout:find("stack traceback", 1, true), r.stdout)
        assert.is_nil(r.stderr:find("stack traceback", 1, true), r.stderr)
    end)

    it("names the argument of luaworker.redis that is not a string or a number", function()
        local p = job("App\\Jobs\\Nil")
        H.push(p)
        work({ ["App/Jobs/Nil.lua"] = 'return { handle = function() require("luaworker").redis("SET", nil, "x") end }\n' },
            { "--stop-when-empty" })
        assert.matches("luaworker.redis(SET, ...): argument 2 is nil: expected a string or a number",
            H.failed_record(p.uuid).exception, 1, true)
    end)

    it("shows a huge attempts count as a number and says 'the <hook> hook'", function()
        local p = job("App\\Jobs\\Raise", { attempts = 1e308, maxTries = 0 })
        H.push(p)
        -- released at once and run again without end (no limit on tries): watched
        -- over three runs, the released copies' too, then stopped
        local w = H.spawn({ "work", "--handlers=" .. H.handlers({
            ["App/Jobs/Raise.lua"] = 'return { handle = function() error("raised") end }\n',
            ["init.lua"] = 'require("luaworker").exception_occurred(function() error("hook raised") end)\n' }),
            "--sleep=0.05", "--no-watch", "--stop-when-empty", "--tries=0" })
        H.wait_until(function()
            return select(2, w:stderr():gsub("error in the exception_occurred hook: ", "")) >= 3
        end, 60, "three runs of the job")
        w:stop()
        local r = { stderr = w:stderr() }
        assert.matches("App\\Jobs\\Raise (attempt 1e+308) raised", r.stderr, 1, true)
        assert.matches("error in the exception_occurred hook: ", r.stderr, 1, true)
        assert.is_nil(r.stderr:find("-9223372036854775808", 1, true))
    end)

    it("writes a handler's print at once, and on stderr with --json", function()
        local p = job("App\\Jobs\\Print")
        H.push(p)
        local files = { ["App/Jobs/Print.lua"] = 'return { handle = function() print("from", "the handler") end }\n' }
        local r = work(files, { "--stop-when-empty" })
        assert.matches("Processing: App\\Jobs\\Print\nfrom\tthe handler\n", r.stdout, 1, true)
        H.push(p)
        r = work(files, { "--stop-when-empty", "--json" })
        for line in r.stdout:gmatch("[^\n]+") do assert.is_true(pcall(H.json.decode, line), line) end
        assert.matches("from\tthe handler\n", r.stderr, 1, true)
        -- killed for its timeout right after: the line is out already
        H.push(job("App\\Jobs\\PrintSpin", { timeout = 1, maxTries = 1 }))
        r = work({ ["App/Jobs/PrintSpin.lua"] = 'return { handle = function() print("before the spin") '
            .. "while true do end end }\n" }, { "--stop-when-empty" })
        assert.matches("before the spin\n", r.stdout, 1, true)
    end)

    it("does not open a FIFO named like a handler", function()
        local dir = H.handlers({})
        os.execute("mkdir -p " .. dir .. "/App/Jobs && mkfifo " .. dir .. "/App/Jobs/Fifo.lua")
        local p = job("App\\Jobs\\Fifo")
        H.push(p)
        local r = H.run({ "work", "--handlers=" .. dir, "--stop-when-empty", "--no-watch", "--sleep=0.05" },
            { timeout = 20 })
        assert.are.equal(0, r.status, r.stderr)
        assert.matches("no handler for App\\Jobs\\Fifo", H.failed_record(p.uuid).exception, 1, true)
    end)

    it("refuses an --env-file that does not end (/dev/zero) with status 2", function()
        local r = H.run({ "work", "--env-file=/dev/zero" }, { timeout = 20 })
        assert.are.equal(2, r.status)
        assert.matches("--env-file=/dev/zero: larger than 1048576 bytes", r.stderr, 1, true)
    end)

    for _, name in ipairs({ "", "../../x", "@bar", "App\\Jobs\\X@", "App Jobs" }) do
        it("refuses to push '" .. name .. "' with status 2, naming it", function()
            local r = H.run({ "push", name, "{}" })
            assert.are.equal(2, r.status)
            assert.matches("push: '" .. name .. "' is not a job class", r.stderr, 1, true)
            assert.are.equal(0, #H.r("KEYS", "*"))
        end)
    end

    it("refuses an empty --queue with status 2", function()
        local r = H.run({ "push", "App\\Jobs\\X", "--queue=" })
        assert.are.equal(2, r.status)
        assert.matches("--queue=: expected a value", r.stderr, 1, true)
    end)

    it("takes the ids after -- as they are: '-h', and 'all' as an id", function()
        for _, id in ipairs({ "-h", "all" }) do
            local r = H.run({ "forget", "--", id })
            assert.are.equal(1, r.status, r.stdout)
            assert.matches("No failed job matches the given ID.", r.stderr, 1, true)
        end
        H.r("HSET", "laravel_database_luaworker:failed_jobs:all", "payload", "{}")
        H.r("ZADD", "laravel_database_luaworker:failed_jobs", 1, "all")
        H.r("ZADD", "laravel_database_luaworker:failed_jobs", 2, "other")
        local r = H.run({ "retry", "--", "all" })
        assert.matches("[all]", r.stdout, 1, true)
        assert.is_not_nil(H.r("ZSCORE", "laravel_database_luaworker:failed_jobs", "other"))
    end)
end)
