-- The operator commands (failed, retry, forget, flush, push, size, clear, restart),
-- checked through their output and what they leave in Redis.
local H = require "spec.helpers"
local cjson = H.json

local INDEX = H.prefix .. "luaworker:failed_jobs"
local RESTART_KEY = H.cache_prefix .. "illuminate:queue:restart"

-- The Queueable / InteractsWithQueue defaults a Laravel 8 job serializes after its
-- own properties.
local QUEUEABLE = 's:3:"job";N;s:10:"connection";N;s:5:"queue";N;s:15:"chainConnection";N;'
    .. 's:10:"chainQueue";N;s:19:"chainCatchCallbacks";N;s:5:"delay";N;s:11:"afterCommit";N;'
    .. 's:10:"middleware";a:0:{}s:7:"chained";a:0:{}'

-- The top-level keys of a JSON object text, in the order they appear.
local function top_keys(text)
    local keys, depth, i, expect_key = {}, 0, 1, false
    while i <= #text do
        local c = text:sub(i, i)
        if c == '"' then
            local j = i + 1
            while text:sub(j, j) ~= '"' do
                j = j + (text:sub(j, j) == "\\" and 2 or 1)
            end
            if depth == 1 and expect_key then keys[#keys + 1] = text:sub(i + 1, j - 1) end
            expect_key = false
            i = j
        elseif c == "{" or c == "[" then
            depth = depth + 1
            expect_key = c == "{" and depth == 1
        elseif c == "}" or c == "]" then
            depth = depth - 1
        elseif c == "," and depth == 1 then
            expect_key = true
        end
        i = i + 1
    end
    return keys
end

local function now()
    return os.time()
end

local function list(q)
    local key = H.keys(q)
    return H.r("LRANGE", key, 0, -1)
end

local function notify_tokens(q)
    local _, _, _, notify = H.keys(q)
    return H.r("LLEN", notify)
end

-- Pushes with `luaworker push`, asserting success; returns the printed id and the
-- run result.
local function push(args, opts)
    local full = { "push" }
    for _, a in ipairs(args) do full[#full + 1] = a end
    local r = H.run(full, opts)
    assert.are.equal(0, r.status, r.stderr)
    return r.stdout:match("^(%S+)\n$"), r
end

-- Writes a failed-job record with the layout of runtime/queue.lua.
local function failed_record(id, fields)
    fields = fields or {}
    local payload = fields.payload or cjson.encode(H.payload({ uuid = id, attempts = 1 }))
    local key = INDEX .. ":" .. id
    H.r("HSET", key, "uuid", id, "connection", fields.connection or "redis",
        "queue", fields.queue or "default", "payload", payload,
        "exception", fields.exception or "Exception: x", "failed_at", fields.failed_at or "2026-01-02 03:04:05")
    H.r("ZADD", INDEX, fields.score or now(), id)
    return payload
end

local function record_exists(id)
    return H.r("EXISTS", INDEX .. ":" .. id) == 1 or H.r("ZSCORE", INDEX, id) ~= nil
end

before_each(function()
    H.flush()
end)

describe("luaworker push", function()
    it("pushes one Laravel 8.83 payload for a job class, fields in Laravel's order", function()
        push({ "App\\Jobs\\Foo", '{"a":"x/ü","b":2}' })
        local items = list()
        assert.are.equal(1, #items)
        assert.are.same({ "uuid", "displayName", "job", "maxTries", "maxExceptions", "failOnTimeout",
            "backoff", "timeout", "retryUntil", "data", "id", "attempts" }, top_keys(items[1]))
        local p = cjson.decode(items[1])
        assert.are.equal("App\\Jobs\\Foo", p.displayName)
        assert.are.equal("Illuminate\\Queue\\CallQueuedHandler@call", p.job)
        for _, k in ipairs({ "maxTries", "maxExceptions", "backoff", "timeout", "retryUntil" }) do
            assert.are.equal(cjson.null, p[k], k)
        end
        assert.are.equal(false, p.failOnTimeout)
        assert.are.equal(0, p.attempts)
        assert.are.same({ "commandName", "command" }, top_keys(items[1]:match('"data":(%b{})')))
        assert.are.equal("App\\Jobs\\Foo", p.data.commandName)
    end)

    it("prints the payload's id, 32 letters and digits", function()
        local id = push({ "App\\Jobs\\Foo" })
        local p = cjson.decode(list()[1])
        assert.are.equal(p.id, id)
        assert.matches("^" .. string.rep("[A-Za-z0-9]", 32) .. "$", p.id)
    end)

    it("gives each payload a fresh lowercase v4 uuid", function()
        push({ "App\\Jobs\\Foo" })
        push({ "App\\Jobs\\Foo" })
        local a, b = cjson.decode(list()[1]), cjson.decode(list()[2])
        local v4 = "^%x%x%x%x%x%x%x%x%-%x%x%x%x%-4%x%x%x%-[89ab]%x%x%x%-%x%x%x%x%x%x%x%x%x%x%x%x$"
        assert.matches(v4, a.uuid)
        assert.matches(v4, b.uuid)
        assert.are.equal(a.uuid:lower(), a.uuid)
        assert.are_not.equal(a.uuid, b.uuid)
    end)

    it("serializes the JSON properties, then the Queueable defaults, as data.command", function()
        push({ "App\\Jobs\\Foo", '{"a":"x/ü","b":2}' })
        local p = cjson.decode(list()[1])
        assert.are.equal('O:12:"App\\Jobs\\Foo":12:{s:1:"a";s:4:"x/ü";s:1:"b";i:2;' .. QUEUEABLE .. "}",
            p.data.command)
    end)

    it("serializes only the Queueable defaults when no properties are given", function()
        push({ "App\\Jobs\\Foo" })
        local p = cjson.decode(list()[1])
        assert.are.equal('O:12:"App\\Jobs\\Foo":10:{' .. QUEUEABLE .. "}", p.data.command)
    end)

    it("adds one notify token", function()
        push({ "App\\Jobs\\Foo" })
        assert.are.equal(1, notify_tokens())
    end)

    it("pushes to --queue", function()
        push({ "App\\Jobs\\Foo", "--queue=emails" })
        assert.are.equal(1, #list("emails"))
        assert.are.equal(1, notify_tokens("emails"))
        assert.are.equal(0, #list())
    end)

    it("with --delay=N adds the job to :delayed scored now + N, with no notify token", function()
        local before = now()
        local id = push({ "App\\Jobs\\Foo", "--delay=30" })
        local after = now()
        local _, delayed = H.keys()
        local z = H.r("ZRANGE", delayed, 0, -1, "WITHSCORES")
        assert.are.equal(2, #z)
        assert.are.equal(id, cjson.decode(z[1]).id)
        local score = tonumber(z[2])
        assert.is_true(score >= before + 30 and score <= after + 30, "score " .. score)
        assert.are.equal(0, #list())
        assert.are.equal(0, notify_tokens())
    end)

    it("sets maxTries, backoff, timeout, maxExceptions and retryUntil from the options", function()
        local before = now()
        push({ "App\\Jobs\\Foo", "--tries=3", "--backoff=1,5,10", "--timeout=30",
            "--max-exceptions=2", "--retry-until=100" })
        local after = now()
        local p = cjson.decode(list()[1])
        assert.are.equal(3, p.maxTries)
        assert.are.equal("1,5,10", p.backoff)
        assert.are.equal(30, p.timeout)
        assert.are.equal(2, p.maxExceptions)
        assert.is_true(p.retryUntil >= before + 100 and p.retryUntil <= after + 100,
            "retryUntil " .. tostring(p.retryUntil))
    end)

    it("keeps a single --backoff value a string, as Laravel joins it", function()
        push({ "App\\Jobs\\Foo", "--backoff=30" })
        assert.matches('"backoff":"30"', list()[1], 1, true)
    end)

    it("pushes a string job Class@method with the JSON data as given and no retryUntil", function()
        local id = push({ "App\\Handlers\\X@handle", '{"a":1}' })
        local text = list()[1]
        assert.are.same({ "uuid", "displayName", "job", "maxTries", "maxExceptions", "failOnTimeout",
            "backoff", "timeout", "data", "id", "attempts" }, top_keys(text))
        local p = cjson.decode(text)
        assert.are.equal("App\\Handlers\\X", p.displayName)
        assert.are.equal("App\\Handlers\\X@handle", p.job)
        assert.are.same({ a = 1 }, p.data)
        assert.is_nil(p.retryUntil)
        assert.are.equal(id, p.id)
        assert.are.equal(0, p.attempts)
    end)

    it("rejects json-data that is not JSON with exit 2 and pushes nothing", function()
        local r = H.run({ "push", "App\\Jobs\\Foo", "nope" })
        assert.are.equal(2, r.status)
        assert.are.equal("luaworker: push: json-data for a job class must be a JSON object of its "
            .. "properties (Expected value but found invalid token at character 1), got: nope\n", r.stderr)
        assert.are.equal("", r.stdout)
        assert.are.equal(0, #list())
        assert.are.equal(0, notify_tokens())
    end)

    it("rejects a JSON array as a job class's properties with exit 2", function()
        local r = H.run({ "push", "App\\Jobs\\Foo", "[1,2]" })
        assert.are.equal(2, r.status)
        assert.are.equal("luaworker: push: json-data for a job class must be a JSON object of its "
            .. "properties (not a JSON object), got: [1,2]\n", r.stderr)
        assert.are.equal(0, #list())
    end)

    it("reads the properties as PHP's json_decode does: order, exact integers, floats, numeric keys", function()
        push({ "App\\Jobs\\Foo", '{"b":12345678901234567,"a":9007199254740993,"f":1.0,'
            .. '"big":123456789012345678901,"l":[{"7":2,"x":[]}],"e":1e3,"b":"dup"}', "--tries=3" })
        local p = cjson.decode(list()[1])
        assert.are.equal('O:12:"App\\Jobs\\Foo":17:{s:1:"b";s:3:"dup";s:1:"a";i:9007199254740993;'
            .. 's:1:"f";d:1;s:3:"big";d:1.2345678901234568E+20;s:1:"l";a:1:{i:0;a:2:{i:7;i:2;s:1:"x";'
            .. 'a:0:{}}}s:1:"e";d:1000;s:5:"tries";i:3;' .. QUEUEABLE .. "}", p.data.command)
        assert.are.equal(3, p.maxTries)
    end)

    it("takes [] as no properties", function()
        push({ "App\\Jobs\\Foo", " [ ] " })
        assert.are.equal('O:12:"App\\Jobs\\Foo":10:{' .. QUEUEABLE .. "}", cjson.decode(list()[1]).data.command)
    end)
end)

describe("luaworker size", function()
    it("prints the pending, delayed and reserved counts of --queue", function()
        local list_key, delayed, reserved = H.keys("q1")
        H.r("RPUSH", list_key, "a", "b")
        H.r("ZADD", delayed, now() + 60, "c")
        H.r("ZADD", reserved, now() + 60, "d")
        H.push(H.payload(), "default")
        local r = H.run({ "size", "--queue=q1" })
        assert.are.equal(0, r.status)
        assert.are.equal("q1: 2 pending, 1 delayed, 1 reserved (4 in all)\n", r.stdout)
    end)

    it("counts the default queue when no --queue is given", function()
        H.push(H.payload())
        local r = H.run({ "size" })
        assert.are.equal("default: 1 pending, 0 delayed, 0 reserved (1 in all)\n", r.stdout)
    end)
end)

describe("luaworker clear", function()
    it("deletes the list, :delayed, :reserved and :notify keys of --queue", function()
        local list_key, delayed, reserved, notify = H.keys("q1")
        H.push(H.payload(), "q1")
        H.r("ZADD", delayed, now() + 60, "c")
        H.r("ZADD", reserved, now() + 60, "d")
        H.push(H.payload(), "other")
        local r = H.run({ "clear", "--queue=q1" })
        assert.are.equal(0, r.status)
        assert.are.equal(0, H.r("EXISTS", list_key, delayed, reserved, notify))
        assert.are.equal(1, #list("other"))
    end)

    it("prints Laravel's message with the number of jobs deleted", function()
        local list_key, delayed, reserved = H.keys("q1")
        H.push(H.payload(), "q1")
        H.r("RPUSH", list_key, "b")
        H.r("ZADD", delayed, now() + 60, "c")
        H.r("ZADD", reserved, now() + 60, "d")
        local r = H.run({ "clear", "--queue=q1" })
        assert.are.equal("Cleared 4 jobs from the [q1] queue\n", r.stdout)
    end)
end)

describe("luaworker failed", function()
    it("prints 'No failed jobs!' when the store is empty", function()
        local r = H.run({ "failed" })
        assert.are.equal(0, r.status)
        assert.are.equal("No failed jobs!\n", r.stdout)
    end)

    it("prints a table of the records, newest first, with the first line of each exception", function()
        failed_record("11111111-1111-4111-8111-111111111111", { score = 100, queue = "default",
            failed_at = "2026-01-01 10:00:00", exception = "RuntimeException: boom\n#0 {main}",
            payload = cjson.encode(H.payload({ displayName = "App\\Jobs\\Old" })) })
        failed_record("22222222-2222-4222-8222-222222222222", { score = 200, queue = "emails",
            failed_at = "2026-01-01 11:00:00", exception = "Exception: " .. string.rep("x", 80),
            payload = cjson.encode(H.payload({ displayName = "App\\Jobs\\NewerJob" })) })
        local r = H.run({ "failed" })
        assert.are.equal(0, r.status)
        local rule = "+--------------------------------------+------------+---------+-------------------+---------------------+"
            .. "--------------------------------------------------------------+\n"
        assert.are.equal(rule
            .. "| ID                                   | Connection | Queue   | Class             | Failed At           | "
            .. "Exception                                                    |\n"
            .. rule
            .. "| 22222222-2222-4222-8222-222222222222 | redis      | emails  | App\\Jobs\\NewerJob | 2026-01-01 11:00:00 | "
            .. "Exception: " .. string.rep("x", 46) .. "... |\n"
            .. "| 11111111-1111-4111-8111-111111111111 | redis      | default | App\\Jobs\\Old      | 2026-01-01 10:00:00 | "
            .. "RuntimeException: boom                                       |\n"
            .. rule, r.stdout)
    end)

    it("shows one record whole with its id: the exception's every line, the payload", function()
        local payload = failed_record("33333333-3333-4333-8333-333333333333", { queue = "emails",
            failed_at = "2026-01-01 12:00:00", exception = "RuntimeException: boom\n#0 {main}" })
        local r = H.run({ "failed", "33333333-3333-4333-8333-333333333333" })
        assert.are.equal(0, r.status, r.stderr)
        assert.are.equal("ID:         33333333-3333-4333-8333-333333333333\n"
            .. "Connection: redis\nQueue:      emails\nClass:      App\\Jobs\\Spec\n"
            .. "Failed At:  2026-01-01 12:00:00\nException:\n  RuntimeException: boom\n  #0 {main}\n"
            .. "Payload:\n  " .. payload .. "\nCommand:\n  App\\Jobs\\Spec {\n      n = 1,\n  }\n", r.stdout)
        assert.are.same(r, H.run({ "failed", "show", "33333333-3333-4333-8333-333333333333" }))
        local shown = cjson.decode(H.run({ "failed", "show", "33333333-3333-4333-8333-333333333333", "--json" }).stdout)
        assert.are.same({ "emails", "RuntimeException: boom\n#0 {main}", payload, 1 },
            { shown.queue, shown.exception, shown.payload, shown.command.n })
        local listed = cjson.decode(H.run({ "failed", "--json" }).stdout)
        assert.are.same({ "33333333-3333-4333-8333-333333333333", "App\\Jobs\\Spec" }, { listed.id, listed.class })
        r = H.run({ "failed", "no-such-id" })
        assert.are.equal(1, r.status)
        assert.are.equal("luaworker: failed: no failed job with id no-such-id\n", r.stderr)
        r = H.run({ "failed", "show" })
        assert.are.equal(2, r.status)
        assert.matches("failed show: expected the id of a failed job", r.stderr)
    end)

    it("lists a job whose handler raised in the worker", function()
        local handlers = H.handlers({ ["App/Jobs/Spec.lua"] = "return {handle=function() error('x') end}" })
        local p = H.payload()
        H.push(p)
        local w = H.run({ "work", "--handlers=" .. handlers, "--stop-when-empty", "--sleep=0.05" })
        assert.are.equal(0, w.status, w.stderr)
        local r = H.run({ "failed" })
        local row = "\n| " .. p.uuid .. " | redis      | default | App\\Jobs\\Spec | "
        local at = r.stdout:find(row, 1, true)
        assert.is_not_nil(at, r.stdout)
        -- its failed time, then its exception's first line
        assert.matches("^%d%d%d%d%-%d%d%-%d%d %d%d:%d%d:%d%d | [^\n]+ |\n", r.stdout:sub(at + #row))
    end)
end)

describe("luaworker retry", function()
    it("pushes the payload back onto its queue with attempts 0, keeping the other fields", function()
        local id = "33333333-3333-4333-8333-333333333333"
        local original = H.payload({ uuid = id, attempts = 3, maxTries = 5, backoff = "1,5" })
        failed_record(id, { queue = "emails", payload = cjson.encode(original) })
        local r = H.run({ "retry", id })
        assert.are.equal(0, r.status, r.stderr)
        local items = list("emails")
        assert.are.equal(1, #items)
        local expected = H.payload(original)
        expected.attempts = 0
        assert.are.same(expected, cjson.decode(items[1]))
    end)

    it("keeps every byte of the payload but attempts and a past retryUntil, as PHP's json_encode would", function()
        local id = "33333333-3333-4333-8333-333333333333"
        local text = '{"uuid":"' .. id .. '", "retryUntil" : 1000,"n":12345678901234567,"list":[],'
            .. '"map":{"attempts":7,"s":"a \\"}\\u00e9\\/"},"f":1.0,"attempts":3 ,"z":[{"attempts":1}]}'
        failed_record(id, { queue = "emails", payload = text })
        local r = H.run({ "retry", id })
        assert.are.equal(0, r.status, r.stderr)
        assert.are.same({ '{"uuid":"' .. id .. '", "retryUntil" : null,"n":12345678901234567,"list":[],'
            .. '"map":{"attempts":7,"s":"a \\"}\\u00e9\\/"},"f":1.0,"attempts":0 ,"z":[{"attempts":1}]}' },
            list("emails"))
    end)

    it("adds attempts 0 at the end of a payload that has none", function()
        local id = "33333333-3333-4333-8333-333333333333"
        failed_record(id, { queue = "emails", payload = '{"uuid":"' .. id .. '","n":1.0}' })
        assert.are.equal(0, H.run({ "retry", id }).status)
        assert.are.same({ '{"uuid":"' .. id .. '","n":1.0,"attempts":0}' }, list("emails"))
    end)

    it("adds a notify token to the queue", function()
        local id = "33333333-3333-4333-8333-333333333333"
        failed_record(id, { queue = "emails" })
        H.run({ "retry", id })
        assert.are.equal(1, notify_tokens("emails"))
    end)

    it("removes the record and its index entry", function()
        local id = "33333333-3333-4333-8333-333333333333"
        failed_record(id)
        H.run({ "retry", id })
        assert.are.equal(0, H.r("EXISTS", INDEX .. ":" .. id))
        assert.is_nil(H.r("ZSCORE", INDEX, id))
    end)

    it("prints Laravel's message", function()
        local id = "33333333-3333-4333-8333-333333333333"
        failed_record(id)
        local r = H.run({ "retry", id })
        assert.are.equal("The failed job [" .. id .. "] has been pushed back onto the queue!\n", r.stdout)
    end)

    it("retries every record with 'all'", function()
        failed_record("aaaaaaaa-0000-4000-8000-000000000001", { queue = "default", score = 1 })
        failed_record("aaaaaaaa-0000-4000-8000-000000000002", { queue = "emails", score = 2 })
        local r = H.run({ "retry", "all" })
        assert.are.equal(0, r.status, r.stderr)
        assert.are.equal(1, #list("default"))
        assert.are.equal(1, #list("emails"))
        assert.are.equal(0, H.r("ZCARD", INDEX))
        assert.matches("[aaaaaaaa-0000-4000-8000-000000000001]", r.stdout, 1, true)
        assert.matches("[aaaaaaaa-0000-4000-8000-000000000002]", r.stdout, 1, true)
    end)

    it("retries only the records of --queue with 'all --queue'", function()
        failed_record("aaaaaaaa-0000-4000-8000-000000000001", { queue = "default" })
        failed_record("aaaaaaaa-0000-4000-8000-000000000002", { queue = "emails" })
        local r = H.run({ "retry", "all", "--queue=emails" })
        assert.are.equal(0, r.status, r.stderr)
        assert.are.equal(0, #list("default"))
        assert.are.equal(1, #list("emails"))
        assert.is_true(record_exists("aaaaaaaa-0000-4000-8000-000000000001"))
    end)

    it("keeps a record whose payload is not JSON and exits 1 with a message", function()
        failed_record("bad", { payload = "not json" })
        local r = H.run({ "retry", "bad" })
        assert.are.equal(1, r.status)
        assert.are.equal("luaworker: failed job bad has a payload that is not a JSON object; fix it or forget it\n",
            r.stderr)
        assert.are.equal("", r.stdout)
        assert.are.equal("not json", H.r("HGET", INDEX .. ":bad", "payload"))
        assert.is_not_nil(H.r("ZSCORE", INDEX, "bad"))
        assert.are.equal(0, #list())
        assert.are.equal(0, notify_tokens())
    end)

    it("exits 1 with Laravel's message for an unknown id", function()
        local r = H.run({ "retry", "x" })
        assert.are.equal(1, r.status)
        assert.are.equal("luaworker: Unable to find failed job with ID [x].\n", r.stderr)
        assert.are.equal("", r.stdout)
    end)

    it("sets a retryUntil already in the past to null", function()
        local id = "44444444-4444-4444-8444-444444444444"
        failed_record(id, { payload = cjson.encode(H.payload({ uuid = id, retryUntil = now() - 60 })) })
        H.run({ "retry", id })
        assert.are.equal(cjson.null, cjson.decode(list()[1]).retryUntil)
    end)

    it("keeps a retryUntil still in the future", function()
        local id = "44444444-4444-4444-8444-444444444444"
        local until_ = now() + 3600
        failed_record(id, { payload = cjson.encode(H.payload({ uuid = id, retryUntil = until_ })) })
        H.run({ "retry", id })
        assert.are.equal(until_, cjson.decode(list()[1]).retryUntil)
    end)
end)

describe("luaworker forget", function()
    it("deletes the record and its index entry and prints Laravel's message", function()
        local id = "55555555-5555-4555-8555-555555555555"
        failed_record(id)
        failed_record("other")
        local r = H.run({ "forget", id })
        assert.are.equal(0, r.status)
        assert.are.equal("Failed job deleted successfully!\n", r.stdout)
        assert.is_false(record_exists(id))
        assert.is_true(record_exists("other"))
    end)

    it("exits 1 with Laravel's message for an unknown id", function()
        local r = H.run({ "forget", "x" })
        assert.are.equal(1, r.status)
        assert.are.equal("luaworker: No failed job matches the given ID.\n", r.stderr)
        assert.are.equal("", r.stdout)
    end)
end)

describe("luaworker flush", function()
    it("deletes every record and the index and prints Laravel's message", function()
        failed_record("a")
        failed_record("b")
        local r = H.run({ "flush" })
        assert.are.equal(0, r.status)
        assert.are.equal("All failed jobs deleted successfully!\n", r.stdout)
        assert.are.equal(0, H.r("EXISTS", INDEX, INDEX .. ":a", INDEX .. ":b"))
    end)

    it("leaves no record the index does not name while jobs fail meanwhile", function()
        for i = 1, 1200 do failed_record("old" .. i) end
        -- a stream of failures while it runs: each record with its index entry
        local writer = io.popen(string.format("for i in $(seq 1 400); do redis-cli -p %d HSET %s:new$i "
            .. "payload x >/dev/null; redis-cli -p %d ZADD %s 1 new$i >/dev/null; done", H.port, INDEX,
            H.port, INDEX))
        local r = H.run({ "flush" })
        writer:close()
        assert.are.equal(0, r.status, r.stderr)
        local records = H.r("KEYS", INDEX .. ":*")
        for _, key in ipairs(records) do
            assert.is_not_nil(H.r("ZSCORE", INDEX, key:sub(#INDEX + 2)), key .. " is not in the index")
        end
        assert.are.equal(0, #H.r("KEYS", INDEX .. ":old*"))
    end)
end)

describe("luaworker restart", function()
    it("stores the current Unix time in DB 1 under Laravel 8's cache key, with no TTL", function()
        local before = now()
        local r = H.run({ "restart" })
        local after = now()
        assert.are.equal(0, r.status)
        assert.are.equal("Broadcasting queue restart signal.\n", r.stdout)
        local v = H.rdb(1, "GET", RESTART_KEY)
        assert.matches("^%d+$", v)
        assert.is_true(tonumber(v) >= before and tonumber(v) <= after, "value " .. v)
        assert.are.equal(-1, H.rdb(1, "TTL", RESTART_KEY))
        assert.is_nil(H.r("GET", RESTART_KEY))
    end)

    it("makes a running worker exit 0", function()
        local handlers = H.handlers({ ["App/Jobs/Spec.lua"] = [[
            local luaworker = require "luaworker"
            return { handle = function() luaworker.redis("RPUSH", "spec:ran", "1") end }
        ]] })
        local w = H.spawn({ "work", "--handlers=" .. handlers, "--sleep=0.05" })
        -- A processed job shows the worker has read the restart key at start.
        H.push(H.payload())
        H.wait_until(function() return H.r("LLEN", "spec:ran") == 1 end, 20, "the job to run")
        assert.is_nil(w:status())
        local r = H.run({ "restart" })
        assert.are.equal(0, r.status)
        local ok, status = pcall(w.wait, w, 20)
        w:stop()
        assert.is_true(ok, tostring(status))
        assert.are.equal(0, status)
    end)
end)
