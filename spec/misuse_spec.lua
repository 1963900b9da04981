-- `luaworker work` against handlers that misuse the runtime: each mistake gets a
-- clear error in the job (or a log line), and the worker keeps taking jobs with
-- its queue connection, its standard library and its hooks as they were.
local H = require "spec.helpers"

local job = H.class_payload

-- Runs the worker on handler files until the queue is empty; returns its result.
local function work(files, args)
    local full = { "work", "--handlers=" .. H.handlers(files), "--sleep=0.05", "--no-watch",
        "--stop-when-empty", "--tries=1", "--processes=1" }
    for _, a in ipairs(args or {}) do full[#full + 1] = a end
    return H.run(full, { timeout = 60 })
end

local function reserved_count()
    local _, _, reserved = H.keys()
    return H.r("ZCARD", reserved)
end

local function failed_exception(p)
    local record = H.failed_record(p.uuid)
    return record and record.exception
end

local DONE = H.RECORD_ID   -- records each job's id in spec:ran

describe("luaworker work on handlers that misuse it", function()
    before_each(function() H.flush() end)

    for _, case in ipairs({
        { "SUBSCRIBE", '"SUBSCRIBE", "ch"', "subscriber mode" },
        { "PSUBSCRIBE", '"psubscribe", "ch*"', "subscriber mode" },
        { "MONITOR", '"MONITOR"', "monitor mode" },
        { "MULTI", '"MULTI"', "use EVAL" },
        { "SELECT", '"SELECT", 5', "another database" },
        { "CLIENT REPLY", '"CLIENT", "reply", "off"', "how Redis answers" },
        { "BLPOP", '"blpop", "k", 1', "poll without blocking" },
        { "XREAD BLOCK", '"XREAD", "COUNT", 1, "block", 100, "STREAMS", "s", "$"', "poll without blocking" },
        { "WAIT", '"WAIT", 0, 100', "other jobs in flight share" },
    }) do
        it("refuses " .. case[1] .. " in luaworker.redis, and goes on with the next job", function()
            local misuse, good = job("App\\Jobs\\Misuse"), job("App\\Jobs\\Done")
            H.push(misuse)
            H.push(good)
            local r = work({
                ["App/Jobs/Misuse.lua"] = 'local lw = require "luaworker"\n'
                    .. "return { handle = function() lw.redis(" .. case[2] .. ") end }\n",
                ["App/Jobs/Done.lua"] = DONE,
            })
            assert.are.equal(0, r.status, r.stderr)
            local exception = failed_exception(misuse)
            assert.is_not_nil(exception, r.stdout .. r.stderr)
            assert.matches("luaworker.redis: " .. case[1] .. " is not allowed", exception, 1, true)
            assert.matches(case[3], exception, 1, true)
            assert.are.same({ good.id }, H.r("LRANGE", "spec:ran", 0, -1))
            assert.are.equal(0, reserved_count())
            assert.are.equal(0, H.rdb(5, "DBSIZE"))
        end)
    end

    it("logs the error of a __gc finalizer and runs every job, with no panic", function()
        local jobs = {}
        for i = 1, 40 do
            jobs[i] = job("App\\Jobs\\Finalizer")
            H.push(jobs[i])
        end
        local r = work({ ["App/Jobs/Finalizer.lua"] = [[
local lw = require "luaworker"
return { handle = function(job)
    for _ = 1, 50 do
        getmetatable(newproxy(true)).__gc = function() error("finalizer boom") end
    end
    local ffi = require "ffi"
    ffi.gc(ffi.new("int[1]"), function() error("ffi finalizer boom") end)
    lw.redis("RPUSH", "spec:ran", job:payload().id)
end }
]] })
        assert.are.equal(0, r.status, r.stderr)
        assert.is_nil(r.stderr:find("PANIC", 1, true))
        assert.is_nil(r.stderr:find("internal error", 1, true))
        assert.matches("a __gc finalizer raised %(logged, not raised where the collector ran%): "
            .. "[^\n]*finalizer boom", r.stderr)
        assert.are.equal(40, H.r("LLEN", "spec:ran"))
        assert.are.equal(0, H.r("ZCARD", "laravel_database_luaworker:failed_jobs"))
        assert.are.equal(0, reserved_count())
    end)

    it("raises in a coroutine the handler made when it calls luaworker.redis, and goes on", function()
        local a, b, good = job("App\\Jobs\\Co"), job("App\\Jobs\\Co"), job("App\\Jobs\\Done")
        H.push(a)
        H.push(b)
        H.push(good)
        local r = work({
            ["App/Jobs/Co.lua"] = [[
local lw = require "luaworker"
return { handle = function()
    local co = coroutine.wrap(function() return lw.redis("PING") end)
    co()
end }
]],
            ["App/Jobs/Done.lua"] = DONE,
        })
        assert.are.equal(0, r.status, r.stderr)
        for _, p in ipairs({ a, b }) do
            assert.matches("cannot be made inside a coroutine the handler created", failed_exception(p), 1, true)
        end
        assert.is_nil(r.stderr:find("already waiting", 1, true))
        assert.are.same({ good.id }, H.r("LRANGE", "spec:ran", 0, -1))
    end)

    it("keeps the runtime's standard library when a handler changes its own", function()
        local breaker, good = job("App\\Jobs\\Breaker"), job("App\\Jobs\\Done")
        H.push(breaker)
        H.push(good)
        local r = work({
            ["App/Jobs/Breaker.lua"] = [[
string.format, table.concat, os.time = nil, nil, nil
local tablex = require "table"
tablex.insert = nil
return { handle = function() string.rep, math.floor = nil, nil end }
]],
            ["App/Jobs/Done.lua"] = DONE,
        })
        assert.are.equal(0, r.status, r.stderr)
        assert.matches("Processed:  App\\Jobs\\Breaker", r.stdout, 1, true)
        assert.are.same({ good.id }, H.r("LRANGE", "spec:ran", 0, -1))
        assert.are.equal(0, reserved_count())
    end)

    it("refuses a handler's assignment to an existing global", function()
        local p, good = job("App\\Jobs\\Global"), job("App\\Jobs\\Done")
        H.push(p)
        H.push(good)
        local r = work({
            ["App/Jobs/Global.lua"] = "return { handle = function() tostring = nil end }\n",
            ["App/Jobs/Done.lua"] = DONE,
        })
        assert.are.equal(0, r.status, r.stderr)
        assert.matches("assignment to global 'tostring'", failed_exception(p), 1, true)
        assert.are.same({ good.id }, H.r("LRANGE", "spec:ran", 0, -1))
    end)

    it("never runs init.lua as a job handler", function()
        local p1, p2 = job("init"), job("\\init")
        H.push(p1)
        H.push(p2)
        local r = work({
            ["init.lua"] = [[
local lw = require "luaworker"
lw.redis("INCR", "spec:inits")
lw.failing(function() lw.redis("INCR", "spec:failing") end)
]],
        })
        assert.are.equal(0, r.status, r.stderr)
        assert.matches("init.lua is the handlers' start-up file, not a job handler", failed_exception(p1), 1, true)
        assert.are.equal("1", H.r("GET", "spec:inits"))
        assert.are.equal("2", H.r("GET", "spec:failing"))
    end)

    it("runs a file that fails as a handler once, at start, and takes none of the jobs naming it", function()
        local jobs = {}
        for i = 1, 3 do
            jobs[i] = job("App\\Jobs\\Broken")
            H.push(jobs[i])
        end
        local dir_files = {
            ["App/Jobs/Broken.lua"] = 'require("luaworker").redis("INCR", "spec:loads")\n'
                .. 'error("broken at load")\n',
        }
        local r = work(dir_files)
        assert.are.equal(2, r.status, r.stderr)
        assert.matches("Broken.lua raised while loading: [^\n]*Broken.lua:2: broken at load", r.stderr)
        assert.are.equal("1", H.r("GET", "spec:loads"))
        assert.are.equal(3, H.r("LLEN", (H.keys())))
        for _, p in ipairs(jobs) do assert.is_nil(failed_exception(p)) end
    end)

    it("does not run a module the handlers required again as a job handler", function()
        local p = job("App\\Lib\\Util")
        H.push(p)
        -- (a module runs inside require, a C function: it cannot wait for Redis)
        local loads = H.tmpdir() .. "/loads"
        local r = work({
            ["init.lua"] = 'require "App.Lib.Util"\n',
            ["App/Lib/Util.lua"] = "local f = io.open(" .. string.format("%q", loads) .. ", 'a')\n"
                .. "f:write('load\\n') f:close()\n"
                .. "return { double = function(x) return 2 * x end }\n",
        })
        assert.are.equal(0, r.status, r.stderr)
        assert.are.equal("load\n", H.read_file(loads))
        assert.matches("must return a table with a handle", failed_exception(p), 1, true)
    end)

    it("refuses luaworker.sleep(NaN)", function()
        local p = job("App\\Jobs\\Nan")
        H.push(p)
        local r = work({ ["App/Jobs/Nan.lua"] = 'return { handle = function() require("luaworker").sleep(0/0) end }\n' })
        assert.are.equal(0, r.status, r.stderr)
        assert.matches("luaworker.sleep(seconds): expected a number >= 0", failed_exception(p), 1, true)
    end)

    it("refuses to start, status 2, when a handler file does not compile, naming it and its error", function()
        H.push(job("App\\Jobs\\Good"))
        local r = work({ ["App/Jobs/Good.lua"] = DONE, ["App/Jobs/Broken.lua"] = "return { handle = function( end }",
            ["lib/ok.lua"] = "return 1" })
        assert.are.equal(2, r.status, r.stderr)
        assert.matches("cannot start: handlers that do not compile: [^\n]*/App/Jobs/Broken%.lua:1: "
            .. "<name> or '...' expected near 'end'", r.stderr)
        -- nothing was taken
        assert.are.same({}, H.r("LRANGE", "spec:ran", 0, -1))
        assert.are.equal(0, reserved_count())
    end)

    it("refuses to start, status 2, when a handler cannot handle jobs, naming each; modules are not held to it", function()
        H.push(job("App\\Jobs\\Good"))
        local r = work({ ["App/Jobs/Good.lua"] = DONE, ["App/Jobs/Number.lua"] = "return 5",
            ["App/Jobs/Raising.lua"] = "local x = nil\nreturn x.y", ["App/Jobs/Empty.lua"] = "return { tries = 3 }",
            ["App/Jobs/Odd.lua"] = "return { handle = 'x' }", ["lib/ok.lua"] = "return 1", ["init.lua"] = "" })
        assert.are.equal(2, r.status, r.stderr)
        for _, why in ipairs({
            "handler [^\n]*/App/Jobs/Number%.lua must return a table with a handle%(job, command%) function, not a number",
            "handler [^\n]*/App/Jobs/Raising%.lua raised while loading: [^\n]*/App/Jobs/Raising%.lua:2: attempt to index",
            "handler [^\n]*/App/Jobs/Empty%.lua must return a table with a handle%(job, command%) function %(or a "
                .. "string job's method%): it has no function",
            "handler [^\n]*/App/Jobs/Odd%.lua: handle must be a function, not a string",
        }) do
            assert.matches("cannot start: handlers that cannot handle jobs: [^\n]*" .. why, r.stderr)
        end
        assert.is_nil(r.stderr:find("lib/ok.lua", 1, true))
        assert.are.same({}, H.r("LRANGE", "spec:ran", 0, -1))
        assert.are.equal(0, reserved_count())
    end)

    it("names a handler file whose name differs only in case or folder when a job's is missing", function()
        local p = job("App\\Jobs\\SendInvoice")
        H.push(p)
        local r = work({ ["App/Jobs/Billing/Sendinvoice.lua"] = DONE, ["App/Jobs/Other.lua"] = DONE })
        assert.are.equal(0, r.status, r.stderr)
        assert.matches("no handler for App\\Jobs\\SendInvoice: tried [^\n]*/App/Jobs/SendInvoice%.lua; a file differs "
            .. "only in case or folder: [^\n]*/App/Jobs/Billing/Sendinvoice%.lua %(a handler's path is its class's, "
            .. "case included%)", failed_exception(p))
    end)
end)
