-- luaworker.commands: the operator commands (failed, retry, forget, flush, push,
-- size, clear, notify, restart), with Laravel's artisan wording where artisan has one.
local cjson = require "cjson"
local host = require "luaworker.host"
local cache = require "luaworker.queue.cache"
local queue = require "luaworker.queue"
local database_queue = require "luaworker.queue.database_queue"
local database_notifications = require "luaworker.queue.database_notifications"
local failed_jobs = require "luaworker.queue.failed_jobs"
local dispatch = require "luaworker.queue.dispatch"
local text = require("luaworker.base.log").text
local php = require "luaworker.php"
local php_json = require "luaworker.php.json"
local json = require "luaworker.base.json"
local dump = require "luaworker.base.dump"
local call_queued_handler = require "luaworker.worker.call_queued_handler"
local settings = require "luaworker.base.settings"

local M = {}

local function say(...)
    io.stdout:write(...)
    io.stdout:write("\n")
end

local function complain(...)
    io.stderr:write("luaworker: ", ...)
    io.stderr:write("\n")
end

-- The connection a size or clear names (its argument, else QUEUE_CONNECTION).
local function connection_of(cli, config)
    return cli.args[1] or config.connection_name
end

local function queue_name(cli, config, connection)
    if cli.options.queue then return cli.options.queue end
    if (connection or config.connection_name) == "database" then
        return database_queue.settings().queue
    end
    return config.default_queue
end

-- Says why queue q of connection cannot be used (a Redis Cluster's queue without
-- a hash tag, see queue.cluster_problem); returns whether it can.
local function usable(q, connection)
    local problem = connection ~= "database" and queue.cluster_problem(q)
    if problem then complain(problem) end
    return not problem
end

-- The operations of the connection named: Laravel's database queue for "database"
-- (the jobs table, queue/database_queue.lua), else its Redis queue.
local function queue_of(connection)
    if connection == "database" then return database_queue.default() end
    return {
        size = function(_, q) return queue.size(q) end,
        clear = function(_, q) return queue.clear(q) end,
    }
end

-- The job class of a failed record, as queue:failed shows it.
local function class_of(payload)
    local ok, decoded = pcall(cjson.decode, payload)
    if not ok or type(decoded) ~= "table" then return "(not JSON)" end
    if type(decoded.displayName) == "string" then return decoded.displayName end
    local data = decoded.data
    local command = type(data) == "table" and data.command
    if type(command) == "string" then
        local class = command:match('^O:%d+:"([^"]*)"')
        if class then return class end
    end
    return tostring(decoded.job)
end

-- The failed-job store the settings choose, or nil after saying why there is none
-- (the caller ends with status 2: bad input).
local function store()
    local ok, chosen = pcall(failed_jobs.store)
    if ok then return chosen end
    complain(tostring(chosen))
    return nil
end

-- The first line of a failed job's exception, at most EXCEPTION_WIDTH characters.
local EXCEPTION_WIDTH = 60

local function exception_line(exception)
    local line = (exception or ""):match("^[^\n]*")
    if #line > EXCEPTION_WIDTH then line = line:sub(1, EXCEPTION_WIDTH - 3) .. "..." end
    return text(line)
end

-- The command of a failed record's payload (a PHP value, or a string job's data),
-- or nil and why it cannot be read.
local function command_of(payload)
    local ok, decoded = pcall(cjson.decode, payload or "")
    if not ok or type(decoded) ~= "table" then return nil, "the payload is not a JSON object" end
    return call_queued_handler.payload_command(decoded)
end

-- failed [show] <id>: one failed job, whole: its exception (the trace in it), its
-- payload, its command decoded; with --json one JSON object.
local function show_failed(chosen, id, as_json)
    local r = chosen.find(id)
    if not r then
        complain("failed: no failed job with id ", text(id))
        return 1
    end
    local command, problem = command_of(r.payload)
    if as_json then
        say(json.encode({ id = r.id, connection = r.connection, queue = r.queue,
            class = class_of(r.payload or ""), failed_at = r.failed_at, exception = r.exception,
            payload = r.payload, command = command, problem = problem }))
        return 0
    end
    say("ID:         ", text(r.id))
    say("Connection: ", text(r.connection or ""))
    say("Queue:      ", text(r.queue or ""))
    say("Class:      ", text(class_of(r.payload or "")))
    say("Failed At:  ", text(r.failed_at or ""))
    say("Exception:")
    -- line by line, each line's control characters escaped
    for line in ((r.exception or "") .. "\n"):gmatch("([^\n]*)\n") do say("  ", text(line)) end
    say("Payload:")
    say("  ", text(r.payload or ""))
    say("Command:")
    if command ~= nil then
        for line in (dump(command) .. "\n"):gmatch("([^\n]*)\n") do say("  ", line) end
    else
        say("  (", text(problem), ")")
    end
    return 0
end

function M.failed(cli)
    local chosen = store()
    if not chosen then return 2 end
    local id = cli.args[1]
    if id == "show" and cli.literal_from ~= 1 then
        id = cli.args[2]
        if not id then
            complain("failed show: expected the id of a failed job (usage: luaworker failed show <id>)")
            return 2
        end
    elseif cli.args[2] then
        complain("failed: unexpected argument '", text(cli.args[2]), "' (usage: luaworker failed [show] [id])")
        return 2
    end
    if id then return show_failed(chosen, id, cli.options.json) end
    local records = chosen.all()
    if cli.options.json then
        for _, r in ipairs(records) do
            say(json.encode({ id = r.id, connection = r.connection, queue = r.queue,
                class = class_of(r.payload or ""), failed_at = r.failed_at, exception = r.exception }))
        end
        return 0
    end
    if #records == 0 then
        say("No failed jobs!")
        return 0
    end
    local rows = { { "ID", "Connection", "Queue", "Class", "Failed At", "Exception" } }
    for _, r in ipairs(records) do
        -- payload values: their control characters escaped (output.text)
        rows[#rows + 1] = { text(r.id), text(r.connection or ""), text(r.queue or ""),
            text(class_of(r.payload or "")), text(r.failed_at or ""), exception_line(r.exception) }
    end
    local widths = {}
    for _, row in ipairs(rows) do
        for i, cell in ipairs(row) do
            widths[i] = math.max(widths[i] or 0, #cell)
        end
    end
    local rule = {}
    for i, w in ipairs(widths) do rule[i] = string.rep("-", w + 2) end
    rule = "+" .. table.concat(rule, "+") .. "+"
    say(rule)
    for n, row in ipairs(rows) do
        local cells = {}
        for i, cell in ipairs(row) do cells[i] = " " .. cell .. string.rep(" ", widths[i] - #cell) .. " " end
        say("|" .. table.concat(cells, "|") .. "|")
        if n == 1 then say(rule) end
    end
    say(rule)
    return 0
end

function M.retry(cli)
    local ids, chosen = cli.args, store()
    if not chosen then return 2 end
    if #ids == 1 and ids[1] == "all" and cli.literal_from ~= 1 then
        ids = {}
        for _, r in ipairs(chosen.all()) do
            if not cli.options.queue or r.queue == cli.options.queue then ids[#ids + 1] = r.id end
        end
    end
    local status = 0
    for _, id in ipairs(ids) do
        local record = chosen.find(id)
        if not record then
            complain("Unable to find failed job with ID [", id, "].")
            status = 1
        else
            local ok, err = pcall(chosen.retry, id, record, host.now())
            if ok and err then
                say("The failed job [", id, "] has been pushed back onto the queue!")
            else
                complain(tostring(err))
                status = 1
            end
        end
    end
    return status
end

function M.forget(cli)
    local chosen = store()
    if not chosen then return 2 end
    if chosen.forget(cli.args[1]) then
        say("Failed job deleted successfully!")
        return 0
    end
    complain("No failed job matches the given ID.")
    return 1
end

function M.flush()
    local chosen = store()
    if not chosen then return 2 end
    chosen.flush()
    say("All failed jobs deleted successfully!")
    return 0
end

-- Whether s is a PHP class name: identifiers joined by backslashes (one may lead).
local IDENTIFIER = "^[%a_\128-\255][%w_\128-\255]*$"
local function php_class_name(s)
    s = s:gsub("^\\", "")
    if s == "" then return false end
    for segment in (s .. "\\"):gmatch("(.-)\\") do
        if not segment:match(IDENTIFIER) then return false end
    end
    return true
end

-- The job object push makes: the JSON's properties in its order (as PHP's
-- json_decode reads them: php_json), the options as properties (--tries,
-- --backoff...: over the JSON's), then Queueable's with their defaults (--delay as
-- its delay), as PHP serializes a job class's own properties before its trait's.
local function job_object(class, members, at, o)
    local function set(name, serialized) php_json.put(members, at, name, serialized) end
    local function int(n) return string.format("i:%d;", n) end
    if o.tries then set("tries", int(o.tries)) end
    if o.max_exceptions then set("maxExceptions", int(o.max_exceptions)) end
    if o.timeout then set("timeout", int(o.timeout)) end
    if o.backoff then
        local seconds, list = {}, {}
        for n in o.backoff:gmatch("%d+") do seconds[#seconds + 1] = tonumber(n) end
        for i, n in ipairs(seconds) do list[i] = int(i - 1) .. int(n) end
        set("backoff", #seconds == 1 and int(seconds[1])
            or "a:" .. #seconds .. ":{" .. table.concat(list) .. "}")
    end
    if o.retry_until then set("retryUntil", int(host.now() + o.retry_until)) end
    if o.delay > 0 then set("delay", int(o.delay)) end
    for _, k in ipairs(dispatch.QUEUEABLE) do
        if not at[k] then set(k, (k == "middleware" or k == "chained") and "a:0:{}" or "N;") end
    end
    local parts = {}
    for n, m in ipairs(members) do parts[n] = php_json.string(m[1]) .. m[2] end
    return php.unserialize(string.format('O:%d:"%s":%d:{%s}', #class, class, #members,
        table.concat(parts)))
end

function M.push(cli, config)
    local name, data_text = cli.args[1], cli.args[2]
    local o = cli.options
    local class, method = name:match("^(.*)@(.*)$")
    if not php_class_name(class or name) or (method and not method:match(IDENTIFIER)) then
        complain("push: '", text(name), "' is not a job class: expected a PHP class name such as "
            .. "App\\Jobs\\SendEmail, or Class@method for a string job")
        return 2
    end
    local q = queue_name(cli, config)
    if not usable(q, config.connection_name) then return 2 end
    local id
    if method then
        if data_text then
            local ok, decoded = pcall(cjson.decode, data_text)
            if not ok or type(decoded) ~= "table" then
                complain("push: json-data must be a JSON object or array, got: ", text(data_text))
                return 2
            end
        end
        id = dispatch.push_string_job(name, data_text or "[]", q, o.delay, {
            maxTries = o.tries, maxExceptions = o.max_exceptions, timeout = o.timeout,
            backoff = o.backoff,
        })
    else
        local members, at = php_json.object_members(data_text or "{}")
        if not members then
            local why = at
            complain("push: json-data for a job class must be a JSON object of its properties (",
                why, "), got: ", text(data_text))
            return 2
        end
        local ok, result = pcall(function()
            return dispatch.push_command(dispatch.command(name, job_object(name:gsub("^\\", ""),
                members, at, o)), q, o.delay)
        end)
        if not ok then
            complain("push: ", tostring(result))
            return 2
        end
        id = result
    end
    say(id)
    return 0
end

function M.size(cli, config)
    local connection = connection_of(cli, config)
    local q = queue_name(cli, config, connection)
    if not usable(q, connection) then return 2 end
    local total, pending, delayed, reserved = queue_of(connection):size(q)
    say(string.format("%s: %d pending, %d delayed, %d reserved (%d in all)", q, pending, delayed,
        reserved, total))
    return 0
end

function M.clear(cli, config)
    local connection = connection_of(cli, config)
    local q = queue_name(cli, config, connection)
    if not usable(q, connection) then return 2 end
    local n = queue_of(connection):clear(q)
    say(string.format("Cleared %d jobs from the [%s] queue", n, q))
    return 0
end

-- peek [connection]: the jobs of a queue, taking none (luaworker.commands.peek).
function M.peek(cli, config)
    local connection = connection_of(cli, config)
    local q = queue_name(cli, config, connection)
    if not usable(q, connection) then return 2 end
    return require("luaworker.commands.peek").run(cli, connection, q)
end

-- status [connection]: the live workers (luaworker.commands.status).
function M.status(cli, config)
    local connection = connection_of(cli, config)
    if connection ~= config.connection_name then settings.connection_name = connection end
    return require("luaworker.commands.status")(cli, config)
end

-- run PAYLOAD: one job through its handler, touching no queue (luaworker.commands.run).
function M.run(cli, config)
    return require("luaworker.commands.run")(cli, config)
end

-- make CLASS: a handler and its spec (luaworker.commands.make).
function M.make(cli, config)
    return require("luaworker.commands.make")(cli, config)
end

-- notify install | remove: the database queue's LISTEN/NOTIFY trigger on PostgreSQL
-- (queue/database_notifications.lua), saying what it added or took away.
function M.notify(cli)
    local what = cli.args[1]
    if what ~= "install" and what ~= "remove" then
        complain("notify: expected install or remove, got '", what, "'")
        return 2
    end
    local ok, lines = pcall(function() return database_notifications[what](database_queue.default()) end)
    if not ok then
        -- 2 for a connection that is not PostgreSQL's (bad input), 1 for the database's error
        complain("notify ", what, ": ", tostring(type(lines) == "table" and lines.message or lines))
        return type(lines) == "table" and 1 or 2
    end
    for _, line in ipairs(lines) do say(line) end
    return 0
end

function M.restart()
    if not cache.signal_restart(host.now()) then
        complain("no replica of the cluster's master confirmed the restart signal within a second: "
            .. "a failover of that master now would lose it (run restart again after one)")
    end
    say("Broadcasting queue restart signal.")
    return 0
end

return M
