---@meta luaworker.testing
-- luaworker.testing, for LuaLS / EmmyLua: handlers' busted specs (`luaworker
-- test`; docs/handlers.md, "Testing handlers"). Definitions only.
-- spec/unit/types_spec.lua holds it against the runtime.

---A match: a Lua pattern searched in the text, or a function given the thing.
---@alias luaworker.testing.Match string|fun(thing: any): boolean

---A fake job: a luaworker.Job that touches no queue, with assertions.
---@class luaworker.testing.FakeJob: luaworker.Job
---@field dispatched luaworker.testing.Dispatched[] the jobs its run dispatched
---@field raised? table what the handler raised: class, message, text, value
local FakeJob = {}

function FakeJob:assert_deleted() end
function FakeJob:assert_not_deleted() end
---@param delay? number the release's delay, when it matters
function FakeJob:assert_released(delay) end
function FakeJob:assert_not_released() end
---@param match? luaworker.testing.Match on "Class: message", or the error value
function FakeJob:assert_failed(match) end
function FakeJob:assert_not_failed() end
---@param match? luaworker.testing.Match on "Class: message", or the error value
function FakeJob:assert_raised(match) end
function FakeJob:assert_not_raised() end
---@param class? string the model class the handler named
function FakeJob:assert_model_not_found(class) end
---@param class string
---@param fn? fun(job: luaworker.testing.Dispatched): boolean
function FakeJob:assert_dispatched(class, fn) end
---@param class string
---@param fn? fun(job: luaworker.testing.Dispatched): boolean
function FakeJob:assert_not_dispatched(class, fn) end

---A job pushed while a fake ran.
---@class luaworker.testing.Dispatched
---@field class string
---@field queue string
---@field delay number
---@field payload table decoded
---@field command any unserialized

---fake_dispatch()'s fake.
---@class luaworker.testing.DispatchFake
---@field jobs luaworker.testing.Dispatched[]
local DispatchFake = {}

---@param class string
---@param fn? fun(job: luaworker.testing.Dispatched): boolean
function DispatchFake:assert_dispatched(class, fn) end
---@param class string
---@param fn? fun(job: luaworker.testing.Dispatched): boolean
function DispatchFake:assert_not_dispatched(class, fn) end
---@param class string
---@param n integer
function DispatchFake:assert_dispatched_times(class, n) end
function DispatchFake:assert_nothing_dispatched() end

---A request a fake answered.
---@class luaworker.testing.Request
---@field method string
---@field url string
---@field headers table
---@field body? string
---@field timeout number

---fake_http()'s fake.
---@class luaworker.testing.HttpFake
---@field requests luaworker.testing.Request[]
local HttpFake = {}

---The response of the first route matching request's URL; none: raises ConnectionException.
---@param request luaworker.testing.Request
---@return luaworker.HttpResponse
function HttpFake:answer(request) end
---@param match string|fun(request: luaworker.testing.Request): boolean a URL pattern ('*' any text)
function HttpFake:assert_sent(match) end
---@param match string|fun(request: luaworker.testing.Request): boolean
function HttpFake:assert_not_sent(match) end
---@param n integer
function HttpFake:assert_sent_count(n) end
function HttpFake:assert_nothing_sent() end

---@class luaworker.testing.JobOptions
---@field queue? string default "default"
---@field attempts? integer the attempt this run is (default: the payload's attempts + 1)
---@field exceptions? integer exceptions of earlier attempts, for maxExceptions
---@field tries? integer the payload's maxTries
---@field max_exceptions? integer
---@field backoff? string|integer "1,5,10"
---@field timeout? integer
---@field retry_until? integer a Unix time
---@field fail_on_timeout? boolean
---@field delete_when_missing_models? boolean

---@alias luaworker.testing.Route luaworker.HttpResponse|string|table|fun(request: luaworker.testing.Request): (luaworker.HttpResponse|string|table)

---@class luaworker.testing
local testing = {}

---Runs the handlers of dir (before the first job is made or run; default --handlers, else ./handlers).
---@param dir string
function testing.handlers(dir) end

---A fake job of class whose command has properties, written as luaworker.dispatch writes it.
---@param class string
---@param properties? table
---@param options? luaworker.testing.JobOptions
---@return luaworker.testing.FakeJob
function testing.job(class, properties, options) end

---A fake job of the payload text a queue holds (luaworker peek --json's payload).
---@param text string
---@param options? luaworker.testing.JobOptions
---@return luaworker.testing.FakeJob
function testing.payload(text, options) end

---Runs job through its handler as the worker runs it. Returns the job.
---@param job luaworker.testing.FakeJob
---@return luaworker.testing.FakeJob
function testing.run(job) end

---luaworker.dispatch kept, not pushed, until the test ends.
---@return luaworker.testing.DispatchFake
function testing.fake_dispatch() end

---luaworker.http answered by routes (URL pattern -> response), none sent, until the test ends.
---@param routes? table<string, luaworker.testing.Route>|{ [1]: string, [2]: luaworker.testing.Route }[]
---@return luaworker.testing.HttpFake
function testing.fake_http(routes) end

---A response for fake_http: body a string, or a table sent as JSON.
---@param body? string|table
---@param status? integer default 200
---@param headers? table<string, string>
---@return luaworker.HttpResponse
function testing.response(body, status, headers) end

---luaworker.db() on the SQLite file at path (default: a new empty file).
---@param path? string
---@return luaworker.Db
function testing.database(path) end

---Ends the fakes (each busted test ends them too).
function testing.restore() end

return testing
