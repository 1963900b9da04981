-- luaworker.worker.fake_job: a job that touches no queue and no store, as Laravel's
-- FakeJob (withFakeQueueInteractions): a worker/job.lua job whose form keeps what
-- its run does where the worker's forms write it: the delete, the release and its
-- delay, the failure and its exception, the unique locks released, what its batch
-- was told, the limit middleware it passed (each lets it through). `luaworker run`
-- and luaworker.testing run it through worker/process.lua, the worker's own rules
-- (attempts, backoff, maxExceptions, failed(), the hooks).
local cjson = require "cjson"
local jobs = require "luaworker.worker.job"
local values = require "luaworker.base.values"

local M = {}

local decode = cjson.new().decode

-- What the run of job did, kept on it: job.fake = { deleted = bool, released =
-- delay or nil, kept_attempts = true when that release gave its attempt back,
-- failed = exception_info or nil (fail.lua's: class, message, text, value),
-- unique_locks = { key... }, batch = { { "successful" | "failed", id }... },
-- exceptions = the count maxExceptions compares, middleware = { name... }: Laravel's
-- middleware the handler lists, each letting the job through without touching its
-- store }: form_of(options, fake).
local function form_of(options, fake)
    local form = {}
    function form.id(job) return options.id or values.value(job:payload().id) or "fake" end
    function form.attempts(job)
        if options.attempts then return options.attempts end
        return (tonumber(values.value(job:payload().attempts)) or 0) + 1
    end
    function form.delete() fake.deleted = true end
    function form.release(_, delay, keep_attempts)
        fake.released = delay
        fake.kept_attempts = keep_attempts or nil
    end
    function form.start() return true end
    function form.running() end
    function form.finished() end
    form.failed_store = {
        log = function(_, _, _, _, exc) fake.failed = exc end,
    }
    form.cache = {
        count_exception = function()
            fake.exceptions = fake.exceptions + 1
            return fake.exceptions
        end,
        forget_exceptions = function() fake.exceptions = 0 end,
        release_unique_lock = function(key) fake.unique_locks[#fake.unique_locks + 1] = key end,
    }
    form.middleware = {
        pass = function(name) fake.middleware[#fake.middleware + 1] = name end,
    }
    form.batch = {
        record_successful_job = function(id) fake.batch[#fake.batch + 1] = { "successful", id } end,
        record_failed_job = function(id) fake.batch[#fake.batch + 1] = { "failed", id } end,
    }
    return form
end

-- A fake job of payload (the JSON text a queue holds) on queue q. options:
-- attempts (the attempt this run is; default the payload's attempts + 1, as the
-- Redis queue's pop counts them), exceptions (those of earlier attempts, for
-- maxExceptions; default 0), id. Returns the job, or nil and why the payload is
-- not a job's.
function M.new(q, payload_text, options)
    options = options or {}
    local ok, payload = pcall(decode, payload_text)
    if not ok or type(payload) ~= "table" then
        return nil, "not a job's payload: " .. (ok and "not a JSON object" or tostring(payload))
    end
    local fake = { deleted = false, batch = {}, unique_locks = {}, middleware = {},
        exceptions = options.exceptions or 0 }
    local job = jobs.new(q, payload_text, { payload = payload_text }, payload, form_of(options, fake))
    job.fake = fake
    return job
end

return M
