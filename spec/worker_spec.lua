-- `luaworker work`: Laravel's worker rules, checked in Redis after real runs.
local H = require "spec.helpers"
local cjson = H.json

-- A handler that records each call in the list "spec:ran" and does what the
-- command's "action" property says.
local RECORDER = [[
local luaworker = require "luaworker"
local H = {}
function H.handle(job, command)
    luaworker.redis("RPUSH", "spec:ran", luaworker.json.encode({
        id = job:id(), attempts = job:attempts(), action = command.action }))
    if command.action == "error" then error("boom from the handler") end
    if command.action == "release" then job:release(7) end
    if command.action == "delete" then job:delete() end
    if command.action == "fail" then job:fail("failed by the handler") end
end
function H.failed(job, command, err)
    luaworker.redis("RPUSH", "spec:failed", tostring(err))
end
return H
]]

local function command_with(action)
    return string.format('O:13:"App\\Jobs\\Spec":1:{s:6:"action";s:%d:"%s";}', #action, action)
end

local function spec_job(action, fields)
    fields = fields or {}
    fields.data = { commandName = "App\\Jobs\\Spec", command = command_with(action) }
    return H.payload(fields)
end

local function ran()
    local out = {}
    for i, s in ipairs(H.r("LRANGE", "spec:ran", 0, -1)) do out[i] = cjson.decode(s) end
    return out
end

local handlers

local function work(args, opts)
    local full = { "work", "--handlers=" .. handlers, "--sleep=0.05" }
    for _, a in ipairs(args or { "--stop-when-empty" }) do full[#full + 1] = a end
    return H.run(full, opts)
end

describe("luaworker work", function()
    before_each(function()
        H.flush()
        handlers = H.handlers({ ["App/Jobs/Spec.lua"] = RECORDER })
    end)

    it("runs a job, deletes its reservation and prints Laravel 8's console lines", function()
        local p = spec_job("ok")
        H.push(p)
        local r = work()
        assert.are.equal(0, r.status)
        assert.are.equal(1, #ran())
        local list, delayed, reserved = H.keys()
        assert.are.equal(0, H.r("LLEN", list))
        assert.are.equal(0, H.r("ZCARD", reserved))
        assert.are.equal(0, H.r("ZCARD", delayed))
        assert.matches("^%[%d%d%d%d%-%d%d%-%d%d %d%d:%d%d:%d%d%]%[" .. p.id .. "%] Processing: App\\Jobs\\Spec\n"
            .. "%[[^%]]+%]%[" .. p.id .. "%] Processed:  App\\Jobs\\Spec\n$", r.stdout)
    end)
end)
