-- The chaos soak's verdict (spec/chaos/driver.lua): what the logs may say, what the
-- trail of runs says about each run and each job.
--
-- A duplicate is a handler run beyond those a run without chaos makes (1 for ok and
-- delayed jobs, releases + 1 for releasing ones, tries for failing ones). Runs are
-- counted by the handler before anything else, and a job's outcome (delete, release,
-- fail) is one atomic script, so a job runs again only when the process running it
-- did not get to record its outcome: it was SIGKILLed (at most --concurrency jobs in
-- flight per process: that many duplicates per kill, --processes times that per group
-- kill), or Redis went away under it with the restart (its handler's Redis call
-- failed; at most --concurrency jobs in flight per worker process, so at most
-- --processes times that per restart). The jobs a process reserved ahead and did not
-- start go back uncharged, and run once. A TERM lets every job in flight finish.
-- Hence the bound:
--   duplicates <= concurrency * (kills + processes * (group_kills + redis_restarts)).
-- On a Redis Cluster (--transport=cluster) a Redis restart is a failover, which may
-- also lose the dead master's last acknowledged writes: the driver adds the jobs
-- whose change it lost, measured (spec/chaos/cluster.lua), to the bound and to each
-- such job's runs that may be repeated.
-- The trail (chaos:trail, see M.read_trail) checks the same per run: every run cut
-- short must be one of the last --concurrency runs of a killed process or of a
-- process's runs before a Redis restart, and no job may run again more often than its
-- runs were cut short.
-- It also checks that every attempt a job was charged ran: the attempts of its runs
-- (and the one it failed at) have no gap.
local M = {}

-- What the supervisors and workers may log in a soak, besides the deaths of the
-- workers we killed: the failing jobs' errors with their tracebacks, a worker killed
-- before it was ready started again later, the jobs a killed worker had not started
-- given back, and the Redis restart seen from a worker (the outage and its end, a
-- job whose Redis call failed then, Redis still loading its AOF).
M.EXPECTED_LINES = {
    "^%[[^%]]+%]%[%w+%] App\\Jobs\\Chaos %(attempt %d+%) raised; released, available again in %d+s: "
        .. "RuntimeException: chaos: failing on purpose$",
    "^%[[^%]]+%]%[%w+%] App\\Jobs\\Chaos %(attempt %d+%) raised: RuntimeException: chaos: failing on purpose$",
    "^stack traceback:$",
    "^\t",
    "^%[[^%]]+%] worker %d+ ended [%d.]+s after its start, before it was ready; starting it again in %d+s$",
    "^%[[^%]]+%] [^\n]*Redis [^\n]*; retrying, at least every second$",
    "^%[[^%]]+%] connection to Redis at [^ ]+ is back$",
    -- (on a cluster, named by its seeds: a failover of the queue's master, during
    -- which the cluster is down until the replica is promoted)
    "^%[[^%]]+%] connection to Redis at cluster [^ ]+ is back$",
    "^%[[^%]]+%] CLUSTERDOWN [^\n]*; retrying, at least every second$",
    "^%[[^%]]+%]%[%w+%] App\\Jobs\\Chaos %(attempt %d+%) raised[;:].* CLUSTERDOWN ",
    "^%[[^%]]+%]%[%w+%] while handling the error of App\\Jobs\\Chaos: Redis ",
    "^%[[^%]]+%]%[%w+%] App\\Jobs\\Chaos %(attempt %d+%) raised[;:].* Redis ",
    "^%[[^%]]+%]%[%w+%] error in the attempted hook: [^\n]*Redis ",
    -- a failing job one of whose attempts was cut short (a kill, the Redis restart)
    "^%[[^%]]+%]%[%w+%] App\\Jobs\\Chaos %(attempt %d+%) failed: Illuminate\\Queue\\"
        .. "MaxAttemptsExceededException: ",
    -- the jobs a killed worker had not started, given back by its successor, or by a
    -- worker that found its heartbeat gone (a group kill)
    "^%[[^%]]+%] worker [^ ]+ ended without giving back its jobs: %d+ it had not started went "
        .. "back to the queue$",
    "^%[[^%]]+%] worker [^ ]+ stopped beating: %d+ jobs it had not started went back to queue ",
    -- a job a worker held while Redis restarted, given back meanwhile: not run by it
    "^%[[^%]]+%]%[%w+%] App\\Jobs\\Chaos %(attempt %d+%) left this worker's hands while it could "
        .. "not reach Redis %(given back, or its reservation expired%): it runs elsewhere, not here$",
    -- the job a killed worker had started: it goes back with its attempt counted (at
    -- once by its successor, which knows it from the supervisor; when its lease runs
    -- out for a worker that found the heartbeat gone from Redis), or fails when that
    -- was its last attempt
    "^%[[^%]]+%]%[%w+%] worker [^ ]+ died while App\\Jobs\\Chaos %(attempt %d+%) ran: it goes "
        .. "back to its queue with the attempt counted once its lease runs out$",
    "^%[[^%]]+%]%[%w+%] App\\Jobs\\Chaos %(attempt %d+%) was running when its worker died "
        .. "%(killed by signal 9 %(Killed%)%); it goes back to its queue with the attempt counted$",
    -- a job in flight through a Redis restart longer than its lease (reruns of the
    -- runs started before a restart are explained below)
    "^%[[^%]]+%]%[%w+%] could not renew the reservation of App\\Jobs\\Chaos %(attempt %d+%) "
        .. "before it expired %(Redis out of reach%): another worker may run it too$",
    "^%[[^%]]+%]%[%w+%] App\\Jobs\\Chaos %(attempt %d+%) was running when its worker died "
        .. "%(killed by signal 9 %(Killed%)%); its last attempt: failed$",
}

local function expected_line(line)
    for _, pattern in ipairs(M.EXPECTED_LINES) do
        if line:match(pattern) then return true end
    end
    return false
end

-- Reads the supervisors' logs (logs: a list of {n =, text =}): the deaths they saw
-- must be our kills (signal 9, a pid in killed); nothing may have exited otherwise,
-- timed out, tripped a sanitizer or logged what a soak does not explain (each such
-- line is a problem(fmt, ...)). Returns the kills seen, the unexpected lines, a text
-- counting the lines by their shape, and the attempts killed workers had started
-- (job id -> {attempt -> true}: started and charged, though the kill may have come
-- before the handler's first line).
function M.check_logs(logs, killed, problem)
    local seen, unexpected = 0, 0
    local counts, started = {}, {}
    for _, s in ipairs(logs) do
        for line in s.text:gmatch("[^\n]+") do
            local job, attempt = line:match("^%[[^%]]+%]%[(%w+)%] worker [^ ]+ died while [^ ]+ %(attempt (%d+)%)")
            if not job then
                job, attempt = line:match("^%[[^%]]+%]%[(%w+)%] [^ ]+ %(attempt (%d+)%) was running when its worker died")
            end
            if job then
                started[job] = started[job] or {}
                started[job][tonumber(attempt)] = true
            end
            local pid, sig = line:match("^%[[^%]]+%] worker %d+ %(pid (%d+)%) was killed by signal (%d+)")
            if pid and tonumber(sig) == 9 and killed[tonumber(pid)] then
                seen = seen + 1
            elseif not expected_line(line) then
                unexpected = unexpected + 1
                if unexpected <= 20 then problem("supervisor %d logged: %s", s.n, line:sub(1, 300)) end
            end
            local key = line:gsub("^%[[^%]]*%]%s*", ""):gsub("%[%w+%]%s*", "")
                :gsub("%d+", "N"):sub(1, 90)
            counts[key] = (counts[key] or 0) + 1
        end
    end
    local t = {}
    for k, v in pairs(counts) do t[#t + 1] = string.format("%7d %s", v, k) end
    table.sort(t)
    return seen, unexpected, table.concat(t, "\n") .. "\n", started
end

-- Reads chaos:trail: each run's start ("s <uuid> <attempt> <pid>", from the handler),
-- its end once its outcome is in Redis ("e <uuid> <attempt> <pid> <outcome> <1 when
-- the handler raised>", from the attempted hook), and the driver's mark written with
-- the SHUTDOWN of each Redis restart ("d <n>": Redis ran nothing between the two, so
-- it is the last entry before the restart). A run without an end was cut short, and
-- so was a run of a job not meant to fail whose handler raised (its Redis call
-- failed). Each must be explained: one of the last `concurrency` runs of a process
-- we killed, or of the runs a process started before a Redis restart (killed: pid ->
-- true; manifest: uuid -> {kind =}; each unexplained run is a problem(fmt, ...);
-- concurrency: the workers' --concurrency, default 1). Returns the runs cut
-- short by job uuid; how many were explained by a kill, by a restart, and not at
-- all; and, by job uuid, the set of the attempts that ran (a start or an end of
-- theirs is in the trail: a handler whose first Redis call failed has only an end).
-- On a cluster the driver puts each failover's "d <n>" where the promoted replica's
-- copy of the trail ended (the cut, spec/chaos/cluster.lua) and after it the entries
-- the dead master took with it, "S ..." for a start (a run cut short by the failover,
-- as its record died with the master) and "E ..." for an end (otherwise as "s", "e").
function M.read_trail(trail, manifest, killed, problem, concurrency)
    concurrency = concurrency or 1
    -- pid -> the trail indexes of its last `concurrency` starts, oldest first
    local open, last_starts, before_restart = {}, {}, {}
    local starts, attempts = {}, {}
    for i, entry in ipairs(trail) do
        local kind, uuid, attempt, pid, _, raised =
            entry:match("^(%a) (%S+) ?(%d*) ?(%d*) ?(%a*) ?(%d*)")
        if kind == "s" or kind == "S" then
            local key = uuid .. " " .. attempt .. " " .. pid
            open[key] = open[key] or {}
            table.insert(open[key], i)
            starts[i] = { uuid = uuid, pid = tonumber(pid) }
            if kind == "S" then before_restart[i] = true end
            local last = last_starts[pid] or {}
            last_starts[pid] = last
            last[#last + 1] = i
            if #last > concurrency then table.remove(last, 1) end
            attempts[uuid] = attempts[uuid] or {}
            attempts[uuid][tonumber(attempt)] = true
        elseif kind == "e" or kind == "E" then
            local list = open[uuid .. " " .. attempt .. " " .. pid]
            attempts[uuid] = attempts[uuid] or {}
            attempts[uuid][tonumber(attempt)] = true
            if list and #list > 0 then
                local job = manifest[uuid]
                starts[table.remove(list, 1)].ended = not (raised == "1" and job and job.kind ~= "fail")
            end
        elseif kind == "d" then
            for _, last in pairs(last_starts) do
                for _, at in ipairs(last) do before_restart[at] = true end
            end
        end
    end
    local killed_last = {}   -- trail index -> true: among its killed process's last starts
    for pid, last in pairs(last_starts) do
        if killed[tonumber(pid)] then
            for _, at in ipairs(last) do killed_last[at] = true end
        end
    end
    local cut, by_kill, by_restart, unexplained = {}, 0, 0, 0
    for i, run in pairs(starts) do
        if not run.ended then
            cut[run.uuid] = (cut[run.uuid] or 0) + 1
            if killed_last[i] then
                by_kill = by_kill + 1
            elseif before_restart[i] then
                by_restart = by_restart + 1
            else
                unexplained = unexplained + 1
                if unexplained <= 10 then
                    problem("run of %s by worker %d (trail entry %d) was cut short, but that worker "
                        .. "was not killed and Redis was not restarted then", run.uuid, run.pid, i)
                end
            end
        end
    end
    return cut, by_kill, by_restart, unexplained, attempts
end

-- The jobs that ran around each failover of a cluster, in the trail as the driver
-- puts it together (see M.read_trail): n -> uuid -> how many runs of that job may
-- have lost a change of it to failover n (each may be run again: a failover that
-- lost two runs of a job, their charges and outcomes, takes it back before both), each process's last `concurrency`
-- starts before "d <n>" (in flight at the cut: the delete, release or fail that
-- ends them may be among the lost writes), the starts of "S" entries after it (begun
-- in the lost writes: their pop may be too), and each process's first `concurrency`
-- starts after those (popped from the dead master just before it died, their start
-- sent after: their pop may be lost). Only these jobs' lost changes can make a job
-- run again; a job whose pop was lost before a worker started it must not run
-- there (luaworker checks, after an outage, that the jobs it reserved ahead are
-- still its own), but it would look the same as the last kind here: the residue
-- this check cannot tell, at most `concurrency` per process and failover, as a
-- restart's budget in the tcp form.
function M.around_failovers(trail, concurrency)
    concurrency = concurrency or 1
    local around, last_starts, after, current = {}, {}, {}, nil
    for _, entry in ipairs(trail) do
        local kind, rest = entry:match("^(%a) (.*)$")
        if kind == "d" then
            current = tonumber(rest)
            around[current], after[current] = {}, {}
            for pid, last in pairs(last_starts) do
                for _, uuid in ipairs(last) do around[current][uuid] = 1 end
                after[current][pid] = concurrency
            end
        elseif kind == "S" then
            -- each run the lost writes held: its charge and its outcome went with them
            local uuid = rest:match("^%S+")
            around[current][uuid] = (around[current][uuid] or 0) + 1
        elseif kind == "s" then
            local uuid, pid = rest:match("^(%S+) %d+ (%d+)")
            for n, left in pairs(after) do
                if (left[pid] or 0) > 0 then
                    around[n][uuid], left[pid] = around[n][uuid] or 1, left[pid] - 1
                end
            end
            local last = last_starts[pid] or {}
            last_starts[pid] = last
            last[#last + 1] = uuid
            if #last > concurrency then table.remove(last, 1) end
        end
    end
    return around
end

-- How many attempts of a job were charged without running: those below the last it
-- ran (ran: attempt -> true), or below the one it failed at (failed_at: the failed
-- record's payload attempts + 1, or nil), that did not run and that no killed
-- worker had started (started: attempt -> true, or nil; see check_logs).
function M.charged_without_run(ran, failed_at, started)
    local last = failed_at and failed_at - 1 or 0
    for attempt in pairs(ran or {}) do
        if attempt > last then last = attempt end
    end
    local missing = 0
    for attempt = 1, last do
        if not (ran and ran[attempt]) and not (started and started[attempt]) then
            missing = missing + 1
        end
    end
    return missing
end

return M
