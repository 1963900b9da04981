-- PHP interop in depth, against the real Laravel 8.83 app (examples/laravel): PHP
-- values round-trip byte for byte, chains continue across runtimes, unique locks
-- are released, queued listeners reach their Lua handler, and jobs dispatched from
-- Lua run in PHP's queue:work.
local H = require "spec.helpers"
local cjson = H.json

local HANDLERS = "spec/fixtures/laravel_handlers"
local RAN = H.prefix .. "luaworker:ran"

local function work(args, opts)
    local full = { "work", "--handlers=" .. HANDLERS, "--sleep=0.05" }
    for _, a in ipairs(args or { "--stop-when-empty" }) do full[#full + 1] = a end
    local r = H.run(full, opts)
    assert.are.equal(0, r.status, r.stderr)
    return r
end

local function php_runs()
    return H.json_list(RAN)
end

-- Runs a Lua script inside luaworker's runtime (luaworker lua); returns its stdout.
local function lua(source)
    local file = H.tmpdir() .. "/script.lua"
    H.write_file(file, source)
    local r = H.run({ "lua", file })
    assert.are.equal(0, r.status, r.stderr)
    return r.stdout
end

describe("PHP interop", function()
    setup(H.laravel_setup)

    before_each(function()
        H.flush()
    end)

    it("serializes every command Laravel 8 produced back to the same bytes", function()
        H.dispatch("ProcessPodcast")
        H.dispatch("Simple")
        H.dispatch("WithRetryUntil")
        H.dispatch("Releasing")
        H.dispatch("Failing")
        H.dispatch("Uniq")
        H.dispatch("chain")
        H.dispatch("event:PodcastPublished", '--args={"title":"T/ü","episode":7}')
        H.dispatch("WithModel")
        H.dispatch("notification:InvoicePaid")
        H.dispatch("notification-user:InvoicePaid")
        H.dispatch("mail:Welcome")
        local out = lua([[
            local luaworker = require "luaworker"
            local php, json = luaworker.php, luaworker.json
            local list = luaworker.redis("LRANGE", luaworker.prefix .. "queues:default", 0, -1)
            local checked = 0
            local function check(text)
                local value = assert(php.unserialize(text))
                assert(php.serialize(value) == text, "round trip differs for " .. text)
                checked = checked + 1
                return value
            end
            for _, payload in ipairs(list) do
                local command = check(json.decode(payload).data.command)
                for _, link in ipairs(command.chained or {}) do check(link) end
            end
            print(#list, checked)
        ]])
        assert.are.equal("12\t14\n", out)
    end)

    it("shows Eloquent models as the ModelIdentifier Laravel serialized, without loading them", function()
        H.dispatch("WithModel")
        work()
        local seen = H.json_list("spec:seen")
        assert.are.equal(1, #seen)
        local command = seen[1].command
        assert.are.same({ ["<class>"] = "Illuminate\\Contracts\\Database\\ModelIdentifier",
            class = "App\\Models\\User", id = 1, relations = "<empty>", connection = "sqlite" },
            command.user)
        assert.are.same({ 1, 2 }, command.users.id)
        assert.are.equal("with models", command.note)
    end)

    it("honours the retryUntil Laravel computed from the job's retryUntil() method", function()
        local before = os.time()
        H.dispatch("WithRetryUntil")
        work({ "--stop-when-empty", "--tries=1" })
        local seen = H.json_list("spec:retry_until")
        assert.are.equal(1, #seen)
        assert.is_true(seen[1].retry_until >= before + 300 and seen[1].retry_until <= os.time() + 300)
        -- with a retryUntil, attempts beyond --tries still run (retryUntil replaces maxTries)
        H.flush()
        H.dispatch("WithRetryUntil")
        local list = H.keys()
        local payload = cjson.decode(H.r("LPOP", list))
        payload.attempts = 5
        H.r("RPUSH", list, cjson.encode(payload))
        work({ "--stop-when-empty", "--tries=1" })
        assert.are.equal(6, H.json_list("spec:retry_until")[1].attempts)
    end)

    it("runs a chain dispatched by Laravel link by link, each link dispatched as Laravel does", function()
        H.dispatch("chain")
        work({ "--once" })
        assert.are.same({ "1" }, H.r("LRANGE", "spec:simple", 0, -1))
        local list = H.keys()
        local queued = H.r("LRANGE", list, 0, -1)
        assert.are.equal(1, #queued)
        local second = cjson.decode(queued[1])
        assert.are.equal("App\\Jobs\\Simple", second.displayName)
        assert.are.equal("Illuminate\\Queue\\CallQueuedHandler@call", second.job)
        assert.are.equal(0, second.attempts)
        assert.matches("^[%w]+$", second.id)
        assert.are.equal(32, #second.id)
        -- the second link carries the third, as a serialized string
        assert.matches('s:7:"chained";a:1:{i:0;s:%d+:"O:15:"App\\Jobs\\Simple"', second.data.command)
        work()
        assert.are.same({ "1", "2", "3" }, H.r("LRANGE", "spec:simple", 0, -1))
        assert.are.equal(0, H.r("LLEN", list))
    end)

    it("lets PHP's queue:work finish a chain luaworker started", function()
        H.dispatch("chain")
        work({ "--once" })
        H.artisan({ "queue:work", "--stop-when-empty", "--sleep=0" })
        local ns = {}
        for i, rec in ipairs(php_runs()) do ns[i] = rec.props.n end
        assert.are.same({ 2, 3 }, ns)
    end)

    it("releases a unique job's lock after running it, so the next dispatch is accepted", function()
        local lock = H.cache_prefix .. "laravel_unique_job:App\\Jobs\\Uniquniq-1"
        assert.are.equal(1, #H.dispatch("Uniq"))
        assert.are.equal(1, H.r("EXISTS", lock))
        assert.are.same({ { id = "-", uuid = "-" } }, H.dispatch("Uniq"))
        work()
        assert.are.same({ { n = 1, locked = 1 } }, H.json_list("spec:uniq"))
        assert.are.equal(0, H.r("EXISTS", lock))
        assert.are.equal(1, #H.dispatch("Uniq"))
        assert.are_not.equal("-", H.r("GET", lock) and "locked" or "-")
    end)

    it("gives a queued listener's handler the CallQueuedListener and its event", function()
        H.dispatch("event:PodcastPublished", '--args={"title":"T/ü","episode":7}')
        work()
        assert.are.same({ {
            wrapper = "Illuminate\\Events\\CallQueuedListener",
            class = "App\\Listeners\\SendPodcastNotification", method = "handle",
            event = "App\\Events\\PodcastPublished", title = "T/ü", episode = 7,
        } }, H.json_list("spec:listener"))
    end)

    it("pushes jobs with luaworker.dispatch that PHP's queue:work runs", function()
        local r = H.run({ "push", "App\\Jobs\\Dispatcher", '{"n":77,"delay":2}', "--queue=lua" })
        assert.are.equal(0, r.status, r.stderr)
        local before = os.time()
        work({ "--stop-when-empty", "--queue=lua" })
        local ids = H.r("LRANGE", "spec:dispatched", 0, -1)
        assert.are.equal(2, #ids)
        local list = H.keys()
        local payload = cjson.decode(H.r("LRANGE", list, 0, -1)[1])
        assert.are.equal(ids[1], payload.id)
        assert.are.equal("App\\Jobs\\Simple", payload.displayName)
        local _, other_delayed = H.keys("other")
        local delayed = H.zscores(other_delayed)
        assert.are.equal(1, #delayed)
        assert.are.equal(ids[2], cjson.decode(delayed[1][1]).id)
        assert.is_true(delayed[1][2] >= before + 2 and delayed[1][2] <= os.time() + 2)

        H.artisan({ "queue:work", "--stop-when-empty", "--sleep=0" })
        H.wait_until(function() return os.time() > delayed[1][2] end, 5, "the delayed job to be due")
        H.artisan({ "queue:work", "--queue=other", "--stop-when-empty", "--sleep=0" })
        local runs = php_runs()
        assert.are.equal(2, #runs)
        assert.are.same({ 77, "default", ids[1] }, { runs[1].props.n, runs[1].queue, runs[1].id })
        assert.are.same({ 78, "other", ids[2] }, { runs[2].props.n, runs[2].queue, runs[2].id })
    end)

    it("decrypts a ShouldBeEncrypted job with APP_KEY, and encrypts one for PHP with dispatch", function()
        local key = { APP_KEY = "base64:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=" }
        H.dispatch("Secret")
        assert.is_nil(H.r("LRANGE", H.keys(), 0, -1)[1]:match('"command":"O:'))
        work({ "--stop-when-empty" }, { env = key })
        assert.are.same({ { class = "App\\Jobs\\Secret", n = 1, secret = "top secret" } },
            H.json_list("spec:secret"))
        local encrypted = H.r("LRANGE", H.keys("php"), 0, -1)[1]
        assert.matches('"displayName":"App\\\\Jobs\\\\Secret"', encrypted)
        assert.is_nil(encrypted:match('"command":"O:'))
        H.artisan({ "queue:work", "--queue=php", "--stop-when-empty", "--sleep=0" })
        local runs = php_runs()
        assert.are.equal(1, #runs)
        assert.are.same({ 2, "from Lua" }, { runs[1].props.n, runs[1].props.secret })
    end)

    it("fails an encrypted job it cannot decrypt with a clear message, keeping its payload", function()
        local pushed = H.dispatch("Secret")
        local raw = H.r("LRANGE", H.keys(), 0, -1)[1]
        work({ "--stop-when-empty" }, { env = { APP_KEY = false } })
        local record = H.failed_record(pushed[1].uuid)
        assert.are.equal(raw, record.payload)
        assert.matches("^data.command is encrypted %(ShouldBeEncrypted%) and APP_KEY is not set",
            record.exception)

        H.flush()
        pushed = H.dispatch("Secret")
        work({ "--stop-when-empty" }, { env = { APP_KEY = "base64:" .. string.rep("A", 43) .. "=" } })
        assert.matches("^cannot decrypt data.command with APP_KEY: The MAC is invalid.",
            H.failed_record(pushed[1].uuid).exception)
    end)
end)
