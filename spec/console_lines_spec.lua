-- The console lines of `luaworker work` for the Laravel version it speaks: Laravel
-- 8.83's "[<time>][<id>] Processing: <job>" up to 9.20; from 9.21 the two-column
-- lines of WorkCommand (9.41+: a RUNNING line, then DONE or FAIL with the run time),
-- compared byte for byte with the real Laravel 12.67 worker where the fixture is
-- (spec/laravel12.lua), and with lines captured from it where it is not.
local H = require "spec.helpers"
local L12 = require "spec.laravel12"

local handlers = H.handlers({
    ["App/Jobs/ConsoleDone.lua"] = "return { handle = function() end }",
    ["App/Jobs/ConsoleFail.lua"] = 'return { handle = function() error("boom") end }',
    ["App/Jobs/ConsoleRelease.lua"] = 'return { handle = function() error("again") end }',
    ["App/Jobs/ConsoleSlow.lua"] = [[
local luaworker = require "luaworker"
return { handle = function() luaworker.sleep(1.2) end }]],
    ["App/Jobs/ConsoleLong.lua"] = [[
local luaworker = require "luaworker"
return { handle = function() luaworker.sleep(3.2) end }]],
    ["App/Jobs/ConsoleTimeout.lua"] = [[
local luaworker = require "luaworker"
return { handle = function() luaworker.sleep(3) end }]],
    ["App/Jobs/ConsoleBusy.lua"] = "return { handle = function() while true do end end }",
})

-- The same jobs as PHP classes, for Laravel 12: ConsoleRelease has two tries (its
-- first attempt is released), ConsoleTimeout a timeout of 1 s.
local PHP_JOBS = {
    ConsoleDone = "    public function handle() {}",
    ConsoleFail = "    public function handle() { throw new \\RuntimeException('boom'); }",
    ConsoleRelease = "    public $tries = 2;\n    public $backoff = 60;\n"
        .. "    public function handle() { throw new \\RuntimeException('again'); }",
    ConsoleSlow = "    public function handle() { usleep(1200000); }",
    ConsoleTimeout = "    public $timeout = 1;\n    public function handle() { sleep(3); }",
}

-- The payloads luaworker-only specs push for the jobs (as Laravel 12 would).
local PAYLOAD_FIELDS = {
    ConsoleRelease = { maxTries = 2, backoff = "60" },
    ConsoleTimeout = { timeout = 1 },
    ConsoleBusy = { timeout = 1 },
}

local function push(names)
    H.flush()
    for _, name in ipairs(names) do
        H.push(H.class_payload("App\\Jobs\\" .. name, PAYLOAD_FIELDS[name]))
    end
end

-- The environment both workers see: no COLUMNS unless given, colours only when
-- FORCE_COLOR is given, times in UTC.
local function console_env(env)
    local e = { COLUMNS = false, FORCE_COLOR = false, NO_COLOR = false, COLORTERM = false,
        APP_TIMEZONE = false }
    for k, v in pairs(env or {}) do e[k] = v end
    return e
end

-- `luaworker work --stop-when-empty` speaking Laravel version; returns {status,
-- stdout, stderr}.
local function work(version, env, args)
    local full = { "work", "--handlers=" .. handlers, "--stop-when-empty", "--laravel=" .. version }
    for _, a in ipairs(args or {}) do full[#full + 1] = a end
    return H.run(full, { env = console_env(env) })
end

local DOT = "\27[90m.\27[39m"

-- A console line with what differs from run to run masked: the time, and a run time
-- in milliseconds as "<ms>", the dots before it then as many more as the run time
-- had characters beyond 4, so the line keeps its width (dots and run time together
-- fill the width less the job's name and 31 columns: their sum is what a width
-- fixes). A run time in seconds ("1s") stays.
local function normalize_line(line)
    line = line:gsub("%d%d%d%d%-%d%d%-%d%d %d%d:%d%d:%d%d", "<time>")
    local coloured = line:find(DOT, 1, true) ~= nil
    local dot = coloured and "\1" or "%."
    if coloured then line = line:gsub("\27%[90m%.\27%[39m", "\1") end
    local open = coloured and "\27[90m" or ""
    local head, dots, run_time, rest = line:match("^(.- )(" .. dot .. "+) " .. open:gsub("%[", "%%[")
        .. "([%d,]+%.%d%dms)(.*)$")
    if head then
        line = head .. string.rep(coloured and "\1" or ".", #dots + #run_time - 4) .. " " .. open
            .. "<ms>" .. rest
    else
        line = line:gsub("[%d,]+%.%d%dms", "<ms>")
    end
    return (line:gsub("\1", DOT))
end

local function normalize(text)
    local lines = {}
    for line in text:gsub("\r", ""):gmatch("([^\n]*)\n") do lines[#lines + 1] = normalize_line(line) end
    return table.concat(lines, "\n") .. (#lines > 0 and "\n" or "")
end

-- Lines captured from Laravel 12.67's queue:work (normalized), COLUMNS unset and no
-- terminal: 80 columns.
local DONE_80 = "  <time> App\\Jobs\\ConsoleDone ........................... RUNNING\n"
    .. "  <time> App\\Jobs\\ConsoleDone ......................... <ms> DONE\n"
local FAIL_80 = "  <time> App\\Jobs\\ConsoleFail ........................... RUNNING\n"
    .. "  <time> App\\Jobs\\ConsoleFail ......................... <ms> FAIL\n"
local RELEASE_80 = "  <time> App\\Jobs\\ConsoleRelease ........................ RUNNING\n"
    .. "  <time> App\\Jobs\\ConsoleRelease ...................... <ms> FAIL\n"
local SLOW_80 = "  <time> App\\Jobs\\ConsoleSlow ........................... RUNNING\n"
    .. "  <time> App\\Jobs\\ConsoleSlow ........................... 1s DONE\n"
local TIMEOUT_80 = "  <time> App\\Jobs\\ConsoleTimeout ........................ RUNNING\n"
    .. "  <time> App\\Jobs\\ConsoleTimeout ........................ 1s FAIL\n"
-- (luaworker's: the same for a job that computes past its timeout of 1 s)
local BUSY_80 = "  <time> App\\Jobs\\ConsoleBusy ........................... RUNNING\n"
    .. "  <time> App\\Jobs\\ConsoleBusy ........................... 1s FAIL\n"
-- COLUMNS=100
local DONE_100 = "  <time> App\\Jobs\\ConsoleDone ............................................... RUNNING\n"
    .. "  <time> App\\Jobs\\ConsoleDone ............................................. <ms> DONE\n"
-- COLUMNS=40: the name leaves no room for dots
local DONE_40 = "  <time> App\\Jobs\\ConsoleDone  RUNNING\n  <time> App\\Jobs\\ConsoleDone  <ms> DONE\n"
-- FORCE_COLOR=1
local DONE_COLOURED = "  \27[90m<time>\27[39m App\\Jobs\\ConsoleDone " .. string.rep(DOT, 27)
    .. " \27[33;1mRUNNING\27[39;22m\n  \27[90m<time>\27[39m App\\Jobs\\ConsoleDone "
    .. string.rep(DOT, 25) .. " \27[90m<ms>\27[39m \27[32;1mDONE\27[39;22m\n"
-- On a terminal (stty answers) of 90 columns, TERM=dumb, --queue=high,default
local TERMINAL_90 = "\n   INFO  Processing jobs from the [high,default] queues.  \n\n"
    .. "  <time> App\\Jobs\\ConsoleDone ..................................... RUNNING\n"
    .. "  <time> App\\Jobs\\ConsoleDone ................................... <ms> DONE\n"

-- The command line (a string) run with a terminal of 90 columns as its standard
-- input and output, by script(1); TERM=dumb (no colours).
local function on_terminal(command)
    return string.format("TERM=dumb script -qec %s /dev/null",
        H.quote("stty cols 90 rows 20; " .. command))
end

-- Runs a shell command line (in dir, with env: a table, false unsets) and returns
-- its stdout.
local function shell(dir, env, command)
    local words = { "env" }
    for k, v in pairs(env) do
        if v == false then words[#words + 1] = "-u " .. k end
    end
    for k, v in pairs(env) do
        if v ~= false then words[#words + 1] = k .. "=" .. H.quote(v) end
    end
    local out = H.tmpdir() .. "/out"
    os.execute(string.format("cd %s && %s %s >%s 2>/dev/null </dev/null", H.quote(dir),
        table.concat(words, " "), command, out))
    return H.read_file(out) or ""
end

describe("console lines, beside Laravel 12.67's queue:work", function()
    local app, missing = L12.app()
    if not app then
        pending(missing)
        return
    end

    setup(function()
        for name, body in pairs(PHP_JOBS) do L12.job(name, body) end
    end)

    local function dispatch(names)
        H.flush()
        local code = {}
        for i, name in ipairs(names) do code[i] = "dispatch(new App\\Jobs\\" .. name .. ");" end
        L12.php(table.concat(code, "\n"))
    end

    -- stdout of Laravel 12's queue:work, then of luaworker, on the same jobs
    local function both(names, env, args, on_tty)
        local lw = { H.root .. "/luaworker", "work", "--handlers=" .. handlers, "--stop-when-empty",
            "--laravel=12" }
        local php = { "php", "artisan", "queue:work", "--stop-when-empty" }
        for _, a in ipairs(args or {}) do
            lw[#lw + 1] = a
            php[#php + 1] = a
        end
        local function line(words)
            local quoted = {}
            for i, w in ipairs(words) do quoted[i] = H.quote(w) end
            local command = "timeout -s KILL 60 " .. table.concat(quoted, " ")
            return on_tty and on_terminal(command) or command
        end
        local full_env = L12.env(console_env(env))
        dispatch(names)
        local laravel = shell(app, full_env, line(php))
        -- the jobs a timeout ended stay reserved in Laravel's hands: pushed afresh
        dispatch(names)
        local luaworker = shell(H.root, full_env, line(lw))
        return normalize(laravel), normalize(luaworker)
    end

    it("are the same for a job done, one failed and one released, 80 columns without COLUMNS "
        .. "or a terminal", function()
        local laravel, luaworker = both({ "ConsoleDone", "ConsoleFail", "ConsoleRelease" })
        assert.are.equal(DONE_80 .. FAIL_80 .. RELEASE_80, laravel)
        assert.are.equal(laravel, luaworker)
    end)

    it("give a run time over a second in seconds, as Laravel does", function()
        local laravel, luaworker = both({ "ConsoleSlow" })
        assert.are.equal(SLOW_80, laravel)
        assert.are.equal(laravel, luaworker)
    end)

    it("fail a job its timeout ended", function()
        local laravel, luaworker = both({ "ConsoleTimeout" })
        -- Laravel's own run time of this job runs from its start to the FAIL line:
        -- its alarm is set a moment before the start, the line written after the
        -- failure is recorded; on a loaded machine that is 99x.xxms as often as 1s
        local function any_run_time(text)
            return (text:gsub("(%.+) (%S+) FAIL\n", function(dots, run_time)
                return string.rep(".", #dots + #run_time - 3) .. " <t> FAIL\n"
            end))
        end
        assert.are.equal(any_run_time(TIMEOUT_80), any_run_time(laravel))
        assert.are.equal(any_run_time(laravel), any_run_time(luaworker))
    end)

    it("fill the width COLUMNS gives, and write no dots where the name leaves no room", function()
        local laravel, luaworker = both({ "ConsoleDone" }, { COLUMNS = "100" })
        assert.are.equal(DONE_100, laravel)
        assert.are.equal(laravel, luaworker)
        laravel, luaworker = both({ "ConsoleDone" }, { COLUMNS = "40" })
        assert.are.equal(DONE_40, laravel)
        assert.are.equal(laravel, luaworker)
        laravel, luaworker = both({ "ConsoleDone" }, { COLUMNS = " 100x" })
        assert.are.equal(DONE_100, laravel)
        assert.are.equal(laravel, luaworker)
    end)

    it("are coloured as Symfony colours them with FORCE_COLOR", function()
        local laravel, luaworker = both({ "ConsoleDone" }, { FORCE_COLOR = "1" })
        assert.are.equal(DONE_COLOURED, laravel)
        assert.are.equal(laravel, luaworker)
    end)

    it("start with the INFO notice and take the width stty gives on a terminal", function()
        local laravel, luaworker = both({ "ConsoleDone" }, nil, { "--queue=high,default" }, true)
        assert.are.equal(TERMINAL_90, laravel)
        assert.are.equal(laravel, luaworker)
    end)
end)

describe("console lines", function()
    it("are Laravel 9.41+'s for --laravel=11 (captured from Laravel 12's worker)", function()
        push({ "ConsoleDone", "ConsoleFail", "ConsoleRelease" })
        local r = work("11")
        assert.are.equal(0, r.status, r.stderr)
        assert.are.equal(DONE_80 .. FAIL_80 .. RELEASE_80, normalize(r.stdout))
        assert.matches("^  %d%d%d%d%-%d%d%-%d%d %d%d:%d%d:%d%d App\\Jobs\\ConsoleDone %.+ RUNNING\n"
            .. "  %d%d%d%d%-%d%d%-%d%d %d%d:%d%d:%d%d App\\Jobs\\ConsoleDone %.+ %d%.%d%dms DONE\n", r.stdout)
    end)

    it("fail a job whose process was ended for its timeout, timed from its start", function()
        push({ "ConsoleBusy" })
        local r = work("12")
        assert.are.equal(0, r.status, r.stderr)
        assert.are.equal(BUSY_80, normalize(r.stdout))
    end)

    it("take the width from COLUMNS as PHP's (int) reads it", function()
        for _, columns in ipairs({ "100", " 100x", "1e2", "100.9" }) do
            push({ "ConsoleDone" })
            assert.are.equal(DONE_100, normalize(work("12", { COLUMNS = columns }).stdout), columns)
        end
        push({ "ConsoleDone" })
        assert.are.equal(DONE_40, normalize(work("12", { COLUMNS = "" }).stdout))
    end)

    it("are coloured with FORCE_COLOR, and not with NO_COLOR as well", function()
        push({ "ConsoleDone" })
        assert.are.equal(DONE_COLOURED, normalize(work("12", { FORCE_COLOR = "1" }).stdout))
        push({ "ConsoleDone" })
        assert.are.equal(DONE_80, normalize(work("12", { FORCE_COLOR = "1", NO_COLOR = "1" }).stdout))
    end)

    it("start with the INFO notice on a terminal, and take its width", function()
        push({ "ConsoleDone" })
        local command = string.format("%s work --handlers=%s --stop-when-empty --laravel=12 "
            .. "--queue=high,default", H.quote(H.root .. "/luaworker"), H.quote(handlers))
        local out = shell(H.root, console_env({ REDIS_HOST = "127.0.0.1", REDIS_PORT = tostring(H.port) }),
            on_terminal(command))
        assert.are.equal(TERMINAL_90, normalize(out))
    end)

    it("keep Laravel 8.83's lines for --laravel=8.83 and 9.20", function()
        for _, version in ipairs({ "8.83", "9.20" }) do
            push({ "ConsoleDone", "ConsoleFail" })
            local r = work(version)
            assert.are.equal(0, r.status, r.stderr)
            assert.matches("^%[%d%d%d%d%-%d%d%-%d%d %d%d:%d%d:%d%d%]%[spec%d+%] Processing: App\\Jobs\\ConsoleDone\n"
                .. "%[[^%]]+%]%[spec%d+%] Processed:  App\\Jobs\\ConsoleDone\n"
                .. "%[[^%]]+%]%[spec%d+%] Processing: App\\Jobs\\ConsoleFail\n"
                .. "%[[^%]]+%]%[spec%d+%] Failed:     App\\Jobs\\ConsoleFail\n$", r.stdout)
        end
    end)

    it("are one line per job, with the time it started, from 9.21 to 9.40", function()
        for _, version in ipairs({ "9.21", "9.40" }) do
            push({ "ConsoleDone", "ConsoleRelease" })
            local r = work(version)
            assert.are.equal(0, r.status, r.stderr)
            -- the notice comes first, terminal or not
            assert.are.equal("\n   INFO  Processing jobs from the [default] queue.  \n\n"
                .. DONE_80:match("\n(.*)") .. RELEASE_80:match("\n(.*)"), normalize(r.stdout))
        end
        -- a job of 3.2 s: its line has the time it started
        push({ "ConsoleLong" })
        local r = work("9.30")
        local ended = os.time()
        local time = r.stdout:match("\n  (%d%d%d%d%-%d%d%-%d%d %d%d:%d%d:%d%d) App\\Jobs\\ConsoleLong ")
        assert.is_truthy(time, r.stdout)
        assert.is_true(time <= os.date("!%Y-%m-%d %H:%M:%S", ended - 3), time .. " is when it ended")
    end)

    it("give a run time over a second in milliseconds before 10.13, in seconds from 10.13", function()
        push({ "ConsoleSlow" })
        assert.matches(" %.+ 1,2%d%d%.%d%dms DONE\n$", work("10.12").stdout)
        push({ "ConsoleSlow" })
        assert.are.equal(SLOW_80, normalize(work("10.13").stdout))
    end)

    it("trim the trailing spaces of a job's name from 12.20", function()
        local spaced = H.class_payload("App\\Jobs\\ConsoleDone")
        spaced.displayName = "App\\Jobs\\ConsoleDone  "
        H.flush()
        H.push(spaced)
        -- two dots fewer (the name's length counts its spaces); 12.20 trims them
        assert.are.equal((DONE_80:gsub("Done %.%.", "Done ")), normalize(work("12.20").stdout))
        H.flush()
        H.push(spaced)
        assert.are.equal((DONE_80:gsub("Done %.%.", "Done   ")), normalize(work("12.19").stdout))
    end)

    it("show a payload's control characters escaped", function()
        local evil = H.class_payload("App\\Jobs\\ConsoleDone")
        evil.displayName = "App\\Jobs\\Evil\n\27[31m"
        H.flush()
        H.push(evil)
        assert.matches("^  <time> App\\Jobs\\Evil\\x0a\\x1b%[31m %.+ RUNNING\n", normalize(work("12").stdout))
    end)

    it("say when a queue is paused and resumed, as Laravel 13.26 does", function()
        local paused = "laravel_database_laravel_cache_illuminate:queue:paused:redis:low"
        H.flush()
        H.rdb(1, "SET", paused, "b:1;")
        local w = H.spawn({ "work", "--handlers=" .. handlers, "--sleep=0.1", "--queue=default,low",
            "--laravel=13.26" }, { env = console_env() })
        H.wait_until(function() return w:stdout():find("PAUSED", 1, true) end, 10, "the paused line")
        H.rdb(1, "DEL", paused)
        H.wait_until(function() return w:stdout():find("RESUMED", 1, true) end, 10, "the resumed line")
        w:kill("TERM")
        assert.are.equal(0, w:wait())
        assert.are.equal("  <time> Queue low PAUSED\n  <time> Queue low RESUMED\n", normalize(w:stdout()))
    end)

    it("are none with --quiet", function()
        push({ "ConsoleDone", "ConsoleFail" })
        local r = work("12", nil, { "--quiet" })
        assert.are.equal(0, r.status, r.stderr)
        assert.are.equal("", r.stdout)
        push({})
        assert.are.equal("", work("9.30", nil, { "--quiet" }).stdout)
    end)
end)
