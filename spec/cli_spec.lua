-- The command line: help, and the checks that reject bad input with exit status 2
-- before anything touches Redis.
local H = require "spec.helpers"

-- Port 1 has no Redis: a command that reached Redis would fail with a connection
-- error (exit 1) instead of the command-line message.
local NO_REDIS = { env = { REDIS_PORT = "1" } }

local function run(args)
    return H.run(args, NO_REDIS)
end

-- Asserts that args are rejected with exit 2, message on stderr and nothing on stdout.
local function rejects(args, message)
    local r = run(args)
    assert.are.same({ status = 2, stdout = "", stderr = "luaworker: " .. message .. "\n" }, r)
end

-- The end of the message for a bad --backoff or --delay list.
local BACKOFF = ": expected a whole number of seconds from 0 to 2147483647, or a comma-separated list "
    .. "of them such as 1,5,10"

-- The option lines of `luaworker help work` that carry queue:work's defaults.
local WORK_DEFAULTS = {
    { "name", "default" }, { "delay", "0" }, { "backoff", "0" }, { "max-jobs", "0" },
    { "max-time", "0" }, { "memory", "128" }, { "sleep", "3" }, { "rest", "0" },
    { "timeout", "60" }, { "tries", "1" },
}

local COMMANDS = { "work", "failed", "retry", "forget", "flush", "push", "size", "peek", "clear", "notify", "restart", "status", "make", "run", "test", "lua" }

local function option_line(stdout, name)
    return stdout:match("\n  (%-%-" .. name:gsub("%-", "%%-") .. "[= ][^\n]*)\n")
end

describe("luaworker help", function()
    it("lists every command, exit 0, without Redis", function()
        local r = run({ "help" })
        assert.are.equal(0, r.status)
        assert.are.equal("", r.stderr)
        assert.matches("^usage: luaworker <command> %[arguments%] %[options%]\n", r.stdout)
        for _, c in ipairs(COMMANDS) do
            assert.matches("\n  " .. c .. " +%S[^\n]*\n", r.stdout)
        end
    end)

    it("is also shown for --help", function()
        assert.are.equal(run({ "help" }).stdout, run({ "--help" }).stdout)
    end)

    it("says with --version and -V the version the Makefile gives, the Laravel versions and the libraries", function()
        local version = H.read_file(H.root .. "/Makefile"):match("\nVERSION%s*=%s*(%S+)")
        local r = run({ "--version" })
        assert.are.same({ 0, "" }, { r.status, r.stderr })
        assert.are.equal("luaworker " .. version .. "\nspeaks Laravel 8.83 to 13", r.stdout:sub(1, 36 + #version))
        for _, library in ipairs({ "\n  LuaJIT 2%.1", "\n  hiredis %d+%.%d+%.%d+\n", "\n  libev %d+%.%d+ ",
            "\n  OpenSSL %d", "\n  lua%-cjson %d", "\n  libcurl%.so%.4 %(luaworker%.http%): libcurl/%d",
            "\n  libpq%.so%.5 %(PostgreSQL%): %d+%.%d+\n", "\n  libsqlite3%.so%.0 %(SQLite%): 3%.",
            "\n  libmicrohttpd%.so%.12 %(%-%-metrics%): %d+%.%d+", "\n  libxxhash%.so%.0 %(php%.xxh128, Laravel 12's keys%): 0%.%d+%.%d+\n" }) do
            assert.matches(library, r.stdout)
        end
        assert.are.same(r, run({ "-V" }))
    end)

    it("shows lua's options before the file, where they are luaworker's: after it they are the script's",
        function()
        local r = run({ "help", "lua" })
        assert.matches("^usage: luaworker lua %[options%] <file> %[args%.%.%.%]\n", r.stdout)
        local dir = H.tmpdir()
        H.write_file(dir .. "/args.lua", "print(table.concat(arg or {}, ' '))")
        H.write_file(dir .. "/.env", "APP_NAME=from-env-file\n")
        r = run({ "lua", "--env-file=" .. dir .. "/.env", dir .. "/args.lua", "--env-file=x" })
        assert.are.same({ 0, "--env-file=x\n" }, { r.status, r.stdout })
    end)
end)

describe("luaworker lua", function()
    it("ends with its script, status 0, when a task's timer is due in the turn of the loop the script ends in",
        function()
        local file = H.tmpdir() .. "/turn.lua"
        -- A wakes just after the script; C keeps the loop busy past both, so that both
        -- wake in one turn of the loop, the script first (an internal error, status 70,
        -- when A's wake-up resumed the script's ended coroutine)
        H.write_file(file, [[
local lw = require "luaworker"
local task = require "luaworker.loop.task"
task.spawn(function() end, nil, function() lw.sleep(0.02) end)
task.spawn(function() end, nil, function()
    lw.sleep(0.001)
    local stop = os.clock() + 0.1
    while os.clock() < stop do end
    lw.sleep(10)
end)
lw.sleep(0.01)
]])
        local r = H.run({ "lua", file })
        assert.are.same({ 0, "" }, { r.status, r.stderr })
    end)
end)

describe("luaworker help work", function()
    it("shows queue:work's default for each option that has one", function()
        local r = run({ "help", "work" })
        assert.are.equal(0, r.status)
        assert.matches("^usage: luaworker work %[connection%] %[options%]\n", r.stdout)
        for _, d in ipairs(WORK_DEFAULTS) do
            local line = option_line(r.stdout, d[1])
            assert.is_not_nil(line, "--" .. d[1] .. " is listed")
            assert.matches("^%-%-" .. d[1]:gsub("%-", "%%-") .. "=VALUE .*%[default: " .. d[2] .. "%]$", line)
        end
    end)

    it("lists the flags without a value", function()
        local r = run({ "help", "work" })
        for _, flag in ipairs({ "once", "stop-when-empty", "force", "quiet", "json", "daemon" }) do
            local line = option_line(r.stdout, flag)
            assert.is_not_nil(line, "--" .. flag .. " is listed")
            assert.matches("^%-%-" .. flag:gsub("%-", "%%-") .. " ", line)
        end
    end)

    it("lists the options every command has", function()
        local r = run({ "help", "work" })
        assert.is_not_nil(option_line(r.stdout, "env-file"))
        assert.is_not_nil(option_line(r.stdout, "scripts"))
        assert.matches("from composer.lock or vendor/ beside %-%-env%-file, else 8.83%)$",
            option_line(r.stdout, "laravel"))
        assert.is_not_nil(option_line(r.stdout, "laravel-version"))
    end)

    it("is also shown for work --help", function()
        assert.are.equal(run({ "help", "work" }).stdout, run({ "work", "--help" }).stdout)
    end)

    it("shows push's job options", function()
        local r = run({ "help", "push" })
        assert.matches("^usage: luaworker push <displayName|Class@method> %[json%-data%] %[options%]\n", r.stdout)
        for _, o in ipairs({ "queue", "delay", "tries", "backoff", "timeout", "max-exceptions", "retry-until" }) do
            assert.is_not_nil(option_line(r.stdout, o), "--" .. o .. " is listed")
        end
    end)
end)

describe("luaworker command line", function()
    it("reaches Redis for a valid command (so the port used below is closed)", function()
        local r = run({ "size" })
        assert.are.equal(1, r.status)
        assert.matches("Connection refused", r.stderr)
    end)

    it("rejects an unknown command, naming every command there is", function()
        rejects({ "bogus" }, "unknown command 'bogus' (expected one of: work, failed, retry, forget, "
            .. "flush, push, size, peek, clear, notify, restart, status, make, run, test, lua, help)")
    end)

    it("rejects an unknown long option", function()
        rejects({ "work", "--bogus" }, "work: unknown option '--bogus' (see luaworker help work)")
    end)

    it("rejects an unknown short option", function()
        rejects({ "work", "-x" }, "work: unknown option '-x'")
    end)

    it("rejects an option of another command", function()
        rejects({ "size", "--tries=3" }, "size: unknown option '--tries' (see luaworker help size)")
    end)

    it("rejects --sleep=abc", function()
        rejects({ "work", "--sleep=abc" }, "--sleep=abc: expected seconds from 0 to 86400")
    end)

    it("rejects --tries=-1", function()
        rejects({ "work", "--tries=-1" }, "--tries=-1: expected a whole number of attempts from 0 to 2147483647")
    end)

    it("rejects an empty whole-number value", function()
        rejects({ "work", "--tries=" }, "--tries=: expected a whole number of attempts from 0 to 2147483647")
    end)

    it("rejects a whole number above 2147483647", function()
        rejects({ "work", "--max-jobs=2147483648" },
            "--max-jobs=2147483648: expected a whole number of jobs from 0 to 2147483647")
    end)

    it("rejects --backoff=1,x", function()
        rejects({ "work", "--backoff=1,x" }, "--backoff=1,x" .. BACKOFF)
    end)

    it("rejects a --backoff list with a trailing comma", function()
        rejects({ "push", "App\\Jobs\\X", "--backoff=1," },
            "--backoff=1," .. BACKOFF)
    end)

    it("rejects --memory=1.5", function()
        rejects({ "work", "--memory=1.5" }, "--memory=1.5: expected a whole number of MB from 0 to 1048576")
    end)

    it("rejects a value given to a flag", function()
        rejects({ "work", "--once=1" }, "--once takes no value")
    end)

    it("rejects an option missing its value", function()
        rejects({ "work", "--queue" }, "--queue: expected a value")
    end)

    it("rejects --laravel-version outside 8 to 13", function()
        rejects({ "restart", "--laravel-version=7" }, "--laravel-version=7: expected a Laravel version "
            .. "from 8 to 13, as 12.51 (or 12 for its newest)")
    end)

    it("rejects retry without an id", function()
        rejects({ "retry" }, "retry: missing argument (usage: luaworker retry <id>... | all)")
    end)

    it("rejects forget without an id", function()
        rejects({ "forget" }, "forget: missing argument (usage: luaworker forget <id>)")
    end)

    it("rejects push without a job name", function()
        rejects({ "push" },
            "push: missing argument (usage: luaworker push <displayName|Class@method> [json-data])")
    end)

    it("rejects an extra argument", function()
        rejects({ "forget", "a", "b" }, "forget: unexpected argument 'b' (usage: luaworker forget <id>)")
    end)

    it("rejects --scripts naming no directory", function()
        rejects({ "size", "--scripts=/nonexistent" }, "--scripts=/nonexistent: not a directory")
    end)

    -- Values the checks above let through before.
    local BAD_VALUES = {
        { { "work", "--sleep=" }, "--sleep=: expected seconds from 0 to 86400" },
        { { "work", "--sleep=0x10" }, "--sleep=0x10: expected seconds from 0 to 86400" },
        { { "work", "--rest=1e3" }, "--rest=1e3: expected seconds from 0 to 86400" },
        { { "work", "--block-for=1.5.2" }, "--block-for=1.5.2: expected seconds from 0 to 86400" },
        { { "work", "--backoff=1,2147483648" }, "--backoff=1,2147483648" .. BACKOFF },
        { { "work", "--laravel-version=007" }, "--laravel-version=007: expected a Laravel version from 8 to 13, as 12.51 (or 12 for its newest)" },
        { { "work", "--laravel-version=14" }, "--laravel-version=14: expected a Laravel version from 8 to 13, as 12.51 (or 12 for its newest)" },
        { { "work", "--laravel=12.y" }, "--laravel=12.y: expected a Laravel version from 8 to 13, as 12.51 (or 12 for its newest)" },
        { { "work", "--laravel=12.5.1.0" }, "--laravel=12.5.1.0: expected a Laravel version from 8 to 13, as 12.51 (or 12 for its newest)" },
        { { "work", "--processes=0" }, "--processes=0: expected a whole number of processes from 1 to 512" },
        { { "work", "--processes=100000" }, "--processes=100000: expected a whole number of processes from 1 to 512" },
        { { "work", "--heartbeat=0" }, "--heartbeat=0: expected seconds from 0.1 to 86400" },
        { { "work", "--heartbeat=x" }, "--heartbeat=x: expected seconds from 0.1 to 86400" },
        { { "work", "--handlers=/nonexistent" }, "--handlers=/nonexistent: not a directory" },
        { { "work", "--once", "--handlers=/nonexistent" }, "--handlers=/nonexistent: not a directory" },
        { { "push", "App\\Jobs\\X", "--retry-until=-5" },
            "--retry-until=-5: expected a whole number of seconds from 0 to 2147483647" },
    }
    for _, case in ipairs(BAD_VALUES) do
        it("rejects " .. table.concat(case[1], " ", 2), function()
            rejects(case[1], case[2])
        end)
    end

    it("takes an option's value from the next argument", function()
        H.flush()
        local r = H.run({ "push", "App\\Jobs\\X", "--queue", "emails", "--tries", "4" })
        assert.are.equal(0, r.status, r.stderr)
        local p = H.json.decode(H.r("LINDEX", H.keys("emails"), 0))
        assert.are.equal(4, p.maxTries)
    end)
end)

-- Each numeric option's range is checked where the command line is read, before the
-- supervisor starts a worker: a value a worker could not run (a --heartbeat whose
-- time to live rounds to 0 ms ended every worker at its start, and the supervisor
-- started it again forever) stops the command with 2 instead.
describe("luaworker option ranges", function()
    local recorder = require "spec.recorder"

    -- Connections the private Redis has accepted so far (the spec's own is open).
    local function connections()
        return tonumber(H.r("INFO", "stats"):match("total_connections_received:(%d+)"))
    end

    -- Asserts that args (and env) are rejected with exit 2 and exactly message, within
    -- seconds and without a connection to Redis: no worker was started.
    local function refuses(args, message, env)
        local before = connections()
        local r = H.run(args, { env = env, timeout = 10 })
        assert.are.same({ status = 2, stdout = "", stderr = "luaworker: " .. message .. "\n" }, r)
        assert.are.equal(before, connections(), "a connection to Redis")
    end

    local WHOLE = ": expected a whole number of "
    local SECONDS = ": expected seconds from "
    -- just outside each option's range, and values that are no number in it
    local OUTSIDE = {
        { "--delay=2147483648", BACKOFF },
        { "--backoff=-1", BACKOFF },
        { "--backoff=1,,2", BACKOFF },
        { "--max-jobs=-1", WHOLE .. "jobs from 0 to 2147483647" },
        { "--max-time=2147483648", WHOLE .. "seconds from 0 to 2147483647" },
        { "--memory=1048577", WHOLE .. "MB from 0 to 1048576" },
        { "--memory-limit=1048577", WHOLE .. "MB from 0 to 1048576" },
        { "--sleep=86400.001", SECONDS .. "0 to 86400" },
        { "--sleep=-1", SECONDS .. "0 to 86400" },
        { "--sleep=nan", SECONDS .. "0 to 86400" },
        { "--sleep=inf", SECONDS .. "0 to 86400" },
        { "--sleep=1e300", SECONDS .. "0 to 86400" },
        { "--sleep= 5", SECONDS .. "0 to 86400" },
        { "--sleep=5 ", SECONDS .. "0 to 86400" },
        { "--sleep=.", SECONDS .. "0 to 86400" },
        { "--rest=86401", SECONDS .. "0 to 86400" },
        { "--timeout=2147483648", WHOLE .. "seconds from 0 to 2147483647" },
        { "--tries=99999999999999999999", WHOLE .. "attempts from 0 to 2147483647" },
        { "--tries=1.5", WHOLE .. "attempts from 0 to 2147483647" },
        { "--tries=0x10", WHOLE .. "attempts from 0 to 2147483647" },
        { "--tries= 5", WHOLE .. "attempts from 0 to 2147483647" },
        { "--tries=5 ", WHOLE .. "attempts from 0 to 2147483647" },
        { "--tries=1e3", WHOLE .. "attempts from 0 to 2147483647" },
        { "--processes=513", WHOLE .. "processes from 1 to 512" },
        { "--concurrency=0", WHOLE .. "jobs from 1 to 10000" },
        { "--concurrency=-1", WHOLE .. "jobs from 1 to 10000" },
        { "--concurrency=10001", WHOLE .. "jobs from 1 to 10000" },
        { "--retry-after=0", WHOLE .. "seconds from 1 to 2147483647" },
        { "--retry-after=2147483648", WHOLE .. "seconds from 1 to 2147483647" },
        { "--heartbeat=0.0001", SECONDS .. "0.1 to 86400" },
        { "--heartbeat=0.09", SECONDS .. "0.1 to 86400" },
        { "--heartbeat=86400.5", SECONDS .. "0.1 to 86400" },
        { "--block-for=86401", SECONDS .. "0 to 86400" },
        { "--migration-batch-size=0", WHOLE .. "jobs from 1 to 2147483647" },
        { "--migration-batch-size=2147483648", WHOLE .. "jobs from 1 to 2147483647" },
    }
    for _, case in ipairs(OUTSIDE) do
        it("refuses work " .. case[1] .. " before any worker starts", function()
            refuses({ "work", "--handlers=" .. H.root .. "/handlers", case[1] }, case[1] .. case[2])
        end)
    end

    local PUSH_OUTSIDE = {
        { "--delay=2147483648", WHOLE .. "seconds from 0 to 2147483647" },
        { "--tries=-1", WHOLE .. "attempts from 0 to 2147483647" },
        { "--backoff=x", BACKOFF },
        { "--timeout=1.5", WHOLE .. "seconds from 0 to 2147483647" },
        { "--max-exceptions=2147483648", WHOLE .. "exceptions from 0 to 2147483647" },
        { "--retry-until=2147483648", WHOLE .. "seconds from 0 to 2147483647" },
    }
    for _, case in ipairs(PUSH_OUTSIDE) do
        it("refuses push " .. case[1] .. " without pushing", function()
            refuses({ "push", "App\\Jobs\\X", case[1] }, case[1] .. case[2])
        end)
    end

    it("checks LUAWORKER_CONCURRENCY as --concurrency, naming it", function()
        for _, v in ipairs({ "0", "10001", "many", "", " 5", "+5" }) do
            refuses({ "work", "--handlers=" .. H.root .. "/handlers" },
                "LUAWORKER_CONCURRENCY=" .. v .. WHOLE .. "jobs from 1 to 10000", { LUAWORKER_CONCURRENCY = v })
        end
    end)

    it("leaves LUAWORKER_CONCURRENCY unread when --concurrency is given", function()
        H.flush()
        local handlers = H.handlers({ ["App/Jobs/Spec.lua"] = recorder.HANDLER })
        H.push(recorder.spec_job("ok"))
        local r = H.run({ "work", "--handlers=" .. handlers, "--stop-when-empty", "--concurrency=2" },
            { env = { LUAWORKER_CONCURRENCY = "many" } })
        assert.are.equal(0, r.status, r.stderr)
        assert.are.equal(1, #recorder.ran())
    end)

    -- Every option at the bounds of its range, in one run each: the worker starts and
    -- runs a job. (--processes=512 is left out: 512 processes are too many for a spec
    -- machine; --rest's upper bound is below, since it rests after the job.)
    local BOUNDS = {
        { "lowest", { "--delay=0", "--backoff=0", "--max-jobs=0", "--max-time=0", "--memory=0",
            "--memory-limit=0", "--sleep=0", "--rest=0", "--timeout=0", "--tries=0", "--processes=1",
            "--concurrency=1", "--retry-after=1", "--heartbeat=0.1", "--block-for=0",
            "--migration-batch-size=1" } },
        { "highest", { "--delay=2147483647", "--backoff=0,2147483647", "--max-jobs=2147483647",
            "--max-time=2147483647", "--memory=1048576", "--memory-limit=1048576", "--sleep=86400",
            "--timeout=2147483647", "--tries=2147483647", "--concurrency=10000",
            "--retry-after=2147483647", "--heartbeat=86400", "--block-for=86400",
            "--migration-batch-size=2147483647" } },
    }
    for _, bound in ipairs(BOUNDS) do
        it("runs a job with every work option at its " .. bound[1] .. " accepted value", function()
            H.flush()
            local handlers = H.handlers({ ["App/Jobs/Spec.lua"] = recorder.HANDLER })
            H.push(recorder.spec_job("ok"))
            local args = { "work", "--handlers=" .. handlers, "--stop-when-empty" }
            for _, o in ipairs(bound[2]) do args[#args + 1] = o end
            local r = H.run(args, { timeout = 20 })
            assert.are.equal(0, r.status, r.stderr)
            assert.are.equal(1, #recorder.ran())
            assert.is_nil(r.stderr:match("expected"), r.stderr)
        end)
    end

    it("rests --rest=86400 after a job, until a stop signal", function()
        H.flush()
        local handlers = H.handlers({ ["App/Jobs/Spec.lua"] = recorder.HANDLER })
        H.push(recorder.spec_job("ok"))
        local w = H.spawn({ "work", "--handlers=" .. handlers, "--rest=86400" })
        H.wait_until(function() return #recorder.ran() == 1 end, 10, "the job")
        w:kill("TERM")
        assert.are.equal(0, w:wait(10))
    end)

    it("pushes a job with every push option at its bounds", function()
        for _, options in ipairs({
            { "--delay=0", "--tries=0", "--backoff=0", "--timeout=0", "--max-exceptions=0", "--retry-until=0" },
            { "--delay=2147483647", "--tries=2147483647", "--backoff=2147483647,0", "--timeout=2147483647",
                "--max-exceptions=2147483647", "--retry-until=2147483647" },
        }) do
            H.flush()
            local args = { "push", "App\\Jobs\\X" }
            for _, o in ipairs(options) do args[#args + 1] = o end
            local r = H.run(args)
            assert.are.equal(0, r.status, r.stderr)
            local list, delayed = H.keys()
            local text = H.r("LINDEX", list, 0) or H.r("ZRANGE", delayed, 0, 0)[1]
            local p = H.json.decode(text)
            local tries = options[2]:match("=(%d+)")
            assert.are.equal(tonumber(tries), p.maxTries)
        end
    end)

    it("shows each numeric option's range in the help", function()
        local r = run({ "help", "work" })
        assert.matches("^%-%-heartbeat=VALUE .* %[from 0%.1 to 86400%]$", option_line(r.stdout, "heartbeat"))
        assert.matches("^%-%-processes=VALUE .* %[from 1 to 512%] %[default: 1%]$", option_line(r.stdout, "processes"))
        assert.matches("^%-%-concurrency=VALUE .* %[from 1 to 10000%]$", option_line(r.stdout, "concurrency"))
        assert.matches("^%-%-memory=VALUE .* %[from 0 to 1048576%] %[default: 128%]$", option_line(r.stdout, "memory"))
        r = run({ "help", "push" })
        assert.matches("^%-%-retry%-until=VALUE .* %[from 0 to 2147483647%]$", option_line(r.stdout, "retry-until"))
    end)
end)

describe("make demo (examples/demo.sh), the README's first command", function()
    it("runs the app's jobs, keeps the failing one and shows its retry, on a configured Redis", function()
        -- (REDIS_PORT given: the demo uses this Redis, the queue luaworker-demo)
        local dir = H.tmpdir()
        local ok = os.execute(string.format("cd %s && env REDIS_HOST=127.0.0.1 REDIS_PORT=%d "
            .. "timeout -s KILL 120 bash examples/demo.sh >%s/out 2>&1 </dev/null", H.quote(H.root), H.port, dir))
        local out = H.read_file(dir .. "/out")
        assert.is_true(ok == true or ok == 0, out)
        assert.matches("Processed:%s+App\\Jobs\\ProcessPodcast", out)
        assert.matches("| App\\Jobs\\Failing ", out, 1, true)
        assert.matches("has been pushed back onto the queue!", out, 1, true)
        assert.matches("luaworker-demo: 1 pending, 0 delayed, 0 reserved", out, 1, true)
    end)
end)
