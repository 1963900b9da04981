-- Laravel 11+'s Context in payloads ("illuminate:log:context"): a handler reads it
-- (job:context, job:hidden_context), adds to it, and the jobs it dispatches carry
-- it on as a PHP worker's would (11.0+; never before).
local H = require "spec.helpers"
local cjson = require "cjson"

local function s(v) return string.format('s:%d:"%s";', #v, v) end

describe("a job's Context (Laravel 11+)", function()
    local handlers
    setup(function()
        handlers = H.handlers({
            ["App/Jobs/Parent.lua"] = [[
local lw = require "luaworker"
return { handle = function(job)
    local all = job:context()
    lw.redis("RPUSH", "spec:ran", lw.json.encode({ trace = job:context("trace"),
        missing = job:context("missing") or "nil", secret = job:hidden_context("secret"),
        all_trace = all.trace, tries = job:context("tries") }))
    job:add_context("step", 2)
    job:add_hidden_context("token", "t-1")
    lw.dispatch("App\\Jobs\\Child", { n = 1 })
end }
]],
            ["App/Jobs/Child.lua"] = [[
local lw = require "luaworker"
return { handle = function(job)
    lw.redis("RPUSH", "spec:ran", job:raw_body())
end }
]],
            ["App/Jobs/Adds.lua"] = [[
local lw = require "luaworker"
return { handle = function(job)
    job:add_context("a", 1)
    lw.dispatch("App\\Jobs\\Child", { n = 1 })
end }
]],
            ["App/Jobs/Bad.lua"] = [[
return { handle = function(job) job:context("trace") end }
]],
        })
    end)
    before_each(function() H.flush() end)

    local function work(version)
        local r = H.run({ "work", "--handlers=" .. handlers, "--stop-when-empty", "--sleep=0",
            "--laravel=" .. version })
        assert.are.equal(0, r.status, r.stderr)
        return H.r("LRANGE", "spec:ran", 0, -1), r
    end

    local CONTEXT = { data = { trace = s("abc-123"), tries = "a:2:{i:0;i:1;i:1;i:2;}" },
        hidden = { secret = s("pss"), laravel_unique_job_key = s("laravel_unique_job:App\\Jobs\\Parent:1"),
            laravel_unique_job_lock_owner = s("owner") } }

    it("is read by the handler and carried on, with its additions, to the jobs it dispatches", function()
        H.push(H.class_payload("App\\Jobs\\Parent", { ["illuminate:log:context"] = CONTEXT }))
        local ran = work("11.0")
        assert.are.equal(2, #ran)
        assert.are.same({ trace = "abc-123", missing = "nil", secret = "pss", all_trace = "abc-123",
            tries = { 1, 2 } }, cjson.decode(ran[1]))
        -- the child's payload: the member where Laravel's payload hook puts it (after
        -- data, before id), keys in byte order, a unique job's lock left behind
        assert.matches('"},"illuminate:log:context":{"data":{"step":"i:2;","trace":"s:7:\\"abc-123\\";",'
            .. '"tries":"a:2:{i:0;i:1;i:1;i:2;}"},"hidden":{"secret":"s:3:\\"pss\\";",'
            .. '"token":"s:3:\\"t-1\\";"}},"id":', ran[2], 1, true)
    end)

    it("is carried on after createdAt from 12.11 on, and an empty part is PHP's []", function()
        H.push(H.class_payload("App\\Jobs\\Parent", { ["illuminate:log:context"] = {
            data = { trace = s("x") }, hidden = {} } }))
        local ran = work("12.11")
        assert.matches('"createdAt":%d+,"illuminate:log:context":{"data":{"step":"i:2;",'
            .. '"trace":"s:1:\\"x\\";"},"hidden":{"token":"s:3:\\"t%-1\\";"}},"id":', ran[2])
        -- a child of a job without Context carries only what its handler added
        H.flush()
        H.push(H.class_payload("App\\Jobs\\Adds"))
        ran = work("11.0")
        assert.matches('"illuminate:log:context":{"data":{"a":"i:1;"},"hidden":[]},"id":', ran[1], 1, true)
    end)

    it("is not put in payloads before Laravel 11", function()
        H.push(H.class_payload("App\\Jobs\\Parent", { ["illuminate:log:context"] = CONTEXT }))
        local ran = work("10.48")
        assert.are.equal("abc-123", cjson.decode(ran[1]).trace)
        assert.is_nil(ran[2]:find("illuminate:log:context", 1, true))
    end)

    it("that is not serialize() output fails the job naming the key, not the value", function()
        local p = H.class_payload("App\\Jobs\\Bad", { ["illuminate:log:context"] = {
            data = { trace = "not-serialized-secret" }, hidden = {} } })
        H.push(p)
        local _, r = work("11.0")
        assert.matches("the job's context 'trace' is not PHP serialize() output", r.stderr, 1, true)
        assert.is_nil(r.stderr:find("not-serialized-secret", 1, true))
        local exception = H.failed_record(p.uuid).exception
        assert.matches("the job's context 'trace'", exception, 1, true)
        assert.is_nil(exception:find("not-serialized-secret", 1, true))
    end)
end)
