-- The worker against a Redis that goes away and comes back.
local H = require "spec.helpers"
local cjson = H.json

local HANDLER = [[
local luaworker = require "luaworker"
return { handle = function(job, command)
    luaworker.redis("RPUSH", "spec:ran", job:id())
end }
]]

describe("luaworker work when Redis goes away", function()
    it("logs the outage once, reconnects, loads its scripts again and drains the queue", function()
        local srv = H.redis_server()
        local handlers = H.handlers({ ["App/Jobs/Spec.lua"] = HANDLER })
        local env = { REDIS_PORT = tostring(srv.port) }
        local list, _, _, notify = H.keys()
        local function push(id)
            srv:r("RPUSH", list, cjson.encode(H.payload({ id = id })))
            srv:r("RPUSH", notify, "1")
        end

        local w = H.spawn({ "work", "--handlers=" .. handlers, "--sleep=0.05" }, { env = env })
        push("before")
        H.wait_until(function() return #srv:r("LRANGE", "spec:ran", 0, -1) == 1 end, 10, "the first job")

        srv:stop()
        H.sleep(2.5)
        assert.is_nil(w:status())
        srv:start()
        push("after")
        H.wait_until(function()
            local ok, ran = pcall(srv.r, srv, "LRANGE", "spec:ran", 0, -1)
            return ok and #ran == 1 and ran[1] == "after"
        end, 10, "the job pushed after the restart")
        w:kill("TERM")
        assert.are.equal(0, w:wait())
        srv:stop()

        local err = w:stderr()
        local _, lost = err:gsub("lost: ", "")
        assert.are.equal(1, lost)
        assert.matches("retrying every second", err)
        assert.matches("connection to Redis at 127.0.0.1:" .. srv.port .. "/0 is back", err)
    end)
end)
