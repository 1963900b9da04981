-- luaworker.commands.run: `luaworker run PAYLOAD`: one job run through its handler
-- as the worker runs it (worker/process.lua: init.lua's hooks, the attempt rules,
-- backoff, maxExceptions, failed()), as a fake job (worker/fake_job.lua) that
-- touches no queue, no failed-job store and no cache: the jobs it dispatches are
-- kept, not pushed; with --fake-http its HTTP requests are answered 200 without
-- being sent. luaworker.db and luaworker.http are otherwise the real ones. Says
-- what the worker would have done; exit 0 when the handler returned, 1 when it
-- raised, 2 on bad input.
local cjson = require "cjson"
local settings = require "luaworker.base.settings"
local values = require "luaworker.base.values"
local host = require "luaworker.host"
local http = require "luaworker.http"
local dispatch = require "luaworker.queue.dispatch"
local handlers = require "luaworker.worker.handlers"
local handler_env = require "luaworker.worker.handler_env"
local output = require "luaworker.worker.output"
local process = require "luaworker.worker.process"
local fake_job = require "luaworker.worker.fake_job"

local text = output.text

local function complain(...)
    io.stderr:write("luaworker: run: ", ...)
    io.stderr:write("\n")
    return 2
end

-- The payload's text: the file named, or stdin for "-". Returns text, or nil, why.
local function read_payload(name)
    if name == "-" then return io.stdin:read("*a") end
    if host.file_kind(name) ~= "file" then return nil, name .. ": no such file" end
    local f, err = io.open(name, "rb")
    if not f then return nil, err end
    local t = f:read("*a")
    f:close()
    return t
end

-- The class and the queue of a payload the run dispatched.
local function described(q, payload_text, delay)
    local ok, payload = pcall(cjson.decode, payload_text)
    local class = ok and type(payload) == "table" and (values.value(payload.displayName)
        or values.value(payload.job)) or "?"
    return { class = class, queue = q, delay = delay or 0, payload = payload_text }
end

-- What the worker would have done with job, in words; and as a word for --json.
local function outcome_of(job)
    local fake = job.fake
    if fake.failed then
        return "failed: " .. text(fake.failed.class .. ": " .. fake.failed.message), "failed"
    elseif fake.released then
        return string.format("released: available again in %d s (attempt %s)", fake.released,
            tostring(job:attempts())), "released"
    elseif fake.deleted then
        return "deleted", "deleted"
    end
    return "left reserved: it would run again after retry_after", "reserved"
end

-- A list as JSON (cjson writes an empty table as {}).
local function json_list(list)
    local parts = {}
    for i, v in ipairs(list) do parts[i] = cjson.encode(v) end
    return "[" .. table.concat(parts, ",") .. "]"
end

local function exception_json(exc)
    return exc and cjson.encode({ class = exc.class, message = exc.message }) or "null"
end

local function report(job, ok, exc, dispatched, requests, as_json)
    local said, word = outcome_of(job)
    if as_json then
        local fake = job.fake
        io.stdout:write('{"job":', cjson.encode(job:name() or cjson.null),
            ',"attempts":', cjson.encode(job:attempts()), ',"outcome":', cjson.encode(word),
            ',"raised":', exception_json(not ok and exc), ',"failed":', exception_json(fake.failed),
            ',"released_delay":', cjson.encode(fake.released or cjson.null),
            ',"dispatched":', json_list(dispatched), ',"http":', json_list(requests),
            ',"unique_locks_released":', json_list(fake.unique_locks), ',"batch":', json_list(fake.batch),
            ',"middleware_passed":', json_list(fake.middleware), "}\n")
        return
    end
    io.stdout:write(text(job:name() or "?"), " (attempt ", tostring(job:attempts()), "): ")
    if not ok then io.stdout:write("raised ", text(exc.class .. ": " .. exc.message), "; ") end
    io.stdout:write(said, "\n")
    for _, d in ipairs(dispatched) do
        io.stdout:write("  would dispatch ", text(d.class), " onto queue ", text(d.queue),
            d.delay > 0 and string.format(", due in %d s", d.delay) or "", "\n")
    end
    for _, r in ipairs(requests) do
        io.stdout:write("  sent ", r.method, " ", text(r.url), " (faked: 200, empty body)\n")
    end
    for _, key in ipairs(job.fake.unique_locks) do
        io.stdout:write("  would release the unique lock ", text(key), "\n")
    end
    for _, b in ipairs(job.fake.batch) do
        io.stdout:write("  would count a ", b[1], " job in batch ", text(b[2]), "\n")
    end
    for _, name in ipairs(job.fake.middleware) do
        io.stdout:write("  passed ", name, " without checking its limit (a run touches no store)\n")
    end
end

return function(cli, config)
    local options = cli.options
    local payload_text, why = read_payload(cli.args[1])
    if not payload_text then return complain(why) end
    options.effective_backoff = options.backoff
    settings.queues = { options.queue or config.default_queue }
    output.configure({ quiet = true })
    handlers.set_dir(options.handlers)
    if host.file_kind(handlers.dir()) ~= "directory" then
        return complain("--handlers=", options.handlers, ": no such directory")
    end
    local broken = handlers.uncompilable()
    if broken then return complain("handlers that do not compile: ", broken) end
    handlers.add_to_package_path()
    handler_env.install()
    local job, bad = fake_job.new(settings.queues[1], payload_text, { attempts = options.attempts })
    if not job then return complain(cli.args[1], ": ", bad) end
    local inited, init_err = handlers.run_init()
    if not inited then return complain(init_err) end
    local unusable = handlers.unusable()
    if unusable then return complain("handlers that cannot handle jobs: ", unusable) end

    local dispatched, requests = {}, {}
    dispatch.fake(function(q, payload, delay)
        dispatched[#dispatched + 1] = described(q, payload, delay)
        return "fake-" .. #dispatched
    end)
    if options.fake_http then
        http.fake(function(request)
            requests[#requests + 1] = { method = request.method, url = http.redact(request.url) }
            return { status = 200, headers = {}, body = "" }
        end)
    end
    local ok, exc = process.process(job)
    dispatch.fake(nil)
    http.fake(nil)
    report(job, ok, exc, dispatched, requests, options.json)
    return ok and 0 or 1
end
