-- luaworker.testing: what a handler's busted spec needs (`luaworker test`), as
-- Laravel's withFakeQueueInteractions, Bus::fake and Http::fake:
--   job(class, properties, options) / payload(text, options): a fake job
--     (worker/fake_job.lua), touching no queue;
--   run(job): the job run through its handler as the worker runs it
--     (worker/process.lua: init.lua's hooks, attempts, backoff, maxExceptions,
--     failed()), its handler loaded from --handlers (else ./handlers) in the
--     handlers' environment, where setting a global raises; the jobs it dispatches
--     are kept (job.dispatched), never pushed. The job then answers
--     assert_deleted(), assert_released(delay), assert_failed(match), ...;
--   fake_http(routes): luaworker.http answered by routes, the requests kept;
--   fake_dispatch(): luaworker.dispatch (and a chain's next job) kept, not pushed;
--   database(path): luaworker.db() on a real SQLite file (default: a new one).
-- A failed assertion raises a message that starts with the assertion's name. The
-- fakes and the database end with each busted test (or restore()).
local cjson = require "cjson"
local host = require "luaworker.host"
local http = require "luaworker.http"
local db = require "luaworker.db"
local values = require "luaworker.base.values"
local settings = require "luaworker.base.settings"
local dispatch = require "luaworker.queue.dispatch"
local handlers = require "luaworker.worker.handlers"
local handler_env = require "luaworker.worker.handler_env"
local output = require "luaworker.worker.output"
local process = require "luaworker.worker.process"
local fake_job = require "luaworker.worker.fake_job"
local call_queued_handler = require "luaworker.worker.call_queued_handler"
local fakes = require "luaworker.testing.fakes"

local M = {}

local ready = false
local chosen_dir  -- handlers(dir)'s

-- The worker's set-up, once: the handler directory, the handlers' environment,
-- init.lua (its hooks fire for the jobs run).
local function set_up()
    if ready then return end
    local options = settings.options
    options.tries = options.tries or 1
    options.effective_backoff = options.effective_backoff or options.backoff or "0"
    local dir = chosen_dir or options.handlers or "./handlers"
    if host.file_kind(dir) ~= "directory" then
        error("luaworker.testing: the handler directory " .. dir .. " does not exist (run the specs "
            .. "where ./handlers is, pass --handlers=DIR to luaworker test, or call "
            .. "testing.handlers(dir) first)", 3)
    end
    handlers.set_dir(dir)
    handlers.add_to_package_path()
    handler_env.install()
    output.configure({ quiet = true })
    ready = true
    local ok, err = handlers.run_init()
    if not ok then error("luaworker.testing: " .. tostring(err), 3) end
end

-- Runs the handlers of dir (before the first job is made or run).
function M.handlers(dir)
    if ready then
        error("testing.handlers(dir): the handlers are already loaded from " .. handlers.dir(), 2)
    end
    chosen_dir = dir
end

-- The payload fields each option of job() sets.
local FIELDS = { tries = "maxTries", max_exceptions = "maxExceptions", backoff = "backoff",
    timeout = "timeout", retry_until = "retryUntil", fail_on_timeout = "failOnTimeout",
    delete_when_missing_models = "deleteWhenMissingModels" }

-- A fake job of the payload text a queue holds. options: queue (default
-- "default"), attempts (the attempt this run is: default the payload's attempts +
-- 1), exceptions (those of earlier attempts, for maxExceptions), and the payload
-- fields of FIELDS.
function M.payload(text, options)
    options = options or {}
    set_up()
    if type(text) ~= "string" then error("testing.payload(text): expected the payload's JSON text", 2) end
    local job, why = fake_job.new(options.queue or "default", text, options)
    if not job then error("testing.payload(text): " .. why, 2) end
    for option, field in pairs(FIELDS) do
        if options[option] ~= nil then job:payload()[field] = options[option] end
    end
    return fakes.job(job)
end

-- A fake job of class whose command has properties (a table, or a value made with
-- luaworker.php), written as luaworker.dispatch writes it (the handler's declared
-- defaults included). options: as payload()'s; tries, backoff ("1,5,10"), timeout,
-- max_exceptions, retry_until (a Unix time), fail_on_timeout,
-- delete_when_missing_models set the payload's fields.
function M.job(class, properties, options)
    if type(class) ~= "string" or class == "" then
        error("testing.job(class, properties, options): expected a class name", 2)
    end
    if properties ~= nil and type(properties) ~= "table" then
        error("testing.job(class, properties, options): properties must be a table", 2)
    end
    set_up()
    local command = dispatch.command(class, properties or {}, handlers.declared(class))
    return M.payload((dispatch.command_payload(command)), options)
end

-- A job pushed while a fake runs: its class, queue, delay (seconds), payload
-- (decoded) and command (unserialized).
local function recorded(q, text, delay)
    local payload = cjson.decode(text)
    local command = call_queued_handler.payload_command(payload)
    return { class = values.value(payload.displayName), queue = q, delay = delay or 0,
        payload = payload, command = command }
end

local dispatch_fake  -- fake_dispatch()'s, while it lasts

local function push_to(list_of)
    return function(q, text, delay)
        local pushed = recorded(q, text, delay)
        for _, list in ipairs(list_of()) do list[#list + 1] = pushed end
        return pushed.payload.id or tostring(host.uuid())
    end
end

-- Runs job through its handler as the worker runs it. Returns the job.
function M.run(job)
    set_up()
    if not fakes.is_job(job) then
        error("testing.run(job): expected a job made by testing.job or testing.payload", 2)
    end
    if job.ran then error("testing.run(job): the job ran already: make another", 2) end
    job.ran = true
    dispatch.fake(push_to(function()
        return dispatch_fake and { job.dispatched, dispatch_fake.jobs } or { job.dispatched }
    end))
    local ok, exc = process.process(job)
    dispatch.fake(dispatch_fake and push_to(function() return { dispatch_fake.jobs } end) or nil)
    job.raised = not ok and exc or nil
    return job
end

-- luaworker.dispatch (and the next jobs of chains) kept in the fake's jobs, not
-- pushed, until the test ends. Returns the fake (fakes.lua's assertions).
function M.fake_dispatch()
    dispatch_fake = fakes.dispatched()
    dispatch.fake(push_to(function() return { dispatch_fake.jobs } end))
    return dispatch_fake
end

-- luaworker.http's requests answered by routes until the test ends, none sent:
-- routes maps a URL pattern ('*' for any text; Laravel's Http::fake patterns,
-- which match the URL's end: "api.example.com/*") to a response ({status=,
-- headers=, body=}, body a string or a table sent as JSON), a body string, or a
-- function(request) returning one. A list of { pattern, response } pairs keeps
-- its order; a table's patterns are tried longest first. A request no route
-- matches raises ConnectionException. Returns the fake (requests, assertions).
function M.fake_http(routes)
    local fake = fakes.http(routes or {})
    http.fake(function(request) return fake:answer(request) end)
    return fake
end

-- A response for fake_http's routes: body (a string, or a table sent as JSON),
-- status (default 200), headers.
M.response = fakes.response

local made = {}  -- the database files database() made, removed by restore()

-- luaworker.db() (and luaworker.db("sqlite")) on the SQLite database file at path
-- (default: a new empty file, removed when the test ends), as DB_CONNECTION=sqlite
-- and DB_DATABASE=path would make it, until the test ends. Returns the db.
function M.database(path)
    if path ~= nil and type(path) ~= "string" then
        error("testing.database(path): expected a file path", 2)
    end
    if not path then
        path = os.tmpname()
        made[#made + 1] = path
    end
    local overrides = settings.env_overrides
    overrides.DB_CONNECTION, overrides.DB_DATABASE = "sqlite", path
    overrides.DB_URL, overrides.DATABASE_URL = "", ""
    db.forget("sqlite")
    return db.connection("sqlite")
end

-- Ends the fakes of fake_http and fake_dispatch, and database()'s.
function M.restore()
    http.fake(nil)
    dispatch.fake(nil)
    dispatch_fake = nil
    if settings.env_overrides.DB_DATABASE then
        db.forget("sqlite")
        settings.env_overrides = {}
    end
    for _, path in ipairs(made) do os.remove(path) end
    made = {}
end

-- under busted, each test ends its fakes
local has_busted, busted = pcall(require, "busted")
if has_busted and type(busted) == "table" and type(busted.subscribe) == "function" then
    busted.subscribe({ "test", "end" }, function()
        M.restore()
        return nil, true
    end)
end

return M
