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

-- The option lines of `luaworker help work` that carry queue:work's defaults.
local WORK_DEFAULTS = {
    { "name", "default" }, { "delay", "0" }, { "backoff", "0" }, { "max-jobs", "0" },
    { "max-time", "0" }, { "memory", "128" }, { "sleep", "3" }, { "rest", "0" },
    { "timeout", "60" }, { "tries", "1" },
}

local COMMANDS = { "work", "failed", "retry", "forget", "flush", "push", "size", "clear", "restart", "lua" }

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

    it("rejects an unknown command", function()
        rejects({ "bogus" }, "unknown command 'bogus' (expected one of: work, failed, retry, forget, "
            .. "flush, push, size, clear, restart, lua, help)")
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
        rejects({ "work", "--sleep=abc" }, "--sleep=abc: expected a number of seconds of 0 or more")
    end)

    it("rejects --tries=-1", function()
        rejects({ "work", "--tries=-1" }, "--tries=-1: expected a whole number of 0 or more")
    end)

    it("rejects an empty whole-number value", function()
        rejects({ "work", "--tries=" }, "--tries=: expected a whole number of 0 or more")
    end)

    it("rejects a whole number above 2147483647", function()
        rejects({ "work", "--max-jobs=2147483648" }, "--max-jobs=2147483648: expected a whole number of 0 or more")
    end)

    it("rejects --backoff=1,x", function()
        rejects({ "work", "--backoff=1,x" }, "--backoff=1,x: expected seconds, or a comma-separated list such as 1,5,10")
    end)

    it("rejects a --backoff list with a trailing comma", function()
        rejects({ "push", "App\\Jobs\\X", "--backoff=1," },
            "--backoff=1,: expected seconds, or a comma-separated list such as 1,5,10")
    end)

    it("rejects --memory=1.5", function()
        rejects({ "work", "--memory=1.5" }, "--memory=1.5: expected a whole number of 0 or more")
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
        { { "work", "--sleep=" }, "--sleep=: expected a number of seconds of 0 or more" },
        { { "work", "--sleep=0x10" }, "--sleep=0x10: expected a number of seconds of 0 or more" },
        { { "work", "--rest=1e3" }, "--rest=1e3: expected a number of seconds of 0 or more" },
        { { "work", "--block-for=1.5.2" }, "--block-for=1.5.2: expected a number of seconds of 0 or more" },
        { { "work", "--backoff=1,2147483648" },
            "--backoff=1,2147483648: expected seconds, or a comma-separated list such as 1,5,10" },
        { { "work", "--laravel-version=007" }, "--laravel-version=007: expected a Laravel version from 8 to 13, as 12.51 (or 12 for its newest)" },
        { { "work", "--laravel-version=14" }, "--laravel-version=14: expected a Laravel version from 8 to 13, as 12.51 (or 12 for its newest)" },
        { { "work", "--laravel=12.y" }, "--laravel=12.y: expected a Laravel version from 8 to 13, as 12.51 (or 12 for its newest)" },
        { { "work", "--laravel=12.5.1.0" }, "--laravel=12.5.1.0: expected a Laravel version from 8 to 13, as 12.51 (or 12 for its newest)" },
        { { "work", "--processes=0" }, "--processes=0: expected 1 to 512" },
        { { "work", "--processes=100000" }, "--processes=100000: expected 1 to 512" },
        { { "work", "--heartbeat=0" }, "--heartbeat=0: expected seconds above 0" },
        { { "work", "--heartbeat=x" }, "--heartbeat=x: expected a number of seconds of 0 or more" },
        { { "work", "--handlers=/nonexistent" }, "--handlers=/nonexistent: not a directory" },
        { { "work", "--once", "--handlers=/nonexistent" }, "--handlers=/nonexistent: not a directory" },
        { { "push", "App\\Jobs\\X", "--retry-until=-5" }, "--retry-until=-5: expected a whole number of 0 or more" },
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
