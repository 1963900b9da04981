-- The chaos soak (issues 6 and 11): Laravel-made jobs run through `luaworker work
-- --processes` while this driver, from a fixed seed, kill -9's worker processes,
-- kill -9's the supervisor's whole process group (no TERM: what a machine crash or
-- an OOM kill does) and starts it again, stops the supervisor with TERM and starts it
-- again, and restarts redis-server; then it checks that nothing was lost and that no
-- job was charged an attempt it did not run. `make chaos` runs it long,
-- spec/chaos_spec.lua short.
--
--   lua5.2 spec/chaos/driver.lua [--jobs=N] [--seed=S] [--processes=P] [--concurrency=C] [--kills=K]
--       [--group-kills=G] [--supervisor-restarts=S] [--redis-restarts=R] [--waves=W]
--       [--work-ms=MS] [--retry-after=S] [--heartbeat=S] [--drain-timeout=S] [--keep]
--       [--transport=tcp|tls|unix|cluster] [--failover-lag=S]
--
-- Needs ./luaworker built (from any directory). It starts a redis-server of
-- its own (appendonly, appendfsync everysec, in its work directory) so that it can
-- restart it (spec/chaos/server.lua); the Laravel 8 app in examples/laravel (or the
-- copy LUAWORKER_SPEC_APP names: spec/run gives each of its shards one) dispatches
-- App\Jobs\Chaos jobs onto it in W waves, and luaworker runs them with
-- spec/chaos/handlers. Chaos events fall between the waves and into the drain that
-- follows the last one.
--
-- --transport=cluster: a Redis Cluster of its own instead, 3 masters and 3 replicas
-- (spec/chaos/cluster.lua); the workers, the app and luaworker's failed store reach
-- it through REDIS_CLUSTER_NODES (all six) and the queue {default}. Each Redis
-- restart, the one a group kill brings included, is a failover there: the master
-- of the queue's slot is kill -9'd once a worker holds a job, its replica promoted,
-- the killed node started again as the new master's replica, caught up. A failover
-- counts as a Redis restart (redis_restarts) and is judged as one, with what the dead
-- master took with it (see cluster.lua, and the bound below); the summary adds
-- failovers (each one's cut, what was lost), lost_starts and failover_changed.
-- --failover-lag=S: before each kill, the replica is stopped and cut off for S
-- seconds, so that the failover loses S seconds of acknowledged writes for sure (a
-- plain kill -9 seldom loses any on one machine); for runs by hand.
--
-- Progress goes to stderr; stdout gets one JSON line, the summary:
--   jobs, kills, group_kills, supervisor_restarts, redis_restarts, duplicates,
--   duplicate_bound, lost, failed, expected_failed, unexpected_failed, early, left
--   (queue, delayed, reserved), kills_seen, cut_short (runs cut short: by_kill,
--   by_redis_restart, unexplained), unexplained_duplicates, charged_without_run,
--   recovery_ms (the longest time from a kill until no job the killed workers had
--   not started was held any more: by_supervisor for single kills, by_heartbeat for
--   group kills), heartbeat, unexpected_log_lines (worker deaths that were not our
--   kills, other exit statuses, sanitizer reports, any line a soak does not explain),
--   duration, problems (a list), ok.
-- Exit status 0 when ok (no problem), 1 otherwise; the work directory (logs, the
-- job manifest) is kept when not ok, or with --keep.
--
-- What counts as a duplicate, and the bound on them: see spec/chaos/verdict.lua.
--
-- Workers run with --retry-after=6 (a killed worker's job comes back within seconds),
-- --heartbeat=1 (a dead worker's jobs not started go back within 1.5 s) and
-- --timeout=0 (no kill but ours). A kill or the restart costs the job in hand an
-- attempt, as in Laravel, so the jobs that should succeed get maxTries 25 (at least
-- kills + redis restarts + 5): only the always-failing ones (maxTries 3) may fail.
-- the modules beside this file
package.path = (arg[0]:match("^(.*)/[^/]*$") or ".") .. "/?.lua;" .. package.path

local cjson = require "cjson"
local verdict = require "verdict"
local system = require "system"
local psignal = require "posix.signal"

local PREFIX = "laravel_database_"

-- Options ---------------------------------------------------------------------

local opt = {
    jobs = 3000, seed = 1, processes = 3, concurrency = 1, kills = 4, group_kills = 0, supervisor_restarts = 1,
    redis_restarts = 1, waves = 4, work_ms = 8, retry_after = 6, heartbeat = 1,
    drain_timeout = 120, keep = false, transport = "tcp", failover_lag = 0,
}
-- how the workers reach redis-server: its TCP port, its TLS port (a CA the driver
-- makes with openssl), or its unix socket (the Laravel app and the driver itself
-- use the TCP port); or a Redis Cluster
local TRANSPORTS = { tcp = true, tls = true, unix = true, cluster = true }

for _, a in ipairs(arg) do
    local name, value = a:match("^%-%-([%w-]+)=(.*)$")
    if not name then name = a:match("^%-%-([%w-]+)$") end
    local key = name and name:gsub("-", "_")
    if not key or opt[key] == nil then
        io.stderr:write("chaos: unknown argument ", a, "\n")
        os.exit(2)
    end
    if type(opt[key]) == "boolean" then
        opt[key] = true
    elseif key == "transport" then
        if not TRANSPORTS[value] then
            io.stderr:write("chaos: --transport=", tostring(value), ": expected tcp, tls, unix or cluster\n")
            os.exit(2)
        end
        opt[key] = value
    else
        opt[key] = tonumber(value)
        if not opt[key] then
            io.stderr:write("chaos: --", name, " needs a number\n")
            os.exit(2)
        end
    end
end

math.randomseed(opt.seed)

-- Small helpers -----------------------------------------------------------------

local log, clock, sleep, quote = system.log, system.clock, system.sleep, system.quote
local read_file, write_file, shell = system.read_file, system.write_file, system.shell
local alive, wait_for = system.alive, system.wait_for

local function uniform(a, b) return a + (b - a) * math.random() end

-- the repository: two directories above this file
local root = shell("cd " .. quote((arg[0]:match("^(.*)/[^/]*$") or ".")) .. "/../.. && pwd")
    :gsub("%s+$", "")
-- the Laravel 8 app
local app = os.getenv("LUAWORKER_SPEC_APP") or root .. "/examples/laravel"
local dir = shell("mktemp -d /tmp/luaworker-chaos.XXXXXX"):gsub("%s+$", "")
assert(dir ~= "", "mktemp failed")

-- The Redis the soak runs on (spec/chaos/server.lua, spec/chaos/cluster.lua) ------------

-- On a cluster the queue needs a hash tag (below Laravel 13.5), and the handlers keep
-- their bookkeeping in its slot (see cluster.lua); luaworker's failed store keeps the
-- queue's failed jobs there too.
local CLUSTER = opt.transport == "cluster"
local QUEUE = PREFIX .. "queues:" .. (CLUSTER and "{default}" or "default")
local CHAOS = PREFIX .. "chaos:" .. (CLUSTER and "{default}:" or "")
local FAILED = CLUSTER and QUEUE .. ":luaworker:failed_jobs" or PREFIX .. "luaworker:failed_jobs"
local TRAIL = CHAOS .. "trail"

local store = CLUSTER
    and require("cluster").new(dir, { queue = QUEUE, trail = TRAIL, done = CHAOS .. "done", early = CHAOS .. "early" },
        opt.failover_lag)
    or require("server").new(dir, opt.transport, TRAIL)

local function r(cmd, ...) return store:r(cmd, ...) end

local function hash(key)
    local flat, t = r("HGETALL", key), {}
    for k, v in pairs(flat) do t[k] = tonumber(v) end
    return t
end

-- The supervisor ----------------------------------------------------------------------

local supervisors = {}  -- each: {pid =, n =, log =}
local current

-- failed jobs in luaworker's Redis store, which the verdict reads; then the store's
-- variables (store:app_env())
local ENV = "env -u REDIS_URL -u REDIS_PASSWORD -u REDIS_USERNAME -u REDIS_DB -u REDIS_PREFIX "
    .. "-u REDIS_QUEUE -u APP_NAME -u REDIS_CACHE_DB -u CACHE_PREFIX -u REDIS_CLUSTER_NODES "
    .. "QUEUE_FAILED_DRIVER=luaworker-redis "

-- Starts a supervisor in a process group of its own (setsid: its pid is the group's).
local function start_supervisor()
    local n = #supervisors + 1
    local base = string.format("%s/supervisor-%d", dir, n)
    local cmd = string.format("%s%s %s setsid %s/luaworker work --processes=%d --concurrency=%d "
        .. "--handlers=%s --retry-after=%d --heartbeat=%s --timeout=0 --sleep=0.1 --no-watch --quiet",
        ENV, store:app_env(), store:worker_env(), quote(root), opt.processes, opt.concurrency,
        quote(root .. "/spec/chaos/handlers"), opt.retry_after, tostring(opt.heartbeat))
    assert(os.execute(string.format("( %s >%s.out 2>%s.log </dev/null & echo $! >%s.pid; wait $!; "
        .. "echo $? >%s.status.tmp; mv %s.status.tmp %s.status ) >/dev/null 2>&1 &",
        cmd, base, base, base, base, base, base)))
    local pid = wait_for(function()
        local s = read_file(base .. ".pid")
        return s and tonumber(s:match("%d+"))
    end, 10)
    assert(pid, "chaos: the supervisor did not start")
    current = { pid = pid, n = n, base = base }
    supervisors[n] = current
    log("supervisor %d started (pid %d)", n, pid)
end

local function supervisor_status(s)
    local text = read_file(s.base .. ".status")
    return text and tonumber(text:match("%d+"))
end

local function children(pid)
    local pids = {}
    for p in shell("pgrep -P " .. pid):gmatch("%d+") do pids[#pids + 1] = tonumber(p) end
    table.sort(pids)
    return pids
end

-- TERMs the current supervisor once it runs (it has started a worker: its signal
-- handlers are in place; a TERM before the program even started would end it as
-- it ends any program, 143); returns its exit status (nil when it did not exit).
local function stop_supervisor()
    local s = current
    wait_for(function() return #children(s.pid) > 0 or supervisor_status(s) end, 10)
    psignal.kill(s.pid, psignal.SIGTERM)
    s.status = wait_for(function() return supervisor_status(s) end, 60)
    current = nil
    log("supervisor %d stopped with status %s", s.n, tostring(s.status))
    return s.status
end

-- The jobs -------------------------------------------------------------------------

local manifest = {}     -- uuid -> {kind =, expected_runs =}
local order = {}        -- uuids in dispatch order
local tries = math.max(25, opt.kills + opt.redis_restarts + 5)
local FAIL_TRIES = 3

local function artisan_dispatch(count, args, kind, expected_runs)
    if count <= 0 then return end
    local cmd = string.format("%s%s php %s/artisan jobs:dispatch Chaos --count=%d "
        .. "--args=%s 2>&1 </dev/null", ENV, store:app_env(), quote(app), count, quote(cjson.encode(args)))
    local out = shell(cmd)
    local n = 0
    for id, uuid in out:gmatch("(%w+) ([%x-]+)\n") do
        if #id == 32 then
            manifest[uuid] = { kind = kind, expected_runs = expected_runs, id = id }
            order[#order + 1] = uuid
            n = n + 1
        end
    end
    if n ~= count then error("chaos: jobs:dispatch pushed " .. n .. " of " .. count .. ":\n" .. out) end
end

-- One wave of size jobs: 80% ok, 8% releasing, 8% delayed, 4% failing, the details
-- drawn from the seed.
local function dispatch_wave(size)
    local n_fail = math.floor(size * 0.04 + 0.5)
    local n_release = math.floor(size * 0.08 + 0.5)
    local n_delayed = math.floor(size * 0.08 + 0.5)
    local n_ok = size - n_fail - n_release - n_delayed
    local ms = opt.work_ms
    local half = math.floor(n_ok / 2)
    artisan_dispatch(half, { n = "{i}", kind = "ok", ms = ms, tries = tries }, "ok", 1)
    local releases = math.random(1, 2)
    artisan_dispatch(n_release, { n = "{i}", kind = "release", ms = ms, tries = tries,
        releases = releases, releaseDelay = math.random(0, 2) }, "release", releases + 1)
    local d1 = math.floor(n_delayed / 2)
    artisan_dispatch(d1, { n = "{i}", kind = "delayed", ms = ms, tries = tries,
        delay = math.random(1, 5) }, "delayed", 1)
    artisan_dispatch(n_delayed - d1, { n = "{i}", kind = "delayed", ms = ms, tries = tries,
        delay = math.random(1, 5) }, "delayed", 1)
    artisan_dispatch(n_fail, { n = "{i}", kind = "fail", ms = ms, tries = FAIL_TRIES,
        backoff = math.random(0, 1) }, "fail", FAIL_TRIES)
    artisan_dispatch(n_ok - half, { n = "{i}", kind = "ok", ms = ms, tries = tries }, "ok", 1)
end

-- Chaos events ---------------------------------------------------------------------

local stats = { kills = 0, group_kills = 0, supervisor_restarts = 0, redis_restarts = 0 }
local killed = {}       -- pid -> true
local problems = {}
local function problem(fmt, ...)
    local text = string.format(fmt, ...)
    problems[#problems + 1] = text
    log("PROBLEM: %s", text)
end

local recovery = { by_supervisor = 0, by_heartbeat = 0 }  -- the longest, in ms

local WORKERS = QUEUE .. ":luaworker:workers"  -- the workers recorded as holding jobs

-- The ids of the workers recorded as holding jobs of the queue whose process is pids'.
local function worker_ids(pids)
    local wanted, ids = {}, {}
    for _, pid in ipairs(pids) do wanted[tostring(pid)] = true end
    for _, id in ipairs(r("SMEMBERS", WORKERS)) do
        if wanted[id:match(":(%d+):[^:]*$") or ""] then ids[#ids + 1] = id end
    end
    return ids
end

-- Waits until none of ids is recorded as holding jobs any more: what they had not
-- started is back on the queue. Returns the ms since `since` (a clock()), or nil
-- after 30 s.
local function recovered(ids, since)
    local done = wait_for(function()
        local left = {}
        for _, id in ipairs(r("SMEMBERS", WORKERS)) do left[id] = true end
        for _, id in ipairs(ids) do
            if left[id] then return false end
        end
        return true
    end, 30)
    return done and (clock() - since) * 1000 or nil
end

local function note_recovery(kind, ms)
    if not ms then
        problem("the jobs a killed worker had not started were still held 30 s after the kill")
    elseif ms > recovery[kind] then
        recovery[kind] = math.floor(ms + 0.5)
    end
end

-- The Redis restart (a failover on the cluster): see store:restart.
local function restart_redis()
    local t0 = clock()
    local what = store:restart(stats.redis_restarts + 1, uniform(0.2, 1))
    stats.redis_restarts = stats.redis_restarts + 1
    log("%s (%.1fs)", what, clock() - t0)
end

local function kill_worker()
    local pid
    wait_for(function()
        local pids = children(current.pid)
        if #pids == 0 then return false end
        pid = pids[math.random(#pids)]
        return true
    end, 10)
    if not pid then
        problem("no worker process to kill under supervisor %d", current.n)
        return
    end
    local ids = worker_ids({ pid })
    local t0 = clock()
    if psignal.kill(pid, psignal.SIGKILL) == 0 then
        stats.kills = stats.kills + 1
        killed[pid] = true
        log("kill -9 worker %d (kill %d)", pid, stats.kills)
        note_recovery("by_supervisor", recovered(ids, t0))
    end
end

-- kill -9 of the supervisor's whole process group, then a new supervisor; then, the
-- moment no job the dead workers had not started is held any more, a Redis restart
-- under the new workers.
local function kill_group()
    local s = current
    local pids = children(s.pid)
    local ids = worker_ids(pids)
    local t0 = clock()
    psignal.kill(-s.pid, psignal.SIGKILL)
    for _, pid in ipairs(pids) do killed[pid] = true end
    stats.group_kills = stats.group_kills + 1
    log("kill -9 of supervisor %d's process group (%d workers, group kill %d)", s.n, #pids,
        stats.group_kills)
    wait_for(function() return supervisor_status(s) end, 10)
    current = nil
    sleep(uniform(0, 0.3))
    start_supervisor()
    local ms = recovered(ids, t0)
    note_recovery("by_heartbeat", ms)
    log("the dead workers' jobs not started were given back %s ms after the kill", tostring(ms))
    restart_redis()
end

local function restart_supervisor()
    local status = stop_supervisor()
    if status ~= 0 then problem("supervisor exited with %s on TERM, not 0", tostring(status)) end
    stats.supervisor_restarts = stats.supervisor_restarts + 1
    sleep(uniform(0, 0.5))
    start_supervisor()
end

local ACTIONS = { kill = kill_worker, group = kill_group, supervisor = restart_supervisor,
    redis = restart_redis }

-- The plan: W waves; after wave w, the events drawn into gap w (the redis restarts
-- into the middle gap), each after a pause; gap W is the drain.
local function make_plan()
    local gaps = {}
    for w = 1, opt.waves do gaps[w] = {} end
    local function put(kind, gap) table.insert(gaps[gap], math.random(#gaps[gap] + 1), kind) end
    for _ = 1, opt.kills do put("kill", math.random(1, opt.waves)) end
    for _ = 1, opt.group_kills do put("group", math.random(1, opt.waves)) end
    for _ = 1, opt.supervisor_restarts do put("supervisor", math.random(1, opt.waves)) end
    -- the redis restarts open the middle gap, while the workers have a backlog
    for _ = 1, opt.redis_restarts do
        table.insert(gaps[math.max(1, math.floor((opt.waves + 1) / 2))], 1, "redis")
    end
    local plan = {}
    for w = 1, opt.waves do
        plan[#plan + 1] = { "wave", w }
        for _, kind in ipairs(gaps[w]) do plan[#plan + 1] = { kind, uniform(0.1, 0.8) } end
    end
    return plan
end

-- Checks -----------------------------------------------------------------------------

local function queue_sizes()
    return { queue = r("LLEN", QUEUE), delayed = r("ZCARD", QUEUE .. ":delayed"),
        reserved = r("ZCARD", QUEUE .. ":reserved") }
end

local function drained()
    local left = queue_sizes()
    if left.queue + left.delayed + left.reserved > 0 then return false end
    return r("HLEN", CHAOS .. "done") + r("ZCARD", FAILED) >= #order
end

-- Main ---------------------------------------------------------------------------------

local summary

local function run()
    local t0 = clock()
    store:start()
    log("%s, work directory %s", store:describe(), dir)
    assert(os.execute(ENV .. store:app_env() .. " " .. quote(app .. "/setup.sh")
        .. " >" .. quote(dir .. "/setup.log") .. " 2>&1"), "chaos: " .. app .. "/setup.sh failed")

    start_supervisor()
    local plan = make_plan()
    local wave_size = math.floor(opt.jobs / opt.waves)
    for _, step in ipairs(plan) do
        if step[1] == "wave" then
            local size = step[2] == opt.waves and opt.jobs - wave_size * (opt.waves - 1) or wave_size
            dispatch_wave(size)
            log("wave %d/%d: %d jobs dispatched (%d in all)", step[2], opt.waves, size, #order)
        else
            sleep(step[2])
            ACTIONS[step[1]]()
        end
    end

    log("all events done; waiting for the queue to drain")
    local drain_start = clock()
    local ok = wait_for(drained, opt.drain_timeout)
    if not ok then problem("the queue did not drain within %ds", opt.drain_timeout) end
    log("drained in %.1fs after the last event", clock() - drain_start)
    local status = stop_supervisor()
    if status ~= 0 then problem("supervisor exited with %s on TERM, not 0", tostring(status)) end

    -- the verdict on each job; on a cluster, with what the failovers lost (see
    -- cluster.lua): the runs and attempts whose records died with a master count, and
    -- so does a job's success the dead master had acknowledged
    local runs, done, early = hash(CHAOS .. "runs"), hash(CHAOS .. "done"), hash(CHAOS .. "early")
    local ev = store:evidence(r("LRANGE", TRAIL, 0, -1), problem)
    for uuid, n in pairs(ev.runs) do runs[uuid] = (runs[uuid] or 0) + n end
    for uuid in pairs(ev.done) do done[uuid] = done[uuid] or 1 end
    for uuid in pairs(ev.early) do early[uuid] = early[uuid] or 1 end
    local failed = {}
    for _, id in ipairs(r("ZRANGE", FAILED, 0, -1)) do failed[id] = true end
    local logs = {}
    for _, sup in ipairs(supervisors) do
        logs[#logs + 1] = { n = sup.n, text = read_file(sup.base .. ".log") or "" }
    end
    local seen, unexpected, shapes, started = verdict.check_logs(logs, killed, problem)
    write_file(dir .. "/log-lines.txt", shapes)
    local cut, cut_by_kill, cut_by_restart, cut_unexplained, ran = verdict.read_trail(
        ev.trail, manifest, killed, problem, opt.concurrency)
    -- on a cluster: the jobs whose change a failover lost while they ran, by uuid
    -- (how many failovers), and how many in all (see the bound below)
    local around, lost_changes, changed = verdict.around_failovers(ev.trail, opt.concurrency), {}, 0
    for n, set in pairs(ev.changed) do
        for uuid in pairs(set) do
            local runs_around = around[n] and around[n][uuid]
            if runs_around then
                lost_changes[uuid] = (lost_changes[uuid] or 0) + runs_around
                changed = changed + runs_around
                ev.failovers[n].changed_running = (ev.failovers[n].changed_running or 0) + 1
            end
        end
    end
    local lost, duplicates, expected_failed, unexpected_failed, n_failed, n_early = 0, 0, 0, 0, 0, 0
    local lost_list, unexplained_duplicates, uncharged = {}, 0, 0
    for _, uuid in ipairs(order) do
        local job = manifest[uuid]
        if failed[uuid] then n_failed = n_failed + 1 end
        local failed_at
        if failed[uuid] then
            local payload = r("HGET", FAILED .. ":" .. uuid, "payload")
            local ok, decoded = pcall(cjson.decode, payload or "")
            failed_at = ok and type(decoded) == "table" and tonumber(decoded.attempts)
            failed_at = failed_at and failed_at + 1
        end
        local missing = verdict.charged_without_run(ran[uuid], failed_at, started[job.id])
        if missing > 0 then
            uncharged = uncharged + missing
            if uncharged <= 10 then
                problem("%s job %s was charged %d attempt(s) it did not run", job.kind, uuid, missing)
            end
        end
        if early[uuid] then n_early = n_early + 1 end
        if job.kind == "fail" then
            expected_failed = expected_failed + 1
            if done[uuid] then problem("failing job %s succeeded", uuid) end
            if not failed[uuid] then lost = lost + 1; lost_list[#lost_list + 1] = uuid end
        else
            if failed[uuid] then
                unexpected_failed = unexpected_failed + 1
                if unexpected_failed <= 10 then problem("%s job %s is in the failed store: %s", job.kind, uuid,
                    tostring(r("HGET", FAILED .. ":" .. uuid, "exception")):sub(1, 300)) end
            elseif not done[uuid] then
                lost = lost + 1; lost_list[#lost_list + 1] = uuid
            end
        end
        local extra = (runs[uuid] or 0) - job.expected_runs
        if extra > 0 then duplicates = duplicates + extra end
        -- a job runs again only after a run of it was cut short, or (on a cluster) a
        -- failover lost a change of it while it ran
        local causes = (cut[uuid] or 0) + (lost_changes[uuid] or 0)
        if extra > causes then
            unexplained_duplicates = unexplained_duplicates + extra - causes
            if unexplained_duplicates <= 10 then problem("%s job %s ran %d times, %d more than expected, but only %d of its runs were "
                .. "cut short (%d failovers lost a change of it)", job.kind, uuid, runs[uuid], extra, cut[uuid] or 0,
                lost_changes[uuid] or 0) end
        end
    end
    if unexplained_duplicates > 0 then
        problem("%d runs more than the runs cut short explain", unexplained_duplicates)
    end
    if uncharged > 0 then problem("%d attempts charged to jobs that did not run them", uncharged) end
    if unexpected_failed > 0 then problem("%d jobs that should succeed failed", unexpected_failed) end
    local foreign = r("ZCARD", FAILED) - n_failed
    if foreign ~= 0 then problem("%d records in the failed store are not chaos jobs", foreign) end
    if lost > 0 then
        problem("%d jobs lost (neither succeeded nor failed), e.g. %s", lost, lost_list[1])
    end
    if n_early > 0 then problem("%d delayed jobs ran before they were due", n_early) end
    local left = queue_sizes()
    if left.queue + left.delayed + left.reserved > 0 then
        problem("left in Redis: %d queued, %d delayed, %d reserved", left.queue, left.delayed,
            left.reserved)
    end
    -- On a cluster, a Redis restart is a failover (cluster.lua), and the bound is
    -- widened there, only there, by the jobs a failover took a change of with it: a
    -- restart in the tcp form loses nothing (SHUTDOWN writes the AOF), so only the runs
    -- in flight then may run again; a failover may also lose the last writes the dead
    -- master acknowledged, and each job whose pop, delete, release, fail or migration
    -- was among them is back in an earlier state on the promoted replica and may run
    -- once more for each of its runs the lost writes held (a rerun, never a loss: the
    -- checks of lost jobs and of attempts charged
    -- without a run are not widened; they read, besides the keys, only what the dead
    -- master had acknowledged, a success or a run's record). Those jobs are counted,
    -- not assumed: they differ between the dead master's AOF and its replica at the
    -- cut, and a run of theirs was under way then (verdict.around_failovers).
    local bound = opt.concurrency
        * (stats.kills + opt.processes * (stats.group_kills + stats.redis_restarts)) + changed
    if duplicates > bound then
        problem("%d duplicate runs, more than the bound %d (concurrency x (kills + processes x "
            .. "(group kills + redis restarts)) + %d jobs whose change a failover lost)", duplicates, bound,
            changed)
    end
    if stats.group_kills < opt.group_kills then
        problem("only %d of %d group kills happened", stats.group_kills, opt.group_kills)
    end

    if seen ~= stats.kills then
        problem("the supervisors saw %d workers killed by signal 9, the driver killed %d", seen,
            stats.kills)
    end
    if stats.kills < opt.kills then problem("only %d of %d kills hit a worker", stats.kills, opt.kills) end

    local lines = {}
    for _, uuid in ipairs(order) do lines[#lines + 1] = uuid .. " " .. manifest[uuid].kind end
    write_file(dir .. "/manifest.txt", table.concat(lines, "\n") .. "\n")

    summary = {
        jobs = #order, seed = opt.seed, processes = opt.processes, concurrency = opt.concurrency,
        transport = opt.transport,
        kills = stats.kills,
        group_kills = stats.group_kills, heartbeat = opt.heartbeat,
        supervisor_restarts = stats.supervisor_restarts, redis_restarts = stats.redis_restarts,
        duplicates = duplicates, duplicate_bound = bound, lost = lost, failed = n_failed,
        expected_failed = expected_failed, unexpected_failed = unexpected_failed, early = n_early,
        left = left, kills_seen = seen, unexpected_log_lines = unexpected,
        cut_short = { by_kill = cut_by_kill, by_redis_restart = cut_by_restart,
            unexplained = cut_unexplained }, unexplained_duplicates = unexplained_duplicates,
        charged_without_run = uncharged, recovery_ms = recovery,
        failovers = CLUSTER and ev.failovers or nil, lost_starts = CLUSTER and ev.lost_starts or nil,
        failover_changed = CLUSTER and changed or nil,
        duration = tonumber(string.format("%.1f", clock() - t0)), problems = problems,
    }
end

local ok, err = xpcall(run, debug.traceback)
if not ok then problem("%s", tostring(err)) end

-- whatever happened: nothing of ours left running
if current and current.pid and alive(current.pid) then
    local pids = children(current.pid)
    psignal.kill(current.pid, psignal.SIGTERM)
    if not wait_for(function() return not alive(current.pid) end, 15) then
        psignal.kill(current.pid, psignal.SIGKILL)
        for _, pid in ipairs(pids) do psignal.kill(pid, psignal.SIGKILL) end
    end
end
pcall(store.stop, store)

summary = summary or { jobs = #order, problems = problems }
summary.ok = #problems == 0
if summary.ok and not opt.keep then
    os.execute("rm -rf " .. quote(dir))
else
    summary.dir = dir
end
if #problems == 0 then summary.problems = nil end
io.stdout:write(cjson.encode(summary), "\n")
os.exit(summary.ok and 0 or 1)
