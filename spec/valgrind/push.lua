-- make valgrind: pushes the jobs of the run (`luaworker lua push.lua N`) and
-- prints how many. Of N: 60% Succeed, 10% ReleaseOnce, 8% Fail with 1 try, 4%
-- Fail with 2 tries, 4% FailItself, 4% Dispatch (each dispatches one encrypted
-- Succeed more), 4% Succeed delayed 1 s, 4% string jobs, 1% Timeout, 1% payloads
-- that are not JSON (kept as failed by the pop script).
local luaworker = require "luaworker"

local n = tonumber(arg and arg[1]) or 1000
local pushed = 0
local queue = luaworker.prefix .. "queues:default"

local function count(share)
    return math.floor(n * share + 0.5)
end

local function push(share, class, properties, options)
    for i = 1, count(share) do
        local p = { n = i, tags = { "valgrind", class }, meta = { at = os.time() } }
        for k, v in pairs(properties or {}) do p[k] = v end
        luaworker.dispatch(class, p, options)
        pushed = pushed + 1
    end
end

-- What Laravel's push script does for Queue::push('Class@method', $data).
local function push_raw(share, make)
    for i = 1, count(share) do
        luaworker.redis("RPUSH", queue, make(i))
        luaworker.redis("RPUSH", queue .. ":notify", 1)
        pushed = pushed + 1
    end
end

push(0.60, "App\\Jobs\\Succeed")
push(0.10, "App\\Jobs\\ReleaseOnce", { tries = 2 })
push(0.08, "App\\Jobs\\Fail", { tries = 1 })
push(0.04, "App\\Jobs\\Fail", { tries = 2, backoff = 0 })
push(0.04, "App\\Jobs\\FailItself")
push(0.04, "App\\Jobs\\Dispatch")
push(0.04, "App\\Jobs\\Succeed", nil, { delay = 1 })
push(0.01, "App\\Jobs\\Timeout", { tries = 1, timeout = 1 })
push_raw(0.04, function(i)
    return luaworker.json.encode({
        uuid = string.format("00000000-0000-4000-8000-%012d", i),
        displayName = "App\\Handlers\\StringJob", job = "App\\Handlers\\StringJob@fire",
        maxTries = luaworker.null, maxExceptions = luaworker.null, failOnTimeout = false,
        backoff = luaworker.null, timeout = luaworker.null, retryUntil = luaworker.null,
        data = { n = i, list = { 1, 2, 3 } },
        id = string.format("string%026d", i), attempts = 0,
    })
end)
push_raw(0.01, function(i) return "not a JSON payload " .. i end)
print(pushed)
