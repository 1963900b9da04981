-- Which Laravel's protocol luaworker speaks: --laravel=VERSION (a major alone: its
-- newest), else the app's (composer.lock, else vendor's Application::VERSION,
-- beside --env-file), else 8.83; and the behaviours that start at a version.
local H = require "spec.helpers"

-- An app directory with a .env and, as given, a composer.lock naming lock_version
-- and a vendor Application.php naming vendor_version. Returns the --env-file option.
local function app(lock_version, vendor_version)
    local dir = H.tmpdir()
    H.write_file(dir .. "/.env", "APP_NAME=Laravel\n")
    if lock_version then
        H.write_file(dir .. "/composer.lock", string.format([[{
    "packages": [
        {
            "name": "laravel/prompts",
            "version": "v0.3.5"
        },
        {
            "name": "laravel/framework",
            "version": "%s",
            "source": { "type": "git" }
        }
    ]
}
]], lock_version))
    end
    if vendor_version then
        H.write_file(dir .. "/vendor/laravel/framework/src/Illuminate/Foundation/Application.php",
            string.format("<?php\nclass Application\n{\n    const VERSION = '%s';\n}\n", vendor_version))
    end
    return "--env-file=" .. dir .. "/.env"
end

-- The restart key `luaworker restart` writes: where the cache prefix's form shows
-- the version (8-10: "<slug>_cache:", 11+: "<slug>_cache_").
local function restart_key(args)
    H.flush()
    local full = { "restart" }
    for _, a in ipairs(args) do full[#full + 1] = a end
    local r = H.run(full)
    assert.are.equal(0, r.status, r.stderr)
    return H.rdb(1, "KEYS", "*restart")[1]
end

local CACHE_8 = "laravel_database_laravel_cache:illuminate:queue:restart"
local CACHE_11 = "laravel_database_laravel_cache_illuminate:queue:restart"

describe("the Laravel version", function()
    it("is 8.83 without --laravel and without an app", function()
        assert.are.equal(CACHE_8, restart_key({}))
    end)

    it("is read from the app's composer.lock, the framework's own entry", function()
        assert.are.equal(CACHE_11, restart_key({ app("v11.44.2") }))
        assert.are.equal(CACHE_8, restart_key({ app("v10.48.29") }))
        assert.are.equal(CACHE_11, restart_key({ app("12.x-dev") }))
    end)

    it("is read from vendor's Application::VERSION without a composer.lock", function()
        assert.are.equal(CACHE_11, restart_key({ app(nil, "12.51.0") }))
    end)

    it("is 8.83 for an app with neither", function()
        assert.are.equal(CACHE_8, restart_key({ app() }))
    end)

    it("is what --laravel says, over the app's", function()
        assert.are.equal(CACHE_8, restart_key({ app("v12.51.0"), "--laravel=10.48" }))
        assert.are.equal(CACHE_11, restart_key({ app("v8.83.27"), "--laravel=11" }))
    end)

    it("stops at start with status 2 when the app's is one luaworker does not speak", function()
        local r = H.run({ "work", app("v7.30.6") })
        assert.are.equal(2, r.status)
        assert.matches("/composer.lock: Laravel v7.30.6 is not a version luaworker speaks (8 to 13); "
            .. "say which with --laravel", r.stderr, 1, true)
    end)
end)

describe("behaviours that start at a version", function()
    local handlers
    setup(function()
        handlers = H.handlers({ ["App/Jobs/Spec.lua"] = [[
return { handle = function(job) require("luaworker").redis("RPUSH", "spec:ran", job:queue()) end }
]] })
    end)
    before_each(function() H.flush() end)

    local function work(version)
        local r = H.run({ "work", "--handlers=" .. handlers, "--stop-when-empty", "--sleep=0",
            "--queue=high,low", "--laravel=" .. version })
        assert.are.equal(0, r.status, r.stderr)
        return H.r("LRANGE", "spec:ran", 0, -1)
    end

    it("skips a queue paused with queue:pause from 12.40 on, not before", function()
        H.rdb(1, "SET", "laravel_database_laravel_cache_illuminate:queue:paused:redis:low", "b:1;")
        for _, q in ipairs({ "high", "low" }) do H.push(H.payload(), q) end
        assert.are.same({ "high" }, work("12.40"))
        H.r("DEL", "spec:ran")
        assert.are.same({ "low" }, work("12.39"))
    end)

    it("skips every queue while queue:pause --all's key is set, from 13.25 on", function()
        H.rdb(1, "SET", "laravel_database_laravel_cache_illuminate:queues:paused", "b:1;")
        for _, q in ipairs({ "high", "low" }) do H.push(H.payload(), q) end
        assert.are.same({}, work("13.25"))
        assert.are.same({ "high", "low" }, work("13.24"))
        H.rdb(1, "DEL", "laravel_database_laravel_cache_illuminate:queues:paused")
        for _, q in ipairs({ "high", "low" }) do H.push(H.payload(), q) end
        assert.are.same({ "high", "low", "high", "low" }, work("13.25"))
    end)

    it("pushes payloads with the fields of the version (push and luaworker.dispatch)", function()
        local function pushed(version, delay)
            H.flush()
            local r = H.run({ "push", "App\\Jobs\\X", '{"batchId":"b-1"}', "--laravel=" .. version,
                "--delay=" .. delay })
            assert.are.equal(0, r.status, r.stderr)
            local list, delayed = H.keys()
            return H.r("LRANGE", list, 0, 0)[1] or H.r("ZRANGE", delayed, 0, 0)[1]
        end
        local p = pushed("8.83", 0)
        assert.matches('"retryUntil":null,"data":{"commandName":"App\\\\Jobs\\\\X","command":.-"},'
            .. '"id":"%w+","attempts":0}$', p)
        p = pushed("12.11", 7)
        assert.matches('"retryUntil":null,"data":{"commandName":"[^"]*","command":.-"},'
            .. '"createdAt":%d+,"id":"%w+","attempts":0,"delay":7}$', p)
        p = pushed("12.51", 0)
        assert.matches('"command":.-","batchId":"b%-1"},"createdAt":%d+,"id":"%w+","attempts":0,'
            .. '"delay":null}$', p)
        p = pushed("13.0", 0)
        assert.matches('"retryUntil":null,"deleteWhenMissingModels":false,"data":{', p, 1, true)
    end)

    it("releases a unique job's lock under the key and owner rules of the version", function()
        local uniq = H.handlers({ ["App/Jobs/U.lua"] = "return { unique = true, handle = function() end }" })
        local PREFIX = "laravel_database_laravel_cache_laravel_unique_job:"
        local function run(version, owner, display_name, context)
            local command = 'O:10:"App\\Jobs\\U":1:{s:8:"uniqueId";s:1:"7";}'
            if owner then
                command = string.format('O:10:"App\\Jobs\\U":2:{s:8:"uniqueId";s:1:"7";'
                    .. 's:15:"uniqueLockOwner";s:%d:"%s";}', #owner, owner)
            end
            H.push(H.payload({ displayName = display_name or "Custom Name", data = { commandName = "App\\Jobs\\U",
                command = command }, ["illuminate:log:context"] = context }))
            local r = H.run({ "work", "--handlers=" .. uniq, "--stop-when-empty", "--sleep=0",
                "--laravel=" .. version })
            assert.are.equal(0, r.status, r.stderr)
            return r
        end
        local by_class, by_name = PREFIX .. "App\\Jobs\\U:7", PREFIX .. "Custom Name:7"
        H.r("SET", by_class, "x")
        H.r("SET", by_name, "x")
        run("12.40")
        assert.are.same({ 0, 1 }, { H.r("EXISTS", by_class), H.r("EXISTS", by_name) })
        H.r("SET", by_class, "x")
        run("12.41")
        assert.are.same({ 1, 0 }, { H.r("EXISTS", by_class), H.r("EXISTS", by_name) })
        -- 12.54+: a displayName of its own names the lock by its xxh128 hash, which
        -- luaworker reads from the hidden Context Laravel 11.39+ pushes with the job
        -- (InteractsWithUniqueJobs); the hash by PHP's own hash()
        local f = io.popen([[php -r 'echo hash("xxh128", "Custom Name");']])
        local hashed = f:read("*a")
        f:close()
        assert.matches("^%x+$", hashed)
        local function s(v) return string.format('s:%d:"%s";', #v, v) end
        local by_hash = PREFIX .. hashed .. ":7"
        H.r("SET", by_name, "x")
        H.r("SET", by_hash, "owner-c")
        run("12.54", nil, nil, { data = {}, hidden = {
            laravel_unique_job_cache_store = s("redis"),
            laravel_unique_job_key = s("laravel_unique_job:" .. hashed .. ":7"),
            laravel_unique_job_lock_owner = s("owner-c") } })
        assert.are.same({ 1, 1, 0 }, { H.r("EXISTS", by_class), H.r("EXISTS", by_name), H.r("EXISTS", by_hash) })
        -- a payload without it (pushed before 11.39): the hash computed (php.xxh128,
        -- Debian's libxxhash), as PHP's hash() gives it
        H.r("SET", by_hash, "x")
        run("12.54")
        assert.are.same({ 1, 1, 0 }, { H.r("EXISTS", by_class), H.r("EXISTS", by_name), H.r("EXISTS", by_hash) })
        -- 13.24+: the Context's owner when the command has none
        H.r("SET", by_hash, "owner-d")
        run("13.24", nil, nil, { data = {}, hidden = {
            laravel_unique_job_key = s("laravel_unique_job:" .. hashed .. ":7"),
            laravel_unique_job_lock_owner = s("owner-c") } })
        assert.are.equal("owner-d", H.r("GET", by_hash))
        -- 13.24+: only while the job's owner holds it
        H.r("SET", by_class, "owner-b")
        run("13.24", "owner-a", "App\\Jobs\\U")
        assert.are.equal("owner-b", H.r("GET", by_class))
        H.r("SET", by_class, "owner-a")
        run("13.24", "owner-a", "App\\Jobs\\U")
        assert.are.equal(0, H.r("EXISTS", by_class))
        H.r("SET", by_class, "owner-b")
        run("13.23", "owner-a", "App\\Jobs\\U")
        assert.are.equal(0, H.r("EXISTS", by_class))
    end)

    it("fails a timed-out job with TimeoutExceededException from 10.10 on", function()
        local slow = H.handlers({ ["App/Jobs/Spec.lua"] =
            "return { handle = function() require('luaworker').sleep(10) end }" })
        local function failed_with(version, fields)
            H.flush()
            local p = H.payload(fields)
            H.push(p)
            local r = H.run({ "work", "--handlers=" .. slow, "--stop-when-empty", "--sleep=0",
                "--laravel=" .. version })
            assert.are.equal(0, r.status, r.stderr)
            return H.failed_record(p.uuid).exception
        end
        local timed_out = { timeout = 1, failOnTimeout = true }
        assert.matches("^Illuminate\\Queue\\TimeoutExceededException: App\\Jobs\\Spec has timed out%.",
            failed_with("10.10", timed_out))
        assert.matches("^Illuminate\\Queue\\MaxAttemptsExceededException: App\\Jobs\\Spec has been "
            .. "attempted too many times or run too long%. The job may have previously timed out%.",
            failed_with("10.9", timed_out))
        local used_up = { maxTries = 1, attempts = 1 }
        assert.matches("^Illuminate\\Queue\\MaxAttemptsExceededException: App\\Jobs\\Spec has been "
            .. "attempted too many times%.$", failed_with("10.10", used_up))
    end)
end)
