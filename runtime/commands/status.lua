-- luaworker.commands.status: `luaworker status [connection] [--json]`, every live
-- luaworker worker that works where this one would (the records the workers keep,
-- queue/fleet_records.lua), fleet by fleet (a host and a supervisor): its pid,
-- queues, jobs in flight, jobs done, uptime and memory; with --json one JSON
-- object a worker. A fleet stopped with TERM leaves the list at once, one killed
-- when its heartbeat's TTL lapses.
local cjson = require "cjson"
local host = require "luaworker.host"
local fleet_records = require "luaworker.queue.fleet_records"
local text = require("luaworker.base.log").text

local function uptime(seconds)
    seconds = math.max(0, math.floor(seconds))
    if seconds < 60 then return seconds .. "s" end
    if seconds < 3600 then return string.format("%dm %02ds", seconds / 60, seconds % 60) end
    if seconds < 86400 then return string.format("%dh %02dm", seconds / 3600, seconds % 3600 / 60) end
    return string.format("%dd %02dh", seconds / 86400, seconds % 86400 / 3600)
end

local function by_fleet(a, b)
    if a.host ~= b.host then return tostring(a.host) < tostring(b.host) end
    if a.supervisor ~= b.supervisor then return (tonumber(a.supervisor) or 0) < (tonumber(b.supervisor) or 0) end
    return (tonumber(a.pid) or 0) < (tonumber(b.pid) or 0)
end

local function print_table(records, now)
    local rows = { { "Host", "Supervisor", "PID", "Connection", "Queues", "In flight", "Done", "Uptime",
        "Memory" } }
    for _, r in ipairs(records) do
        rows[#rows + 1] = { text(tostring(r.host)), tostring(r.supervisor), tostring(r.pid),
            text(tostring(r.connection)), text(tostring(r.queues)),
            tostring(r.in_flight) .. "/" .. tostring(r.concurrency), tostring(r.done),
            uptime(now - (tonumber(r.started_at) or now)), string.format("%.1f MB", tonumber(r.rss_mb) or 0) }
    end
    local widths = {}
    for _, row in ipairs(rows) do
        for i, cell in ipairs(row) do widths[i] = math.max(widths[i] or 0, #cell) end
    end
    for _, row in ipairs(rows) do
        local cells = {}
        for i, cell in ipairs(row) do cells[i] = cell .. string.rep(" ", widths[i] - #cell) end
        io.stdout:write((table.concat(cells, "  "):gsub("%s+$", "")), "\n")
    end
    local fleets = {}
    local n = 0
    for _, r in ipairs(records) do
        local key = tostring(r.host) .. "\0" .. tostring(r.supervisor)
        if not fleets[key] then fleets[key], n = true, n + 1 end
    end
    io.stdout:write(string.format("%d worker%s in %d fleet%s\n", #records, #records == 1 and "" or "s",
        n, n == 1 and "" or "s"))
end

-- Runs the command. Returns the exit status.
return function(cli)
    local where, why = fleet_records.place()
    if not where then
        io.stderr:write("luaworker: status: ", why, "\n")
        return 2
    end
    local records = fleet_records.list(where)
    table.sort(records, by_fleet)
    if cli.options.json then
        for _, r in ipairs(records) do io.stdout:write(cjson.encode(r), "\n") end
        return 0
    end
    if #records == 0 then
        io.stdout:write("No luaworker is running here.\n")
        return 0
    end
    print_table(records, host.now())
    return 0
end
