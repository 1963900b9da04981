-- A handler's job middleware (runtime/worker/job_middleware.lua): the handler's list
-- runs around handle as a PHP job's middleware() does, and Laravel's own take
-- Laravel's keys in the app's stores, so that PHP's queue:work (the Laravel 8 app)
-- and luaworker honour one limit.
local H = require "spec.helpers"
local cjson = H.json

local TRAIL = H.prefix .. "overlap:trail"
local LOCK = H.cache_prefix .. "laravel-queue-overlap:App\\Jobs\\Overlapping:shared"

-- The runs on the trail: {n =, by =} in order of their start; raises when one
-- started while another was running.
local function runs_without_overlap()
    local open, runs = nil, {}
    for _, entry in ipairs(H.r("LRANGE", TRAIL, 0, -1)) do
        local kind, n, by = entry:match("^(%a) (%S+) (%a+)$")
        if kind == "s" then
            assert(open == nil, "run " .. n .. " (" .. by .. ") started while " .. tostring(open) .. " ran")
            open = n .. " " .. by
            runs[#runs + 1] = { n = n, by = by }
        else
            assert(open == n .. " " .. by, "run " .. n .. " ended, not the one that ran")
            open = nil
        end
    end
    return runs
end

local fleet = H.worker_set()

local function work(handlers, args)
    local full = { "work", "--handlers=" .. handlers, "--sleep=0.05", "--no-watch", "--tries=100" }
    for _, a in ipairs(args or {}) do full[#full + 1] = a end
    return fleet.spawn(full)
end

describe("job middleware", function()
    setup(H.laravel_setup)
    before_each(H.flush)
    after_each(fleet.stop_all)

    it("without_overlapping shares WithoutOverlapping's lock with PHP's queue:work: no two jobs of one key "
        .. "ever run at once, whichever runtime runs them", function()
        H.dispatch("Overlapping", "--count=16", '--args={"n":"{i}","ms":150}')
        work(H.root .. "/spec/fixtures/middleware_handlers", { "--processes=2", "--concurrency=4" })
        fleet.artisan({ "queue:work", "--sleep=0", "--tries=100" })
        fleet.artisan({ "queue:work", "--sleep=0", "--tries=100" })
        H.wait_until(function()
            local ends = 0
            for _, e in ipairs(H.r("LRANGE", TRAIL, 0, -1)) do
                if e:match("^e ") then ends = ends + 1 end
            end
            return ends == 16
        end, 60, "the 16 jobs")
        local runs, seen, by = runs_without_overlap(), {}, { lua = 0, php = 0 }
        for _, r in ipairs(runs) do
            assert.is_nil(seen[r.n], "job " .. r.n .. " ran twice")
            seen[r.n] = true
            by[r.by] = by[r.by] + 1
        end
        assert.are.equal(16, #runs)
        assert.is_true(by.lua > 0, cjson.encode(by))
        assert.are.equal(0, H.r("EXISTS", LOCK))
    end)

    it("without_overlapping holds Laravel's key, with the owner and time to live Laravel's lock has, and "
        .. "releases the job for release_after while another holds it", function()
        local handlers = H.handlers({ ["App/Jobs/Overlapping.lua"] = [[
local luaworker = require "luaworker"
return {
    middleware = { luaworker.middleware.without_overlapping("shared", { release_after = 7, expire_after = 60 }) },
    handle = function(job, command)
        luaworker.redis("RPUSH", luaworker.prefix .. "overlap:trail", "s " .. command.n .. " lua")
        luaworker.sleep(command.ms / 1000)
        luaworker.redis("RPUSH", luaworker.prefix .. "overlap:trail", "e " .. command.n .. " lua")
    end,
}
]] })
        H.dispatch("Overlapping", "--count=2", '--args={"n":"{i}","ms":3000}')
        work(handlers, { "--concurrency=2" })
        H.wait_until(function() return H.r("EXISTS", LOCK) == 1 end, 10, "the lock")
        local owner, ttl = H.r("GET", LOCK), H.r("TTL", LOCK)
        assert.matches("^[A-Za-z0-9]+$", owner)
        assert.are.equal(16, #owner)
        assert.is_true(ttl > 50 and ttl <= 60, tostring(ttl))
        -- the second job, held back: released for 7 s with its attempt counted
        local _, delayed = H.keys()
        H.wait_until(function() return H.r("ZCARD", delayed) == 1 end, 10, "the second job's release")
        local held = H.r("ZRANGE", delayed, 0, -1, "WITHSCORES")
        assert.are.equal(1, cjson.decode(held[1]).attempts)
        local wait = tonumber(held[2]) - os.time()
        assert.is_true(wait >= 5 and wait <= 7, tostring(wait))
        -- the lock goes when the job's code ends
        H.wait_until(function() return H.r("EXISTS", LOCK) == 0 end, 10, "the lock's release")
    end)

    it("without_overlapping with dont_release deletes the job held back, as Laravel's dontRelease()", function()
        local handlers = H.handlers({ ["App/Jobs/Overlapping.lua"] = [[
local luaworker = require "luaworker"
return {
    middleware = { luaworker.middleware.without_overlapping("shared", { dont_release = true }) },
    handle = function(job, command)
        luaworker.redis("RPUSH", luaworker.prefix .. "overlap:trail", "s " .. command.n .. " lua")
        luaworker.redis("RPUSH", luaworker.prefix .. "overlap:trail", "e " .. command.n .. " lua")
    end,
}
]] })
        -- held by another process: a PHP worker's lock, as Laravel writes it
        H.r("SET", LOCK, "someoneelse00000")
        H.dispatch("Overlapping", "--count=1", '--args={"n":"1","ms":0}')
        local r = H.run({ "work", "--handlers=" .. handlers, "--stop-when-empty" })
        assert.are.equal(0, r.status, r.stderr)
        assert.are.equal(0, H.r("LLEN", TRAIL))
        local list, delayed, reserved = H.keys()
        assert.are.same({ 0, 0, 0 }, { H.r("LLEN", list), H.r("ZCARD", delayed), H.r("ZCARD", reserved) })
        -- another owner's lock is not released
        assert.are.equal("someoneelse00000", H.r("GET", LOCK))
    end)
end)
