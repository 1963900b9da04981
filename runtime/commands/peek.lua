-- luaworker.commands.peek: `luaworker peek [connection] [--queue=Q] [--limit=N]
-- [--class=NAME] [--json]`, the jobs of a queue without taking or changing any: the
-- waiting ones oldest first, then the delayed ones by when they are due, then the
-- reserved ones by when their reservation expires, at most --limit in all, of --class only when given (displayName,
-- else data.commandName). Each with its state, id, class, attempts, when pushed (a
-- database row's created_at, a Laravel 12.11+ payload's createdAt), when due, and its
-- command as Lua sees it (luaworker.dump; with --json one JSON object a job, the
-- command by luaworker.json, the payload as the queue holds it, for `luaworker run`). A payload or a command that cannot be read is shown
-- as such, never raised. On Redis and on the database queue.
local cjson = require "cjson"
local queue = require "luaworker.queue"
local database_queue = require "luaworker.queue.database_queue"
local call_queued_handler = require "luaworker.worker.call_queued_handler"
local dump = require "luaworker.base.dump"
local json = require "luaworker.base.json"
local text = require("luaworker.base.log").text
local host = require "luaworker.host"

local STATES = { "pending", "delayed", "reserved" }
local CHUNK = 100

-- The jobs of state, from the offset-th on: {id =, payload =, attempts =, due =,
-- pushed =} (database rows), or {payload =, due =} (Redis).
local function source(connection, q, now)
    if connection == "database" then
        local jobs = database_queue.default()
        return function(state, offset)
            local rows = jobs:peek(q, state, offset, CHUNK, now)
            for _, row in ipairs(rows) do row.pushed = row.created_at end
            return rows
        end
    end
    return function(state, offset) return queue.peek(q, state, offset, CHUNK) end
end

local function class_of(decoded)
    if type(decoded) ~= "table" then return nil end
    if type(decoded.displayName) == "string" then return decoded.displayName end
    local data = decoded.data
    return type(data) == "table" and type(data.commandName) == "string" and data.commandName or nil
end

local function time_text(t)
    return t and os.date("%Y-%m-%d %H:%M:%S", math.floor(t)) or nil
end

-- A job's payload decoded (nil when it is not a JSON object) and its class.
local function read(job)
    local ok, decoded = pcall(cjson.decode, job.payload)
    if not ok or type(decoded) ~= "table" then decoded = nil end
    return decoded, class_of(decoded)
end

-- Whether a job of class is one --class names (a leading backslash aside).
local function of_class(class, wanted)
    return not wanted or (class or ""):gsub("^\\", "") == wanted:gsub("^\\", "")
end

-- What peek shows of one job.
local function shown(state, job, decoded, class)
    local out = { state = state, class = class, payload = decoded == nil and job.payload or nil,
        raw = job.payload }
    if decoded then
        out.id = job.id or (type(decoded.uuid) == "string" and decoded.uuid) or decoded.id
        out.attempts = job.attempts or tonumber(decoded.attempts)
        out.pushed = job.pushed or tonumber(decoded.createdAt)
        local command, err = call_queued_handler.payload_command(decoded)
        if command == nil then out.problem = err else out.command = command end
    else
        out.id, out.problem = job.id, "the payload is not a JSON object"
    end
    out.due = state ~= "pending" and job.due or nil  -- a waiting job is due already
    return out
end

local function print_text(job)
    local head = { job.state, text(tostring(job.id or "?")), text(job.class or "(no class)") }
    if job.attempts then head[#head + 1] = "attempts " .. job.attempts end
    if job.pushed then head[#head + 1] = "pushed " .. time_text(job.pushed) end
    if job.due then
        head[#head + 1] = (job.state == "reserved" and "reserved until " or "due ") .. time_text(job.due)
    end
    io.stdout:write(table.concat(head, "  "), "\n")
    if job.command ~= nil then
        io.stdout:write(dump(job.command), "\n")
    elseif job.problem then
        io.stdout:write("(", text(job.problem), ")\n")
    end
    if job.payload then io.stdout:write(text(job.payload), "\n") end
    io.stdout:write("\n")
end

local function print_json(job)
    io.stdout:write(json.encode({ state = job.state, id = job.id, class = job.class,
        attempts = job.attempts, pushed_at = time_text(job.pushed),
        [job.state == "reserved" and "reserved_until" or "due_at"] = time_text(job.due),
        command = job.command, problem = job.problem, payload = job.raw }), "\n")
end

local M = {}

-- Calls fn(state, job, decoded, its_class) for each job of queue q of connection
-- (of class only, when given) in peek's order, until fn returns true.
local function each_job(connection, q, class, fn)
    local fetch = source(connection, q, host.now())
    for _, state in ipairs(STATES) do
        local offset = 0
        while true do
            local jobs = fetch(state, offset)
            for _, job in ipairs(jobs) do
                local decoded, its_class = read(job)
                if of_class(its_class, class) and fn(state, job, decoded, its_class) then return end
            end
            if #jobs < CHUNK then break end
            offset = offset + CHUNK
        end
    end
end

-- The command of the first job of class on queue q of connection (waiting, then
-- delayed, then reserved), or nil and why there is none.
function M.first(connection, q, class)
    local found
    each_job(connection, q, class, function(_, _, decoded)
        found = decoded
        return true
    end)
    if not found then
        return nil, "no job of " .. text(class) .. " on queue " .. text(q) .. " (waiting, delayed or reserved)"
    end
    local command, err = call_queued_handler.payload_command(found)
    if command ~= nil then return command end
    return nil, "the command of " .. text(class) .. "'s job on queue " .. text(q) .. " cannot be read: "
        .. text(err)
end

-- Runs the command for queue q of connection. Returns the exit status.
function M.run(cli, connection, q)
    local o = cli.options
    local limit, class, n = tonumber(o.limit) or 10, o.class, 0
    each_job(connection, q, class, function(state, job, decoded, its_class)
        n = n + 1
        local s = shown(state, job, decoded, its_class)
        if o.json then print_json(s) else print_text(s) end
        return n >= limit
    end)
    if n == 0 and not o.json then
        io.stdout:write("No jobs", class and " of " .. text(class) or "", " in the [", text(q), "] queue\n")
    end
    return 0
end

return M
