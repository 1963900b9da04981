-- The short chaos soak's run and checks, for spec/chaos_spec.lua and
-- spec/chaos_transports_spec.lua (spec/chaos/driver.lua does the soak).
local H = require "spec.helpers"
local M = {}

-- Runs the driver with args; returns its summary (decoded) and its progress log.
local function soak(args)
    local dir = H.tmpdir()
    local words = { "lua5.2", H.quote(H.root .. "/spec/chaos/driver.lua") }
    for _, a in ipairs(args) do words[#words + 1] = H.quote(a) end
    os.execute(string.format("cd %s && timeout -s KILL 150 %s >%s/summary 2>%s/log </dev/null",
        H.quote(H.root), table.concat(words, " "), dir, dir))
    local log = H.read_file(dir .. "/log") or ""
    local line = (H.read_file(dir .. "/summary") or ""):match("[^\n]+")
    assert(line, "the chaos driver printed no summary:\n" .. log)
    io.stderr:write("# chaos soak: ", line, "\n")
    return H.json.decode(line), log
end

-- The driver's verdict on a soak of 3,000 jobs by 3 processes, each running up to
-- concurrency jobs at once, each job waiting work_ms, the workers reaching Redis by
-- transport (tcp by default, tls or unix; or cluster: a Redis Cluster whose Redis
-- restarts are failovers, each losing the last failover_lag seconds of writes its
-- master acknowledged); assert: the spec's (busted's).
function M.check(assert, concurrency, work_ms, transport, failover_lag)
    local s, log = soak({ "--jobs=3000", "--seed=7", "--processes=3", "--concurrency=" .. concurrency,
        "--kills=4", "--group-kills=1", "--supervisor-restarts=1", "--redis-restarts=1", "--waves=4",
        "--work-ms=" .. work_ms, "--drain-timeout=60", "--transport=" .. (transport or "tcp"),
        "--failover-lag=" .. (failover_lag or 0) })
    -- the driver's own checks, each named in problems
    assert.are.same({}, s.problems or {}, log)
    assert.is_true(s.ok, log)
    assert.are.equal(3000, s.jobs)
    -- a group kill comes with a Redis restart (on a cluster, a failover) of its own
    assert.are.same({ 4, 1, 1, 2 }, { s.kills, s.group_kills, s.supervisor_restarts, s.redis_restarts })
    assert.are.equal(0, s.lost)
    -- the jobs the killed workers reserved ahead went back uncharged: every
    -- attempt a job was charged, it ran
    assert.are.equal(0, s.charged_without_run)
    -- ... at once after a worker's kill, within two heartbeat periods after the group's
    assert.is_true(s.recovery_ms.by_supervisor < 1000, log)
    assert.is_true(s.recovery_ms.by_heartbeat <= 2000 * s.heartbeat, log)
    -- every job succeeded or, for the always-failing ones, is in the failed store
    assert.are.equal(s.expected_failed, s.failed)
    assert.are.equal(0, s.unexpected_failed)
    assert.are.same({ queue = 0, delayed = 0, reserved = 0 }, s.left)
    -- the jobs in flight when their process is killed run again, and so may those
    -- in flight in each worker process when Redis goes away; a failover may also
    -- lose the last changes of some jobs, which the driver measures (the jobs whose
    -- state differs between the dead master and its replica; the runs whose records
    -- were only on the dead master): each of those may run once more
    local per_process = concurrency
    local changed, lost_starts = 0, 0
    if transport == "cluster" then
        changed, lost_starts = s.failover_changed, s.lost_starts
        assert.are.equal(s.redis_restarts, #s.failovers)
    end
    assert.are.equal(per_process * (s.kills + 3 * (s.group_kills + s.redis_restarts)) + changed,
        s.duplicate_bound)
    assert.is_true(s.duplicates <= s.duplicate_bound, log)
    -- and, run by run: each run cut short was in flight in a killed process or in a
    -- process when Redis restarted (or began in the writes a failover lost), and only
    -- cut-short runs (or jobs whose change a failover lost) were run again
    assert.are.equal(0, s.cut_short.unexplained)
    assert.are.equal(0, s.unexplained_duplicates)
    assert.is_true(s.cut_short.by_kill <= per_process * (s.kills + 3 * s.group_kills))
    assert.is_true(s.cut_short.by_redis_restart <= per_process * 3 * s.redis_restarts + lost_starts)
    -- the supervisors saw exactly the kills, and no other death or odd line
    assert.are.equal(s.kills, s.kills_seen)
    assert.are.equal(0, s.unexpected_log_lines)
    assert.are.equal(0, s.early)
end


return M
