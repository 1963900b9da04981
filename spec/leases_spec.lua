-- Leases on the Redis queue (runtime/worker/lease_keeper.h): a job in flight keeps
-- its reservation however long it runs, even while its handler computes without
-- yielding, with PHP's queue:work (the Laravel 8 app) and a second luaworker
-- polling the same queue; and once its worker group is killed, it comes back within
-- seconds, its attempt counted, picked up by PHP's own migrate.
local H = require "spec.helpers"
local cjson = H.json

local list, _, reserved = H.keys()
local RUNS, DONE = H.prefix .. "chaos:runs", H.prefix .. "chaos:done"

local fleet = H.worker_set()

local function spawn(args, handlers, opts)
    local full = { "work", "--handlers=" .. handlers, "--no-watch", "--sleep=0.2" }
    for _, a in ipairs(args) do full[#full + 1] = a end
    return fleet.spawn(full, opts)
end

local function php_worker()
    return fleet.artisan({ "queue:work", "--sleep=1", "--tries=5" })
end

-- The runs of each job so far: uuid -> count.
local function runs()
    return H.hash(RUNS)
end

local function only_run_count()
    local n, count = 0, nil
    for _, c in pairs(runs()) do
        n = n + 1
        count = tonumber(c)
    end
    return n == 1 and count or nil
end

-- A handler for App\Jobs\Chaos that computes for command.ms without yielding once,
-- then does what spec/chaos's does.
local COMPUTING = [[
local luaworker = require "luaworker"
return {
    handle = function(job, command)
        luaworker.redis("HINCRBY", luaworker.prefix .. "chaos:runs", job:uuid(), 1)
        local deadline = os.time() + command.ms / 1000
        local x = 0
        while os.time() < deadline do x = x + 1 end
        luaworker.redis("HINCRBY", luaworker.prefix .. "chaos:done", job:uuid(), 1)
    end,
}
]]

describe("a job's lease on the Redis queue", function()
    setup(H.laravel_setup)

    before_each(H.flush)
    after_each(fleet.stop_all)

    -- The job is reserved by the first luaworker, then PHP and a second luaworker
    -- poll the queue for the rest of its run, long past retry_after.
    local function runs_once(handlers, ms, retry_after)
        local first = spawn({ "--retry-after=" .. retry_after, "--timeout=60" }, handlers)
        H.dispatch("Chaos", "--args=" .. cjson.encode({ kind = "ok", ms = ms }))
        H.wait_until(function() return only_run_count() == 1 end, 20, "the first luaworker to start the job")
        php_worker()
        spawn({ "--retry-after=" .. retry_after }, handlers)
        H.wait_until(function() return H.r("HLEN", DONE) == 1 end, ms / 1000 + 20, "the job to end")
        H.sleep(1)
        assert.are.equal(1, only_run_count(), first:stderr())
        assert.are.equal(0, H.r("LLEN", list))
        assert.are.equal(0, H.r("ZCARD", reserved))
        assert.matches("Processed:%s+App\\Jobs\\Chaos", first:stdout())
    end

    it("runs a job of 15 s at retry_after 5 once while PHP's queue:work and another luaworker poll", function()
        runs_once(H.root .. "/spec/chaos/handlers", 15000, 5)
    end)

    it("keeps it while the handler computes without yielding", function()
        runs_once(H.handlers({ ["App/Jobs/Chaos.lua"] = COMPUTING }), 9000, 3)
    end)

    it("lets PHP's queue:work take it within seconds once the worker group is killed, the attempt counted", function()
        local w = spawn({ "--heartbeat=1", "--timeout=120" }, H.root .. "/spec/chaos/handlers", { group = true })
        H.dispatch("Chaos", "--args=" .. cjson.encode({ kind = "ok", ms = 60000 }))
        H.wait_until(function() return only_run_count() == 1 end, 20, "the job to start")
        -- renewed past its first reservation's 90 s... and no sooner than that
        H.sleep(2.5)
        local score = tonumber(H.r("ZRANGE", reserved, 0, 0, "WITHSCORES")[2])
        assert.is_true(score <= os.time() + 3, "the reservation was not renewed: " .. tostring(score))
        w:kill_group("KILL")
        local killed = os.time()
        php_worker()
        H.wait_until(function() return only_run_count() == 2 end, 15, "PHP to run the job again")
        assert.is_true(os.time() - killed <= 5, "took " .. (os.time() - killed) .. " s")
        -- PHP's reservation of it: its second attempt
        local copy = cjson.decode(H.r("ZRANGE", reserved, 0, 0)[1])
        assert.are.equal(2, copy.attempts)
    end)

    it("says once, naming the job, that a lease ran out while Redis did not confirm its renewals", function()
        local w = spawn({ "--heartbeat=1", "--timeout=60" }, H.root .. "/spec/chaos/handlers")
        H.dispatch("Chaos", "--args=" .. cjson.encode({ kind = "ok", ms = 9000 }))
        H.wait_until(function() return only_run_count() == 1 end, 20, "the job to start")
        H.sleep(1)
        -- Redis runs no write for 4 s: the renewals wait, and the lease (2 s) runs out
        H.r("CLIENT", "PAUSE", "4000", "WRITE")
        H.wait_until(function() return H.r("HLEN", DONE) == 1 end, 30, "the job's end")
        local _, said = w:stderr():gsub("could not renew the reservation of App\\Jobs\\Chaos %(attempt 1%) "
            .. "before it expired %(Redis out of reach%): another worker may run it too", "")
        assert.are.equal(1, said, w:stderr())
    end)
end)
