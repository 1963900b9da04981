-- `luaworker work --metrics=HOST:PORT`: the fleet's Prometheus metrics, served by
-- the supervisor, counted by the workers in their slots: exact counts by Laravel's
-- events with failing, releasing and slow jobs on two processes, across worker
-- replacements (--max-jobs), on Redis and on the database queue; checked with
-- Prometheus's own promtool and scraped by a real Prometheus server; and clients
-- that do not behave get an error or a close while the jobs run on.
local H = require "spec.helpers"
local socket = require "socket"
local cjson = H.json

local HANDLER = [[
local luaworker = require "luaworker"
return { handle = function(job, command)
    if command.mode == "fail" then error("boom") end
    if command.mode == "release" and job:attempts() == 1 then return job:release(0) end
    if command.mode == "slow" then luaworker.sleep(0.3) end
    if command.mode == "long" then luaworker.sleep(6) end
    if command.mode == "spin" then while true do end end
    local f = io.open(command.done, "a")
    f:write("x")
    f:close()
end }
]]

local function scrape(port, path)
    local _, out = H.sh("curl -s --max-time 5 http://127.0.0.1:" .. port .. (path or "/metrics"))
    return out
end

-- The value of the sample `line` (a metric with its labels) in text, or nil.
local function sample(text, line)
    for l in text:gmatch("[^\n]+") do
        local v = l:match("^" .. line:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0") .. " (%S+)$")
        if v then return tonumber(v) end
    end
    return nil
end

local CLASS = "App\\Jobs\\Metered"
local LABELS = '{queue="default",job="App\\\\Jobs\\\\Metered"}'

-- Pushes the mix: 6 that pass, 2 that raise (released once, failed at their
-- second attempt: --tries=2), 2 that release themselves once, 2 slow. Their code
-- returns 12 times (JobProcessed: the releases by their code too), raises 4
-- times; 4 releases, 2 failures, 16 attempts.
local function push_mix(done, env)
    for _, mode in ipairs({ "ok", "ok", "fail", "release", "slow", "ok", "ok", "fail", "release",
        "slow", "ok", "ok" }) do
        local r = H.run({ "push", CLASS, cjson.encode({ mode = mode, done = done }) }, { env = env })
        assert.are.equal(0, r.status, r.stderr)
    end
end

local function expect_mix(port)
    local text
    H.wait_until(function()
        text = scrape(port)
        return sample(text, "luaworker_jobs_processed_total" .. LABELS) == 12
            and sample(text, "luaworker_jobs_failed_total" .. LABELS) == 2
    end, 20, "the counts of the mix")
    assert.are.equal(4, sample(text, "luaworker_jobs_released_total" .. LABELS))
    assert.are.equal(16, sample(text, "luaworker_job_duration_seconds_count" .. LABELS))
    assert.are.equal(16, sample(text, 'luaworker_job_duration_seconds_bucket{queue="default",'
        .. 'job="App\\\\Jobs\\\\Metered",le="+Inf"}'))
    -- the slow ones took 0.3 s or more
    assert.is_true(sample(text, 'luaworker_job_duration_seconds_bucket{queue="default",'
        .. 'job="App\\\\Jobs\\\\Metered",le="0.25"}') <= 14)
    assert.is_true(sample(text, "luaworker_job_duration_seconds_sum" .. LABELS) >= 0.6)
    assert.are.equal(0, sample(text, "luaworker_jobs_in_flight"))
    assert.are.equal(2, sample(text, "luaworker_workers"))
    -- --max-jobs=3: the 16 attempts took workers in the two slots' places
    assert.is_true(sample(text, "luaworker_worker_restarts_total") >= 2)
    return text
end

local function promtool_check(text)
    if not H.installed("promtool") then return end
    local dir = H.tmpdir()
    H.write_file(dir .. "/metrics.txt", text)
    local status, out = H.sh("promtool check metrics < " .. H.quote(dir .. "/metrics.txt"))
    assert.are.same({ 0, "" }, { status, out })
end

describe("luaworker work --metrics", function()
    local workers

    before_each(function()
        H.flush()
        workers = {}
    end)

    after_each(function()
        for _, w in ipairs(workers) do w:kill("TERM") end
        for _, w in ipairs(workers) do pcall(w.wait, w, 20) end
    end)

    local function fleet(args, env)
        local handlers = H.handlers({ ["App/Jobs/Metered.lua"] = HANDLER })
        local port = H.free_port()
        local full = { "work", "--handlers=" .. handlers, "--processes=2", "--sleep=0.05",
            "--metrics=127.0.0.1:" .. port, "--max-jobs=3", "--backoff=0", "--tries=2" }
        for _, a in ipairs(args or {}) do full[#full + 1] = a end
        local w = H.spawn(full, { env = env })
        workers[#workers + 1] = w
        H.wait_until(function() return scrape(port):match("luaworker_workers 2") end, 10,
            "the metrics endpoint")
        return w, port
    end

    it("counts processed, failed and released jobs and the attempts' time exactly, across worker replacements, which promtool takes", function()
        local _, port = fleet()
        local done = H.tmpdir() .. "/done"
        push_mix(done)
        local text = expect_mix(port)
        promtool_check(text)
        if not H.installed("promtool") then
            pending("promtool is not installed (Debian's prometheus): the text is not checked by it")
        end
    end)

    it("counts the same on the database queue", function()
        local file = H.tmpdir() .. "/app.sqlite"
        H.write_file(file, "")
        H.sqlite(file, 'create table "jobs" ("id" integer primary key autoincrement not null, "queue" '
            .. 'varchar not null, "payload" text not null, "attempts" integer not null, "reserved_at" '
            .. 'integer, "available_at" integer not null, "created_at" integer not null)')
        H.sqlite(file, 'create table "cache" ("key" varchar not null primary key, "value" text not null, '
            .. '"expiration" integer not null)')
        local env = { QUEUE_CONNECTION = "database", DB_CONNECTION = "sqlite", DB_DATABASE = file,
            QUEUE_FAILED_DRIVER = "luaworker-database", CACHE_DRIVER = "database" }
        local _, port = fleet({ "database" }, env)
        push_mix(H.tmpdir() .. "/done", env)
        promtool_check(expect_mix(port))
    end)

    it("is scraped by a real Prometheus, which answers a query with the exact count", function()
        if not H.installed("prometheus") then
            return pending("prometheus is not installed (Debian's prometheus): no server scrapes")
        end
        local _, port = fleet()
        local dir = H.tmpdir()
        local web = H.free_port()
        H.write_file(dir .. "/prometheus.yml", table.concat({
            "global:", "  scrape_interval: 1s",
            "scrape_configs:", "  - job_name: luaworker", "    static_configs:",
            "      - targets: ['127.0.0.1:" .. port .. "']", "" }, "\n"))
        local prometheus = H.tmpdir()
        assert(os.execute(string.format("cd %s && (prometheus --config.file=%s --storage.tsdb.path=%s "
            .. "--web.listen-address=127.0.0.1:%d --log.level=error >%s/log 2>&1 & echo $! >%s/pid)",
            H.quote(prometheus), H.quote(dir .. "/prometheus.yml"), H.quote(prometheus .. "/data"), web,
            H.quote(prometheus), H.quote(prometheus))))
        local ok, err = pcall(function()
            push_mix(H.tmpdir() .. "/done")
            expect_mix(port)
            local answer
            H.wait_until(function()
                local _, out = H.sh("curl -s --max-time 5 'http://127.0.0.1:" .. web .. "/api/v1/query?"
                    .. "query=sum(luaworker_jobs_processed_total)'")
                answer = out
                local decoded = pcall(cjson.decode, out) and cjson.decode(out)
                local result = decoded and decoded.data and decoded.data.result
                return result and result[1] and result[1].value[2] == "12"
            end, 30, "Prometheus's answer 12")
            assert.truthy(answer)
        end)
        os.execute("kill $(cat " .. H.quote(prometheus .. "/pid") .. ") 2>/dev/null")
        assert(ok, err)
    end)

    it("counts a job that kept the CPU past its timeout: its process ended, the job failed by its successor", function()
        local _, port = fleet({ "--timeout=1" })
        local done = H.tmpdir() .. "/done"
        assert.are.equal(0, H.run({ "push", CLASS, cjson.encode({ mode = "spin", done = done }),
            "--tries=1" }).status)
        assert.are.equal(0, H.run({ "push", CLASS, cjson.encode({ mode = "ok", done = done }) }).status)
        local text
        H.wait_until(function()
            text = scrape(port)
            return sample(text, "luaworker_job_timeouts_total") == 1
                and sample(text, "luaworker_jobs_failed_total" .. LABELS) == 1
                and sample(text, "luaworker_jobs_processed_total" .. LABELS) == 1
        end, 20, "the timeout, the failure and the other job")
        assert.is_true(sample(text, "luaworker_worker_restarts_total") >= 1)
        assert.are.equal(0, sample(text, "luaworker_jobs_in_flight"))
    end)

    it("says each queue's size, as Laravel's size() counts it, in its three states", function()
        local _, port = fleet()
        local done = H.tmpdir() .. "/done"
        for _ = 1, 3 do
            assert.are.equal(0, H.run({ "push", CLASS, cjson.encode({ mode = "ok", done = done }),
                "--delay=300" }).status)
        end
        assert.are.equal(0, H.run({ "push", CLASS, cjson.encode({ mode = "long", done = done }) }).status)
        local function size(text, state)
            return sample(text, 'luaworker_queue_size{queue="default",state="' .. state .. '"}')
        end
        local text
        H.wait_until(function()
            text = scrape(port)
            return size(text, "reserved") == 1 and size(text, "delayed") == 3 and size(text, "pending") == 0
        end, 10, "the long job reserved, three delayed")
        assert.matches("^default: 0 pending, 3 delayed, 1 reserved %(4 in all%)", H.run({ "size" }).stdout)
        H.wait_until(function() return size(scrape(port), "reserved") == 0 end, 20, "the long job done")
        promtool_check(scrape(port))
    end)

    it("escapes labels: no class name breaks the text", function()
        local _, port = fleet()
        -- no handler for these: each fails, counted under its class
        for _, name in ipairs({ 'App\\Jobs\\Quote"d', "App\\Jobs\\New\nLine", "App\\Jobs\\Bad\255Byte" }) do
            H.push(H.class_payload(name, { displayName = name }))
        end
        local text
        H.wait_until(function()
            text = scrape(port)
            local n = 0
            for _ in text:gmatch("\nluaworker_jobs_failed_total{") do n = n + 1 end
            return n == 3
        end, 20, "three failed series")
        assert.truthy(text:find('job="App\\\\Jobs\\\\Quote\\"d"', 1, true))
        assert.truthy(text:find('job="App\\\\Jobs\\\\New\\nLine"', 1, true))
        assert.truthy(text:find('job="App\\\\Jobs\\\\Bad?Byte"', 1, true))
        promtool_check(text)
    end)

    it("answers clients that do not behave with an error or a close, while the jobs run on", function()
        local w, port = fleet({ "--max-jobs=0" })
        -- idle connections past the limit, one that never ends its headers, one
        -- with a megabyte of them
        local idle = {}
        for i = 1, 300 do
            local c = socket.tcp()
            c:settimeout(1)
            if c:connect("127.0.0.1", port) then idle[i] = c else c:close() end
        end
        local slow = socket.tcp()
        slow:settimeout(1)
        assert(slow:connect("127.0.0.1", port))
        slow:send("GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        local big = socket.tcp()
        big:settimeout(5)
        local said
        if big:connect("127.0.0.1", port) then
            big:send("GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " .. string.rep("a", 1048576) .. "\r\n\r\n")
            said = big:receive("*l")
        end
        -- refused with a status, or closed: never a response of metrics
        assert.is_true(said == nil or said:match("^HTTP/1%.1 4%d%d") ~= nil, tostring(said))
        big:close()
        -- the jobs run on meanwhile
        local done = H.tmpdir() .. "/done"
        for _ = 1, 20 do
            assert.are.equal(0, H.run({ "push", CLASS, cjson.encode({ mode = "ok", done = done }) }).status)
        end
        H.wait_until(function() return #(H.read_file(done) or "") == 20 end, 20, "the 20 jobs")
        for _, c in pairs(idle) do c:close() end
        slow:close()
        -- once they are gone, it serves again; a path out of the tree is not found
        H.wait_until(function() return sample(scrape(port), "luaworker_jobs_processed_total" .. LABELS) == 20 end,
            15, "the metrics after the flood")
        local status = select(2, H.sh("curl -s -o /dev/null -w '%{http_code}' --path-as-is "
            .. "http://127.0.0.1:" .. port .. "/../../etc/passwd"))
        assert.are.equal("404", status)
        w:kill("TERM")
        assert.are.equal(0, w:wait(10))
    end)

    it("refuses an address it cannot listen on, or that is no HOST:PORT, with status 2", function()
        local r = H.run({ "work", "--metrics=127.0.0.1", "--handlers=" .. H.handlers({}) })
        assert.are.equal(2, r.status)
        assert.matches("%-%-metrics=127%.0%.0%.1: expected HOST:PORT with a port from 1 to 65535", r.stderr)
        local taken = socket.bind("127.0.0.1", 0)
        local _, used = taken:getsockname()
        r = H.run({ "work", "--metrics=127.0.0.1:" .. used, "--handlers=" .. H.handlers({}) })
        taken:close()
        assert.are.equal(2, r.status)
        assert.matches("cannot start: %-%-metrics=127%.0%.0%.1:" .. used .. ": cannot listen there", r.stderr)
    end)
end)
