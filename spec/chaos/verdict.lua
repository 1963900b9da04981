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
    -- the job a killed worker had started: it stays reserved (its successor knows it
    -- from the supervisor; a worker that found the heartbeat gone from Redis), or
    -- fails when that was its last attempt
    "^%[[^%]]+%]%[%w+%] worker [^ ]+ died while App\\Jobs\\Chaos %(attempt %d+%) ran: it stays "
        .. "reserved until retry_after, by Laravel's rules$",
    "^%[[^%]]+%]%[%w+%] App\\Jobs\\Chaos %(attempt %d+%) was running when its worker died "
        .. "%(killed by signal 9 %(Killed%)%); it stays reserved until retry_after, by Laravel's rules$",
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
function M.read_trail(trail, manifest, killed, problem, concurrency)
    concurrency = concurrency or 1
    -- pid -> the trail indexes of its last `concurrency` starts, oldest first
    local open, last_starts, before_restart = {}, {}, {}
    local starts, attempts = {}, {}
    for i, entry in ipairs(trail) do
        local kind, uuid, attempt, pid, _, raised =
            entry:match("^(%a) (%S+) ?(%d*) ?(%d*) ?(%a*) ?(%d*)")
        if kind == "s" then
            local key = uuid .. " " .. attempt .. " " .. pid
            open[key] = open[key] or {}
            table.insert(open[key], i)
            starts[i] = { uuid = uuid, pid = tonumber(pid) }
            local last = last_starts[pid] or {}
            last_starts[pid] = last
            last[#last + 1] = i
            if #last > concurrency then table.remove(last, 1) end
            attempts[uuid] = attempts[uuid] or {}
            attempts[uuid][tonumber(attempt)] = true
        elseif kind == "e" then
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
