-- luaworker.testing.fakes: the assertions of luaworker.testing's fakes, each
-- raising a message that starts with its own name and says what happened instead:
--   a fake job (fake_job.lua's, once run): assert_deleted, assert_not_deleted,
--     assert_released(delay), assert_not_released, assert_failed(match),
--     assert_not_failed, assert_raised(match), assert_not_raised,
--     assert_model_not_found(class), assert_dispatched(class, fn) and
--     assert_not_dispatched(class) (what it dispatched);
--   dispatched(): assert_dispatched(class, fn), assert_not_dispatched(class),
--     assert_dispatched_times(class, n), assert_nothing_dispatched();
--   http(routes): answer(request), assert_sent(match), assert_not_sent(match),
--     assert_sent_count(n), assert_nothing_sent().
-- A match is a Lua pattern searched in the text (a class, a message, a URL) or a
-- function given the thing, returning true when it is the one.
local cjson = require "cjson"
local values = require "luaworker.base.values"
local http = require "luaworker.http"

local M = {}

-- busted's fail (a failure, not an error, in its report), when busted runs
local has_busted, busted = pcall(require, "busted")
local busted_fail = has_busted and type(busted) == "table" and busted.fail

-- Raises the failure of assertion name, at the line of the spec that called it
-- (depth: the calls between the assertion and this, default 0).
local function fail(name, message, depth)
    local level = 3 + (depth or 0)
    if busted_fail then busted_fail(name .. ": " .. message, level) end
    error(name .. ": " .. message, level)
end

-- Whether match (a Lua pattern or a function, see above) takes text (or thing).
local function matches(match, text, thing)
    if match == nil then return true end
    if type(match) == "function" then return match(thing) == true end
    return tostring(text):find(match) ~= nil
end

-- What the run of a fake job did, in words.
local function outcome(job)
    local fake = job.fake
    if not job.ran then return "the job has not run (testing.run(job))" end
    local parts = {}
    if job.raised then parts[#parts + 1] = "it raised " .. job.raised.text:match("[^\n]*") end
    if fake.failed then
        parts[#parts + 1] = "it failed with " .. fake.failed.class .. ": " .. fake.failed.message
    elseif fake.released then
        parts[#parts + 1] = "it was released with a delay of " .. fake.released .. " s"
    elseif fake.deleted then
        parts[#parts + 1] = "it was deleted"
    else
        parts[#parts + 1] = "it was neither deleted, released nor failed"
    end
    return table.concat(parts, "; ")
end

local function ran(job, name)
    if not job.ran then fail(name, "the job has not run (testing.run(job))", 1) end
end

-- The assertions a fake job has beside worker/job.lua's methods.
local JobAssertions = {}

function JobAssertions:assert_deleted()
    ran(self, "assert_deleted")
    if not self.fake.deleted or self.fake.failed then
        fail("assert_deleted", "the job was not deleted: " .. outcome(self))
    end
end

function JobAssertions:assert_not_deleted()
    ran(self, "assert_not_deleted")
    if self.fake.deleted and not self.fake.failed then
        fail("assert_not_deleted", "the job was deleted")
    end
end

function JobAssertions:assert_released(delay)
    ran(self, "assert_released")
    local name = "assert_released" .. (delay and "(" .. tostring(delay) .. ")" or "")
    if not self.fake.released then fail(name, "the job was not released: " .. outcome(self)) end
    if delay ~= nil and self.fake.released ~= delay then
        fail(name, "the job was released with a delay of " .. self.fake.released .. " s")
    end
end

function JobAssertions:assert_not_released()
    ran(self, "assert_not_released")
    if self.fake.released then fail("assert_not_released", outcome(self)) end
end

function JobAssertions:assert_failed(match)
    ran(self, "assert_failed")
    local failed = self.fake.failed
    if not failed then fail("assert_failed", "the job did not fail: " .. outcome(self)) end
    if not matches(match, failed.class .. ": " .. failed.message, failed.value) then
        fail("assert_failed", "the job failed with " .. failed.class .. ": " .. failed.message
            .. ", which does not match " .. tostring(match))
    end
end

function JobAssertions:assert_not_failed()
    ran(self, "assert_not_failed")
    if self.fake.failed then fail("assert_not_failed", outcome(self)) end
end

function JobAssertions:assert_raised(match)
    ran(self, "assert_raised")
    local raised = self.raised
    if not raised then fail("assert_raised", "the handler did not raise: " .. outcome(self)) end
    if not matches(match, raised.class .. ": " .. raised.message, raised.value) then
        fail("assert_raised", "the handler raised " .. raised.class .. ": " .. raised.message
            .. ", which does not match " .. tostring(match))
    end
end

function JobAssertions:assert_not_raised()
    ran(self, "assert_not_raised")
    if self.raised then fail("assert_not_raised", outcome(self)) end
end

function JobAssertions:assert_model_not_found(class)
    ran(self, "assert_model_not_found")
    local missing = self.models_missing
    if not missing then
        fail("assert_model_not_found", "the handler did not call job:model_not_found: " .. outcome(self))
    end
    if class ~= nil and missing.class ~= class then
        fail("assert_model_not_found", "the handler said models of " .. tostring(missing.class)
            .. " are missing, not of " .. tostring(class))
    end
end

-- The jobs of list of class (and fn), and the classes of all of them.
local function of_class(list, class, fn)
    local found, classes = {}, {}
    for _, pushed in ipairs(list) do
        classes[#classes + 1] = tostring(pushed.class)
        if pushed.class == class and (fn == nil or fn(pushed) == true) then found[#found + 1] = pushed end
    end
    return found, #classes > 0 and "dispatched: " .. table.concat(classes, ", ") or "nothing was dispatched"
end

local function assert_dispatched(name, list, class, fn)
    local found, seen = of_class(list, class, fn)
    if #found == 0 then
        fail(name .. "(" .. tostring(class) .. ")", "no such job was dispatched"
            .. (fn and " that the function takes" or "") .. " (" .. seen .. ")", 1)
    end
end

local function assert_not_dispatched(name, list, class, fn)
    if #of_class(list, class, fn) > 0 then
        fail(name .. "(" .. tostring(class) .. ")", "a job of that class was dispatched", 1)
    end
end

function JobAssertions:assert_dispatched(class, fn)
    ran(self, "assert_dispatched")
    assert_dispatched("assert_dispatched", self.dispatched, class, fn)
end

function JobAssertions:assert_not_dispatched(class, fn)
    ran(self, "assert_not_dispatched")
    assert_not_dispatched("assert_not_dispatched", self.dispatched, class, fn)
end

M.JOB_ASSERTIONS = JobAssertions

local fake_jobs = setmetatable({}, { __mode = "k" })

-- job (worker/fake_job.lua's) with the assertions; job.dispatched: the jobs its
-- run dispatched.
function M.job(job)
    local Job = getmetatable(job)
    setmetatable(job, {
        __index = function(_, key) return JobAssertions[key] or Job[key] end,
        __tostring = Job.__tostring,
        __name = Job.__name,
    })
    job.dispatched = {}
    fake_jobs[job] = true
    return job
end

function M.is_job(job)
    return fake_jobs[job] == true
end

local Dispatched = {}
Dispatched.__index = Dispatched

function M.dispatched()
    return setmetatable({ jobs = {} }, Dispatched)
end

function Dispatched:assert_dispatched(class, fn)
    assert_dispatched("assert_dispatched", self.jobs, class, fn)
end

function Dispatched:assert_not_dispatched(class, fn)
    assert_not_dispatched("assert_not_dispatched", self.jobs, class, fn)
end

function Dispatched:assert_dispatched_times(class, n)
    local found = of_class(self.jobs, class)
    if #found ~= n then
        fail("assert_dispatched_times(" .. tostring(class) .. ", " .. tostring(n) .. ")",
            "dispatched " .. #found .. " times")
    end
end

function Dispatched:assert_nothing_dispatched()
    local _, seen = of_class(self.jobs)
    if #self.jobs > 0 then fail("assert_nothing_dispatched", seen) end
end

-- A response: body a string, or a table sent as JSON; status default 200.
function M.response(body, status, headers)
    local h = {}
    for k, v in pairs(headers or {}) do h[tostring(k):lower()] = v end
    if type(body) == "table" then
        body = cjson.encode(body)
        h["content-type"] = h["content-type"] or "application/json"
    end
    return { status = status or 200, headers = h, body = body or "" }
end

-- A route's response (a table, a body string or a function) for request.
local function respond(response, request)
    if type(response) == "function" then response = response(request) end
    if type(response) == "string" then return M.response(response) end
    if type(response) ~= "table" then
        error("testing.fake_http: a route's response must be a table, a string or a function "
            .. "returning one, got " .. type(response), 0)
    end
    if response.status == nil and response.body == nil and response.headers == nil then
        return M.response(response)  -- a table of data: sent as JSON
    end
    return M.response(response.body, response.status, response.headers)
end

-- Laravel's Str::is of '*' .. pattern (Http::fake's): '*' any text, the rest as is.
local function url_matches(pattern, url)
    if pattern:sub(1, 1) ~= "*" then pattern = "*" .. pattern end
    local lua = "^" .. pattern:gsub("[%^%$%(%)%%%.%[%]%+%-%?]", "%%%0"):gsub("%*", ".*") .. "$"
    return url:find(lua) ~= nil
end

local Http = {}
Http.__index = Http

function M.http(routes)
    if type(routes) ~= "table" then error("testing.fake_http(routes): expected a table", 3) end
    local list = {}
    for i, route in ipairs(routes) do list[i] = { pattern = route[1], response = route[2] } end
    local named = {}
    for k, v in pairs(routes) do
        if type(k) == "string" then named[#named + 1] = { pattern = k, response = v } end
    end
    table.sort(named, function(a, b)
        if #a.pattern ~= #b.pattern then return #a.pattern > #b.pattern end
        return a.pattern < b.pattern
    end)
    for _, route in ipairs(named) do list[#list + 1] = route end
    return setmetatable({ routes = list, requests = {} }, Http)
end

-- The response of the first route that matches request's URL; a request none
-- matches raises, as a request that reached no server.
function Http:answer(request)
    self.requests[#self.requests + 1] = request
    for _, route in ipairs(self.routes) do
        if url_matches(route.pattern, request.url) then return respond(route.response, request) end
    end
    error(values.exception("Illuminate\\Http\\Client\\ConnectionException", "testing.fake_http: no "
        .. "route matches " .. request.method .. " " .. http.redact(request.url)), 0)
end

-- Whether request is one match takes: a URL pattern as the routes', or a function.
local function request_matches(match, request)
    if type(match) == "function" then return match(request) == true end
    return url_matches(match, request.url)
end

local function sent(self)
    local lines = {}
    for _, r in ipairs(self.requests) do lines[#lines + 1] = r.method .. " " .. http.redact(r.url) end
    return #lines > 0 and "sent: " .. table.concat(lines, ", ") or "nothing was sent"
end

function Http:assert_sent(match)
    for _, r in ipairs(self.requests) do
        if request_matches(match, r) then return end
    end
    fail("assert_sent", "no request matches " .. tostring(match) .. " (" .. sent(self) .. ")")
end

function Http:assert_not_sent(match)
    for _, r in ipairs(self.requests) do
        if request_matches(match, r) then
            fail("assert_not_sent", r.method .. " " .. http.redact(r.url) .. " was sent")
        end
    end
end

function Http:assert_sent_count(n)
    if #self.requests ~= n then
        fail("assert_sent_count(" .. tostring(n) .. ")", #self.requests .. " were sent (" .. sent(self) .. ")")
    end
end

function Http:assert_nothing_sent()
    if #self.requests > 0 then fail("assert_nothing_sent", sent(self)) end
end

return M
