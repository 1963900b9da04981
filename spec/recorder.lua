-- The recorder job of the worker specs (worker_spec, idle_spec): its handler, its
-- payloads and what it recorded.
local H = require "spec.helpers"
local cjson = H.json

local M = {}

-- A handler that records each call in the list "spec:ran" and does what the
-- command's "action" property says.
M.HANDLER = [[
local luaworker = require "luaworker"
local H = {}
function H.handle(job, command)
    local t = luaworker.redis("TIME")
    luaworker.redis("RPUSH", "spec:ran", luaworker.json.encode({
        id = job:id(), attempts = job:attempts(), action = command.action,
        at = tonumber(t[1]) + tonumber(t[2]) / 1e6 }))
    if command.action == "error" then error("boom from the handler") end
    if command.action == "release" then job:release(7) end
    if command.action == "release_now" and job:attempts() == 1 then job:release(0) end
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

function M.spec_job(action, fields)
    fields = fields or {}
    fields.data = { commandName = "App\\Jobs\\Spec", command = command_with(action) }
    return H.payload(fields)
end

function M.ran()
    local out = {}
    for i, s in ipairs(H.r("LRANGE", "spec:ran", 0, -1)) do out[i] = cjson.decode(s) end
    return out
end

return M
