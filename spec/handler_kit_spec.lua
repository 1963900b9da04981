-- The kit for the people who write handlers: `luaworker make` (a handler and its
-- spec), `luaworker run` (one payload through its handler, touching no queue) and
-- `luaworker test` with luaworker.testing (docs/handlers.md, "Scaffolding, trying
-- and testing handlers"), each run as a user runs it, in a project folder of its own.
local H = require "spec.helpers"
local cjson = H.json

-- A project folder holding files { ["handlers/App/Jobs/X.lua"] = "source", ... }.
local function project(files)
    local dir = H.tmpdir()
    for name, text in pairs(files or {}) do H.write_file(dir .. "/" .. name, text) end
    return dir
end

local function luaworker(dir, args, opts)
    opts = opts or {}
    opts.cwd = dir
    return H.run(args, opts)
end

-- The files of the docs' section whose fenced Lua blocks start with their path.
local function docs_files()
    local text = H.read_file(H.root .. "/docs/handlers.md")
    local section = text:match("\n## Scaffolding, trying and testing handlers\n(.*)$")
    assert(section, "docs/handlers.md has no 'Scaffolding, trying and testing handlers' section")
    local files = {}
    for block in section:gmatch("```lua\n(.-)```") do
        local path = block:match("^%-%- ([%w/_.]+%.lua)\n")
        if path then files[path] = block end
    end
    return files
end

-- A payload of class whose command is command_text (PHP serialize output).
local function payload(class, command_text, fields)
    local p = H.class_payload(class, fields)
    p.data.command = command_text
    return cjson.encode(p)
end

local INVOICE = 'O:20:"App\\Jobs\\SendInvoice":1:{s:8:"order_id";i:7;}'

describe("luaworker test and luaworker.testing", function()
    before_each(function() H.flush() end)

    it("passes the docs' handler and spec as they are written there, and fails them where the handler is wrong", function()
        local files = docs_files()
        assert.truthy(files["handlers/App/Jobs/SendInvoice.lua"])
        assert.truthy(files["spec/App/Jobs/SendInvoice_spec.lua"])
        local dir = project(files)
        local r = luaworker(dir, { "test" })
        assert.are.equal(0, r.status, r.stdout .. r.stderr)
        assert.matches("3 successes / 0 failures / 0 errors", r.stdout)
        -- the handler's dispatch was kept by the fake job, not pushed
        assert.are.equal(0, H.r("LLEN", (H.keys("default"))))

        local handler = files["handlers/App/Jobs/SendInvoice.lua"]
        H.write_file(dir .. "/handlers/App/Jobs/SendInvoice.lua", (handler:gsub("release%(30%)", "release(10)")))
        r = luaworker(dir, { "test" })
        assert.are.equal(1, r.status, r.stdout .. r.stderr)
        assert.matches("2 successes / 1 failure / 0 errors", r.stdout)
        assert.matches("SendInvoice_spec.lua:%d+: assert_released%(30%): the job was released with a delay "
            .. "of 10 s", r.stdout)
    end)

    it("runs handlers in the worker's handler environment: a global set there fails the job", function()
        local dir = project({
            ["handlers/App/Jobs/Count.lua"] = "return { handle = function() counter = 1 end }",
            ["spec/count_spec.lua"] = [[
local testing = require "luaworker.testing"
describe("Count", function()
    it("counts", function()
        local job = testing.run(testing.job("App\\Jobs\\Count", {}))
        job:assert_not_raised()
    end)
end)
]],
        })
        local r = luaworker(dir, { "test", "--", "-o", "TAP" })
        assert.are.equal(1, r.status, r.stdout .. r.stderr)
        assert.matches("not ok 1 %- Count counts", r.stdout)
        assert.matches("assert_not_raised: it raised [^\n]*assignment to global 'counter': handlers may "
            .. "not set globals", r.stdout)
    end)

    it("runs init.lua's hooks, the attempt rules, failed(), fake HTTP routes and the fake dispatch", function()
        local dir = project({
            ["handlers/init.lua"] = [[
local luaworker = require "luaworker"
luaworker.failing(function(event) print("failing hook: " .. event.job:name()) end)
]],
            ["handlers/App/Jobs/Sync.lua"] = [[
local luaworker = require "luaworker"
return {
    handle = function(job, command)
        local r = luaworker.http.get("https://api.example.com/items/" .. command.id .. "?token=secret")
        if r.status ~= 200 then error("the API said " .. r.status) end
        luaworker.dispatch("App\\Jobs\\Next", { id = command.id }, { queue = "later", delay = 5 })
        if command.id == 3 then job:model_not_found("App\\Models\\Item", { 3, 4 }) end
    end,
    failed = function(job, command, err) print("failed() of " .. command.id) end,
}
]],
            ["spec/sync_spec.lua"] = [[
local testing = require "luaworker.testing"
local C = "App\\Jobs\\Sync"
describe("Sync", function()
    it("backs off by the payload's backoff", function()
        testing.fake_http({ ["*"] = testing.response("", 503) })
        local job = testing.run(testing.job(C, { id = 1 }, { tries = 3, attempts = 2, backoff = "5,20" }))
        job:assert_raised("the API said 503")
        job:assert_released(20)
        job:assert_not_failed()
    end)
    it("fails on its last attempt, running failed() and the failing hook", function()
        testing.fake_http({ ["*"] = testing.response("", 503) })
        local job = testing.run(testing.job(C, { id = 2 }, { tries = 3, attempts = 3 }))
        job:assert_failed("the API said 503")
    end)
    it("sends what the routes answer and dispatches to the fake", function()
        local api = testing.fake_http({ { "api.example.com/items/*", { ok = true } } })
        local bus = testing.fake_dispatch()
        local job = testing.run(testing.job(C, { id = 1 }))
        job:assert_deleted()
        api:assert_sent("https://api.example.com/items/1*")
        api:assert_sent_count(1)
        bus:assert_dispatched("App\\Jobs\\Next", function(next)
            return next.command.id == 1 and next.queue == "later" and next.delay == 5
        end)
        bus:assert_dispatched_times("App\\Jobs\\Next", 1)
    end)
    it("refuses a request no route matches", function()
        testing.fake_http({ ["other.example.com/*"] = "x" })
        testing.run(testing.job(C, { id = 1 })):assert_raised("ConnectionException: testing.fake_http: no route matches GET https://api.example.com/items/1$")
    end)
    it("records a model not found", function()
        testing.fake_http({ ["*"] = "" })
        local job = testing.run(testing.job(C, { id = 3 }))
        job:assert_model_not_found("App\\Models\\Item")
        job:assert_failed("No query results for model %[App\\Models\\Item%] 3, 4")
    end)
end)
]],
        })
        local r = luaworker(dir, { "test" })
        assert.are.equal(0, r.status, r.stdout .. r.stderr)
        assert.matches("5 successes / 0 failures / 0 errors", r.stdout)
        assert.matches("failed%(%) of 2\nfailing hook: App\\Jobs\\Sync\n", r.stdout)
        -- the token in the query never reaches the output
        assert.is_nil(r.stdout:find("secret", 1, true))
        assert.is_nil(r.stderr:find("secret", 1, true))
        assert.are.equal(0, H.r("LLEN", (H.keys("later"))))
        assert.are.equal(0, H.r("ZCARD", (select(2, H.keys("later")))))
    end)

    it("dispatches a chain's next job to the fake, and runs a payload as a queue holds it", function()
        local dir = project({
            ["handlers/App/Jobs/First.lua"] = "return { handle = function(job, command) end }",
            ["handlers/App/Handlers/Legacy.lua"] = [[
return { sync = function(job, data) if data.n == 2 then job:delete() else job:release(4) end end }
]],
            ["spec/chain_spec.lua"] = [=[
local testing = require "luaworker.testing"
describe("a chain", function()
    it("goes on with its next job", function()
        local next_job = 'O:15:"App\\Jobs\\Second":1:{s:1:"n";i:2;}'
        local job = testing.run(testing.job("App\\Jobs\\First", { chained = { next_job } }))
        job:assert_deleted()
        job:assert_dispatched("App\\Jobs\\Second", function(second) return second.command.n == 2 end)
        job:assert_not_dispatched("App\\Jobs\\Third")
    end)
    it("runs a string job's payload", function()
        local text = '{"uuid":"u","job":"App\\\\Handlers\\\\Legacy@sync","data":{"n":1},"attempts":3}'
        local job = testing.run(testing.payload(text, { tries = 5 }))
        job:assert_released(4)
        assert.are.equal(4, job:attempts())
    end)
end)
]=],
        })
        local r = luaworker(dir, { "test" })
        assert.are.equal(0, r.status, r.stdout .. r.stderr)
        assert.matches("2 successes / 0 failures / 0 errors", r.stdout)
    end)

    it("fails each assertion with a message naming it", function()
        local dir = project({
            ["handlers/App/Jobs/Ok.lua"] = "return { handle = function(job) end }",
            ["spec/ok_spec.lua"] = [[
local testing = require "luaworker.testing"
describe("Ok", function()
    it("a", function() testing.run(testing.job("App\\Jobs\\Ok")):assert_released() end)
    it("b", function() testing.run(testing.job("App\\Jobs\\Ok")):assert_failed() end)
    it("c", function() testing.run(testing.job("App\\Jobs\\Ok")):assert_raised() end)
    it("d", function() testing.run(testing.job("App\\Jobs\\Ok")):assert_dispatched("App\\Jobs\\X") end)
    it("e", function() testing.fake_http({}):assert_sent("x") end)
    it("f", function() testing.fake_dispatch():assert_dispatched_times("X", 2) end)
    it("g", function() testing.run(testing.job("App\\Jobs\\Ok")):assert_not_deleted() end)
end)
]],
        })
        local r = luaworker(dir, { "test" })
        assert.are.equal(1, r.status)
        assert.matches("0 successes / 7 failures / 0 errors", r.stdout)
        for _, message in ipairs({
            "assert_released: the job was not released: it was deleted",
            "assert_failed: the job did not fail: it was deleted",
            "assert_raised: the handler did not raise: it was deleted",
            "assert_dispatched%(App\\Jobs\\X%): no such job was dispatched %(nothing was dispatched%)",
            "assert_sent: no request matches x %(nothing was sent%)",
            "assert_dispatched_times%(X, 2%): dispatched 0 times",
            "assert_not_deleted: the job was deleted",
        }) do
            assert.matches("ok_spec.lua:%d+: " .. message, r.stdout)
        end
    end)
end)

describe("luaworker make", function()
    before_each(function() H.flush() end)

    it("writes a handler and a spec that passes, in App\\Jobs for a bare name, with the editor's files", function()
        local dir = project()
        local r = luaworker(dir, { "make", "SendInvoice" })
        assert.are.equal(0, r.status, r.stderr)
        assert.matches("Handler %[./handlers/App/Jobs/SendInvoice.lua%] created successfully", r.stdout)
        local handler = H.read_file(dir .. "/handlers/App/Jobs/SendInvoice.lua")
        assert.matches("handle = function%(job, command%)", handler)
        assert.matches("failed = function%(job, command, err%)", handler)
        assert.matches('testing.job%("App\\\\Jobs\\\\SendInvoice"',
            H.read_file(dir .. "/spec/App/Jobs/SendInvoice_spec.lua"))
        assert.matches('"workspace.library": %[".luaworker"%]', H.read_file(dir .. "/handlers/.luarc.json"))
        assert.are.equal(H.read_file(H.root .. "/types/luaworker.lua"),
            H.read_file(dir .. "/handlers/.luaworker/luaworker.lua"))
        assert.are.equal(H.read_file(H.root .. "/types/testing.lua"),
            H.read_file(dir .. "/handlers/.luaworker/testing.lua"))

        r = luaworker(dir, { "test" })
        assert.are.equal(0, r.status, r.stdout .. r.stderr)
        assert.matches("1 success / 0 failures", r.stdout)
        -- the worker takes the new folder as it is: .luaworker/ is not a handler
        r = luaworker(dir, { "work", "--once", "--sleep=0" })
        assert.are.equal(0, r.status, r.stderr)
    end)

    it("refuses to overwrite, and refuses a name that is no PHP class", function()
        local dir = project({ ["handlers/.luarc.json"] = "{ \"mine\": true }" })
        assert.are.equal(0, luaworker(dir, { "make", "App\\Jobs\\A" }).status)
        local before = H.read_file(dir .. "/handlers/App/Jobs/A.lua")
        H.write_file(dir .. "/handlers/App/Jobs/A.lua", "-- mine")
        local r = luaworker(dir, { "make", "App\\Jobs\\A" })
        assert.are.equal(2, r.status)
        assert.matches("handlers/App/Jobs/A.lua exists already: not overwritten", r.stderr)
        assert.are.equal("-- mine", H.read_file(dir .. "/handlers/App/Jobs/A.lua"))
        assert.truthy(before)
        -- a folder with its own .luarc.json keeps it
        assert.are.equal("{ \"mine\": true }", H.read_file(dir .. "/handlers/.luarc.json"))
        r = luaworker(dir, { "make", "App\\..\\X" })
        assert.are.equal(2, r.status)
        assert.matches("'App\\%.%.\\X' is not a PHP class name", r.stderr)
    end)

    it("lists the properties of a waiting job of the class with --from-queue", function()
        H.push(H.class_payload("App\\Jobs\\Other", {}))
        H.push(payload("App\\Jobs\\Ship", 'O:13:"App\\Jobs\\Ship":5:{s:5:"order";i:42;s:4:"note";s:2:"hi";'
            .. 's:3:"big";i:9007199254740993;s:4:"user";O:45:"Illuminate\\Contracts\\Database\\ModelIdentifier"'
            .. ':2:{s:5:"class";s:15:"App\\Models\\User";s:2:"id";i:5;}s:4:"gone";N;}'))
        local dir = project()
        local r = luaworker(dir, { "make", "App\\Jobs\\Ship", "--from-queue=default" })
        assert.are.equal(0, r.status, r.stderr)
        local handler = H.read_file(dir .. "/handlers/App/Jobs/Ship.lua")
        assert.matches("---@class App.Jobs.Ship.Command\n", handler, 1, true)
        for _, line in ipairs({ "---@field order integer 42", '---@field note string "hi"',
            "---@field big integer 9007199254740993 (int64)",
            "---@field user table a model: App\\Models\\User, id 5", "---@field gone nil null",
            "---@param command App.Jobs.Ship.Command" }) do
            assert.truthy(handler:find(line, 1, true), line .. " not in:\n" .. handler)
        end
        assert.truthy(H.read_file(dir .. "/spec/App/Jobs/Ship_spec.lua")
            :find('testing.job("App\\\\Jobs\\\\Ship", { order = 42, note = "hi" })', 1, true))
        -- nothing was taken
        assert.are.equal(2, H.r("LLEN", (H.keys("default"))))
        r = luaworker(dir, { "make", "App\\Jobs\\Absent", "--from-queue=default" })
        assert.are.equal(2, r.status)
        assert.matches("no job of App\\Jobs\\Absent on queue default", r.stderr)
    end)
end)

describe("luaworker run", function()
    before_each(function() H.flush() end)

    local HANDLER = [[
local luaworker = require "luaworker"
return {
    handle = function(job, command)
        if command.order_id == 1 then error("billing is down") end
        if command.order_id == 2 then return job:release(30) end
        local r = luaworker.http.get("https://billing.example.com/orders/" .. command.order_id)
        luaworker.dispatch("App\\Jobs\\MailInvoice", { status = r.status }, { queue = "mail" })
    end,
    failed = function(job, command, err) print("failed() ran") end,
}
]]

    local function run(dir, text, args)
        H.write_file(dir .. "/payload.json", text)
        local full = { "run", "payload.json" }
        for _, a in ipairs(args or {}) do full[#full + 1] = a end
        return luaworker(dir, full)
    end

    it("says what the worker would have done, touching no queue", function()
        local dir = project({ ["handlers/App/Jobs/SendInvoice.lua"] = HANDLER })
        local text = H.push(payload("App\\Jobs\\SendInvoice", INVOICE))
        local r = run(dir, text, { "--fake-http" })
        assert.are.equal(0, r.status, r.stderr)
        assert.are.equal("App\\Jobs\\SendInvoice (attempt 1): deleted\n"
            .. "  would dispatch App\\Jobs\\MailInvoice onto queue mail\n"
            .. "  sent GET https://billing.example.com/orders/7 (faked: 200, empty body)\n", r.stdout)
        assert.are.equal(1, H.r("LLEN", (H.keys("default"))))
        assert.are.equal(0, H.r("LLEN", (H.keys("mail"))))

        r = run(dir, text, { "--fake-http", "--json" })
        assert.are.equal(0, r.status, r.stderr)
        local said = cjson.decode(r.stdout)
        assert.are.equal("deleted", said.outcome)
        assert.are.equal("App\\Jobs\\MailInvoice", said.dispatched[1].class)
        assert.are.equal("mail", said.dispatched[1].queue)
        assert.are.same({ { method = "GET", url = "https://billing.example.com/orders/7" } }, said.http)
    end)

    it("releases by the backoff or fails on the last attempt, with exit 1 when the handler raised", function()
        local dir = project({ ["handlers/App/Jobs/SendInvoice.lua"] = HANDLER })
        local raising = payload("App\\Jobs\\SendInvoice", 'O:20:"App\\Jobs\\SendInvoice":1:{s:8:"order_id";i:1;}',
            { maxTries = 3, backoff = "10,20", attempts = 1 })
        local r = run(dir, raising)
        assert.are.equal(1, r.status)
        assert.matches("^App\\Jobs\\SendInvoice %(attempt 2%): raised LuaError: [^\n]*billing is down; "
            .. "released: available again in 20 s", r.stdout)
        r = run(dir, raising, { "--attempts=3" })
        assert.are.equal(1, r.status)
        assert.matches("failed%(%) ran\n", r.stdout)
        assert.matches("%(attempt 3%): raised [^\n]*; failed: LuaError: [^\n]*billing is down\n", r.stdout)
        -- no failed-job record was written
        assert.are.same({}, H.r("KEYS", "*failed*"))

        r = run(dir, payload("App\\Jobs\\SendInvoice", 'O:20:"App\\Jobs\\SendInvoice":1:{s:8:"order_id";i:2;}'))
        assert.are.equal(0, r.status)
        assert.matches("released: available again in 30 s", r.stdout)
    end)

    it("reads stdin for -, and refuses what is not a payload with status 2", function()
        local dir = project({ ["handlers/App/Jobs/SendInvoice.lua"] = HANDLER })
        H.write_file(dir .. "/p.json", payload("App\\Jobs\\SendInvoice", 'O:20:"App\\Jobs\\SendInvoice":1:{s:8:"order_id";i:2;}'))
        local r = luaworker(dir, { "run", "-" }, { stdin = dir .. "/p.json" })
        assert.are.equal(0, r.status, r.stderr)
        assert.matches("released", r.stdout)
        H.write_file(dir .. "/bad.json", "[1, 2")
        r = luaworker(dir, { "run", "bad.json" })
        assert.are.equal(2, r.status)
        assert.matches("run: bad.json: not a job's payload", r.stderr)
        r = luaworker(dir, { "run", "missing.json" })
        assert.are.equal(2, r.status)
        assert.matches("run: missing.json: no such file", r.stderr)
    end)
end)
