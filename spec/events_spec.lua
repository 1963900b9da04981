-- The worker events Laravel added after 8.83 (JobReleased, WorkerIdle,
-- WorkerInterrupted, WorkerPausing / WorkerResuming, WorkerQueuePaused /
-- WorkerQueueResumed) as hooks, and the lines --json writes, in WorkCommand's order.
local H = require "spec.helpers"
local cjson = require "cjson"

local HANDLERS = {
    ["App/Jobs/Ev.lua"] = [[
return { handle = function(job)
    if job:payload().data.release then job:release(60) end
end }
]],
    ["init.lua"] = [[
local luaworker = require "luaworker"
local function log(name)
    return function(e)
        local what = name
        if e.job then what = what .. ":" .. e.job:id() end
        if name == "interrupted" then what = what .. ":" .. tostring(e.signal) end
        if name:match("^queue_") then what = what .. ":" .. e.queue end
        luaworker.redis("RPUSH", "spec:events", what)
    end
end
for _, n in ipairs({ "before", "after", "released", "idle", "interrupted", "pausing", "resuming",
                     "queue_paused", "queue_resumed", "stopping" }) do
    luaworker[n](log(n))
end
]],
}

local PAUSED_LOW = "laravel_database_laravel_cache_illuminate:queue:paused:redis:low"

local function job(id, release)
    return H.payload({ id = id, displayName = "App\\Jobs\\Ev",
        data = { commandName = "App\\Jobs\\Ev", command = 'O:11:"App\\Jobs\\Ev":0:{}', release = release } })
end

describe("the newer worker events", function()
    local handlers
    setup(function() handlers = H.handlers(HANDLERS) end)
    before_each(function() H.flush() end)

    local function events() return H.r("LRANGE", "spec:events", 0, -1) end
    local function seen(what)
        H.wait_until(function()
            for _, e in ipairs(events()) do if e == what then return true end end
        end, 10, what)
    end

    it("fire as hooks: released, idle, pausing and resuming, queue paused and resumed, interrupted", function()
        H.push(job("a"))
        H.push(job("r", true))
        local w = H.spawn({ "work", "--handlers=" .. handlers, "--sleep=0.05", "--queue=default,low",
            "--laravel=12.40" })
        seen("idle")
        local e = events()
        assert.are.same({ "before:a", "after:a", "before:r", "after:r", "released:r", "idle" },
            { e[1], e[2], e[3], e[4], e[5], e[6] })
        w:kill("USR2")
        seen("pausing")
        w:kill("CONT")
        seen("resuming")
        H.rdb(1, "SET", PAUSED_LOW, "b:1;")
        seen("queue_paused:low")
        H.rdb(1, "DEL", PAUSED_LOW)
        seen("queue_resumed:low")
        w:kill("TERM")
        assert.are.equal(0, w:wait())
        e = events()
        assert.are.same({ "interrupted:15", "stopping" }, { e[#e - 1], e[#e] })
        -- each announced once
        local count = {}
        for _, name in ipairs(e) do count[name] = (count[name] or 0) + 1 end
        assert.are.same({ 1, 1, 1, 1 }, { count.pausing, count.resuming, count["queue_paused:low"],
            count["queue_resumed:low"] })
    end)

    it("are written by --json in WorkCommand's key order, with a queue's pause and resume", function()
        H.rdb(1, "SET", PAUSED_LOW, "b:1;")
        local p = job("j1")
        H.push(p)
        local r = H.run({ "work", "--handlers=" .. handlers, "--stop-when-empty", "--sleep=0",
            "--queue=default,low", "--laravel=13.26", "--json" })
        assert.are.equal(0, r.status, r.stderr)
        local lines = {}
        for line in r.stdout:gmatch("[^\n]+") do lines[#lines + 1] = line end
        local ts = '"timestamp":"%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d%.%d%d%d%d%d%d[%+%-]%d%d:%d%d"'
        local function exact(s) return (s:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0")) end
        local head = exact('{"level":"info","id":"j1","uuid":"' .. p.uuid
            .. '","connection":"redis","queue":"default","job":"App\\\\Jobs\\\\Ev","status":')
        assert.matches("^" .. head .. exact('"starting","attempts":1,') .. ts .. "}$", lines[1])
        assert.matches("^" .. head .. exact('"success","result":"deleted","attempts":1,') .. ts
            .. ',"duration":[%d.e-]+}$', lines[2])
        assert.matches('^{"level":"warning","queue":"low","status":"paused",' .. ts .. "}$", lines[3])
        assert.are.equal(3, #lines)
        assert.is_table(cjson.decode(lines[2]))
    end)
end)
