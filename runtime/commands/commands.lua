-- luaworker.commands: the operator commands (failed, retry, forget, flush, push,
-- size, clear, restart), with Laravel's artisan wording where artisan has one.
local cjson = require "cjson"
local host = require "luaworker.host"
local redis = require "luaworker.redis"
local queue = require "luaworker.queue"
local dispatch = require "luaworker.dispatch"
local text = require("luaworker.output").text

local M = {}

local function say(...)
    io.stdout:write(...)
    io.stdout:write("\n")
end

local function complain(...)
    io.stderr:write("luaworker: ", ...)
    io.stderr:write("\n")
end

local function queue_name(cli, config)
    return cli.options.queue or config.default_queue
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

function M.failed()
    local records = queue.failed_records()
    if #records == 0 then
        say("No failed jobs!")
        return 0
    end
    local rows = { { "ID", "Connection", "Queue", "Class", "Failed At" } }
    for _, r in ipairs(records) do
        -- payload values: their control characters escaped (output.text)
        rows[#rows + 1] = { text(r.id), text(r.connection or ""), text(r.queue or ""),
            text(class_of(r.payload or "")), text(r.failed_at or "") }
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
    local ids = cli.args
    if #ids == 1 and ids[1] == "all" and cli.literal_from ~= 1 then
        ids = {}
        for _, r in ipairs(queue.failed_records()) do
            if not cli.options.queue or r.queue == cli.options.queue then ids[#ids + 1] = r.id end
        end
    end
    local status = 0
    for _, id in ipairs(ids) do
        local record = queue.failed_record(id)
        if not record then
            complain("Unable to find failed job with ID [", id, "].")
            status = 1
        else
            local ok, err = pcall(queue.retry, id, record.queue or "default", host.now())
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
    if queue.forget(cli.args[1]) then
        say("Failed job deleted successfully!")
        return 0
    end
    complain("No failed job matches the given ID.")
    return 1
end

function M.flush()
    queue.flush()
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

function M.push(cli, config)
    local name, data_text = cli.args[1], cli.args[2]
    local o = cli.options
    local class, method = name:match("^(.*)@(.*)$")
    if not php_class_name(class or name) or (method and not method:match(IDENTIFIER)) then
        complain("push: '", text(name), "' is not a job class: expected a PHP class name such as "
            .. "App\\Jobs\\SendEmail, or Class@method for a string job")
        return 2
    end
    local data = {}
    if data_text then
        local ok, decoded = pcall(cjson.decode, data_text)
        if not ok or type(decoded) ~= "table" then
            complain("push: json-data must be a JSON object or array, got: ", data_text)
            return 2
        end
        data = decoded
    end
    local q = queue_name(cli, config)
    local id
    if name:find("@", 1, true) then
        local backoff = o.backoff
        id = dispatch.push_string_job(name, data_text or "[]", q, o.delay, {
            maxTries = o.tries, maxExceptions = o.max_exceptions, timeout = o.timeout,
            backoff = backoff,
        })
    else
        for k in pairs(data) do
            if type(k) ~= "string" then
                complain("push: json-data for a job class must be a JSON object of properties")
                return 2
            end
        end
        -- the options are the job class's properties, as in a PHP job class
        data.tries, data.maxExceptions, data.timeout = o.tries, o.max_exceptions, o.timeout
        if o.backoff then
            local list = {}
            for n in o.backoff:gmatch("%d+") do list[#list + 1] = tonumber(n) end
            data.backoff = #list == 1 and list[1] or list
        end
        if o.retry_until then data.retryUntil = host.now() + o.retry_until end
        if o.delay > 0 then data.delay = o.delay end
        local ok, result = pcall(dispatch.push_command, dispatch.command(name, data), q, o.delay)
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
    local q = queue_name(cli, config)
    local total, pending, delayed, reserved = queue.size(q)
    say(string.format("%s: %d pending, %d delayed, %d reserved (%d in all)", q, pending, delayed,
        reserved, total))
    return 0
end

function M.clear(cli, config)
    local q = queue_name(cli, config)
    local n = queue.clear(q)
    say(string.format("Cleared %d jobs from the [%s] queue", n, q))
    return 0
end

function M.restart(_, config)
    redis.call("cache", "SET", config.prefix .. config.cache_prefix .. "illuminate:queue:restart",
        host.now())
    say("Broadcasting queue restart signal.")
    return 0
end

return M
