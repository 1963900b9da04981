-- Configuration from the environment and --env-file: key prefix, databases, default
-- queue, REDIS_URL, and where the restart signal goes, checked through `luaworker
-- push` / `luaworker restart` and what lands in Redis.
local H = require "spec.helpers"

-- Variables the specs set. They must not come from the caller's environment
-- (H.run cannot unset them: its `false` puts "-u" after the assignments, which env
-- then takes for the command).
local VARS = { "APP_NAME", "REDIS_PREFIX", "REDIS_DB", "REDIS_QUEUE", "REDIS_URL", "REDIS_PASSWORD",
    "REDIS_USERNAME", "CACHE_PREFIX", "REDIS_CACHE_DB", "SPEC_BASE", "PART", "APP_KEY", "APP_CIPHER",
    "APP_TIMEZONE", "QUEUE_CONNECTION", "TZDIR" }
for _, k in ipairs(VARS) do
    assert(os.getenv(k) == nil, "spec/config_spec.lua needs " .. k .. " unset")
end

local function run(args, vars)
    return H.run(args, { env = vars })
end

-- Runs `luaworker push App\Jobs\X` (plus extra args), asserting success.
local function push(vars, extra)
    local args = { "push", "App\\Jobs\\X" }
    for _, a in ipairs(extra or {}) do args[#args + 1] = a end
    local r = run(args, vars)
    assert.are.equal(0, r.status, r.stderr)
    return r
end

-- The keys of database db matching pattern, sorted.
local function keys(db, pattern)
    local ks = H.rdb(db or 0, "KEYS", pattern or "*")
    table.sort(ks)
    return ks
end

-- Pushes with vars and returns the keys it created in database 0.
local function pushed_keys(vars, extra)
    push(vars, extra)
    return keys(0)
end

local function queue_keys(prefix, q)
    q = q or "default"
    return { prefix .. "queues:" .. q, prefix .. "queues:" .. q .. ":notify" }
end

local function env_file(text)
    local path = H.tmpdir() .. "/.env"
    H.write_file(path, text)
    return path
end

-- Connections the spec's redis-server has accepted so far (INFO stats).
local function connections()
    return tonumber(H.r("INFO", "stats"):match("total_connections_received:(%d+)"))
end

-- Asserts that `luaworker push` with vars (and extra args) exits 2 with message
-- as its one line on stderr, without connecting to Redis.
local function rejects(vars, message, extra)
    local before = connections()
    local args = { "push", "App\\Jobs\\X" }
    for _, a in ipairs(extra or {}) do args[#args + 1] = a end
    local r = run(args, vars)
    assert.are.same({ status = 2, stdout = "", stderr = "luaworker: " .. message .. "\n" }, r)
    assert.are.equal(before, connections(), "no connection to Redis")
end

-- The keys `luaworker restart` created in database db.
local function restart_keys(db, vars, extra)
    local args = { "restart" }
    for _, a in ipairs(extra or {}) do args[#args + 1] = a end
    local r = run(args, vars)
    assert.are.equal(0, r.status, r.stderr)
    return keys(db)
end

before_each(function()
    H.flush()
end)

describe("key prefix", function()
    it("is laravel_database_ by default", function()
        assert.are.same(queue_keys("laravel_database_"), pushed_keys())
    end)

    it("is REDIS_PREFIX when set, whatever APP_NAME says", function()
        assert.are.same(queue_keys("pfx:"), pushed_keys({ REDIS_PREFIX = "pfx:", APP_NAME = "My App" }))
    end)

    it("may be empty with REDIS_PREFIX=''", function()
        assert.are.same(queue_keys(""), pushed_keys({ REDIS_PREFIX = "" }))
    end)

    it("is the snake slug of APP_NAME followed by _database_", function()
        assert.are.same(queue_keys("my_app_database_"), pushed_keys({ APP_NAME = "My App" }))
    end)

    -- Expected values from Illuminate\Support\Str::slug($name, '_') of Laravel 8.83.
    it("turns '-' into '_' and '@' into '_at_' as Str::slug does", function()
        assert.are.same(queue_keys("my_app_at_home_database_"), pushed_keys({ APP_NAME = "My-App @ Home" }))
    end)

    it("drops punctuation and collapses and trims separators as Str::slug does", function()
        assert.are.same(queue_keys("lead_trail_database_"), pushed_keys({ APP_NAME = "-Lead & Trail-" }))
        H.flush()
        assert.are.same(queue_keys("foobar_database_"), pushed_keys({ APP_NAME = "Foo.Bar" }))
    end)

    it("transliterates non-ASCII letters as Str::slug does (Café -> cafe)", function()
        assert.are.same(queue_keys("cafe_database_"), pushed_keys({ APP_NAME = "Café" }))
    end)
end)

describe("queue connection", function()
    it("uses the database REDIS_DB names", function()
        push({ REDIS_DB = "3" })
        assert.are.same(queue_keys("laravel_database_"), keys(3))
        assert.are.same({}, keys(0))
    end)

    it("pushes to REDIS_QUEUE when no --queue is given", function()
        assert.are.same(queue_keys("laravel_database_", "emails"), pushed_keys({ REDIS_QUEUE = "emails" }))
    end)

    it("reports REDIS_QUEUE in size when no --queue is given", function()
        local r = run({ "size" }, { REDIS_QUEUE = "emails" })
        assert.are.equal("emails: 0 pending, 0 delayed, 0 reserved (0 in all)\n", r.stdout)
    end)

    it("takes host, port and database from REDIS_URL over REDIS_HOST, REDIS_PORT and REDIS_DB", function()
        push({ REDIS_HOST = "192.0.2.1", REDIS_PORT = "1", REDIS_DB = "2",
            REDIS_URL = "redis://127.0.0.1:" .. H.port .. "/4" })
        assert.are.same(queue_keys("laravel_database_"), keys(4))
        assert.are.same({}, keys(2))
    end)

    it("keeps REDIS_DB when REDIS_URL has no database", function()
        push({ REDIS_PORT = "1", REDIS_DB = "2", REDIS_URL = "redis://127.0.0.1:" .. H.port })
        assert.are.same(queue_keys("laravel_database_"), keys(2))
    end)

    it("treats REDIS_PASSWORD=null as no password, as Laravel's env() does", function()
        assert.are.same(queue_keys("laravel_database_"), pushed_keys({ REDIS_PASSWORD = "null" }))
    end)
end)

describe("--env-file", function()
    it("reads double-quoted values and skips comments", function()
        local path = env_file('# settings\nAPP_NAME="Env App" # the name\n\n')
        assert.are.same(queue_keys("env_app_database_"), pushed_keys({}, { "--env-file=" .. path }))
    end)

    it("reads single-quoted values literally", function()
        local path = env_file("REDIS_PREFIX='lit_${SPEC_BASE}:'\n")
        push({ SPEC_BASE = "x" }, { "--env-file=" .. path })
        assert.are.same(queue_keys("lit_${SPEC_BASE}:"), keys(0))
    end)

    it("reads lines starting with export", function()
        local path = env_file("export REDIS_QUEUE=exported\n")
        push({}, { "--env-file=" .. path })
        assert.are.same(queue_keys("laravel_database_", "exported"), keys(0))
    end)

    it("expands ${VAR} from earlier lines and from the environment", function()
        local path = env_file("PART=one\nREDIS_PREFIX=${PART}_${SPEC_BASE}:\n")
        push({ SPEC_BASE = "two" }, { "--env-file=" .. path })
        assert.are.same(queue_keys("one_two:"), keys(0))
    end)

    it("lets real environment variables win over the file", function()
        -- The harness's REDIS_PORT points at the spec's Redis; the file's would fail.
        local path = env_file("REDIS_PORT=1\nREDIS_QUEUE=from_file\n")
        push({ REDIS_QUEUE = "from_env" }, { "--env-file=" .. path })
        assert.are.same(queue_keys("laravel_database_", "from_env"), keys(0))
    end)

    it("rejects a malformed line with exit 2 naming the file and line", function()
        local path = env_file("APP_NAME=ok\nNOT A LINE\n")
        local r = run({ "push", "App\\Jobs\\X", "--env-file=" .. path })
        assert.are.same({ status = 2, stdout = "",
            stderr = "luaworker: " .. path .. ":2: expected '=' after the variable name\n" }, r)
        assert.are.same({}, keys(0))
    end)

    -- Each malformed file, and the line (file:line: what was expected) it gets.
    local BAD_FILES = {
        { "APP_NAME=\"open\n", ":1: expected a closing '\"'" },
        { "A=1\nAPP_NAME='open\n", ":2: expected a closing \"'\"" },
        { "APP_NAME=${NAME\n", ":1: expected ${NAME} with a closing '}'" },
        { "APP_NAME=\"a\" b\n", ":1: unexpected text after the value" },
        { "APP_NAME=a\"b\n", ":1: unexpected quote inside an unquoted value" },
        { "=value\n", ":1: expected a variable name (letters, digits, '_' or '.')" },
        { "APP NAME=x\n", ":1: expected '=' after the variable name" },
    }
    for _, case in ipairs(BAD_FILES) do
        it("rejects " .. case[1]:gsub("\n", "\\n") .. " with exit 2 naming the file and line", function()
            local path = env_file(case[1])
            rejects({}, path .. case[2], { "--env-file=" .. path })
        end)
    end

    it("rejects a bad value read from the file as one from the environment", function()
        local path = env_file("REDIS_DB=two\n")
        rejects({}, "REDIS_DB=two: expected a whole number from 0 to 1048576", { "--env-file=" .. path })
    end)

    it("rejects a missing file with exit 2", function()
        local path = H.tmpdir() .. "/missing.env"
        local r = run({ "push", "App\\Jobs\\X", "--env-file=" .. path })
        assert.are.same({ status = 2, stdout = "",
            stderr = "luaworker: --env-file=" .. path .. ": cannot open: No such file or directory\n" }, r)
    end)
end)

-- Every variable luaworker reads, with a bad value and the one line it gets.
local BAD_VARS = {
    { { REDIS_PORT = "abc" }, "REDIS_PORT=abc: expected a whole number from 1 to 65535" },
    { { REDIS_PORT = "" }, "REDIS_PORT=: expected a whole number from 1 to 65535" },
    { { REDIS_PORT = "-1" }, "REDIS_PORT=-1: expected a whole number from 1 to 65535" },
    { { REDIS_PORT = "0" }, "REDIS_PORT=0: expected a whole number from 1 to 65535" },
    { { REDIS_PORT = "65536" }, "REDIS_PORT=65536: expected a whole number from 1 to 65535" },
    { { REDIS_PORT = "6379 " }, "REDIS_PORT=6379 : expected a whole number from 1 to 65535" },
    { { REDIS_HOST = "" }, "REDIS_HOST=: expected a host name or IP address, or a unix socket's path" },
    { { REDIS_SCHEME = "unix" }, "REDIS_PATH=: expected the absolute path of Redis' unix socket (REDIS_SCHEME=unix)" },
    { { REDIS_SCHEME = "ssl" }, "REDIS_SCHEME=ssl: expected tcp, tls or unix" },
    { { REDIS_SCHEME = "tls", LUAWORKER_REDIS_VERIFY = "yes" }, "LUAWORKER_REDIS_VERIFY=yes: expected 1 (check "
        .. "Redis' certificate and name: the default) or 0 (do not)" },
    { { REDIS_URL = "unix://redis.sock" }, "REDIS_URL=unix:redis.sock: expected unix:///path/to/redis.sock (the "
        .. "socket's absolute path)" },
    { { REDIS_URL = "unix:///run/redis.sock?database=x" }, "REDIS_URL database=x: expected a whole number "
        .. "from 0 to 1048576" },
    { { REDIS_HOST = string.rep("h", 256) }, "REDIS_HOST: value is too long (at most 255 bytes)" },
    { { REDIS_DB = "-1" }, "REDIS_DB=-1: expected a whole number from 0 to 1048576" },
    { { REDIS_DB = "1048577" }, "REDIS_DB=1048577: expected a whole number from 0 to 1048576" },
    { { REDIS_CACHE_DB = "one" }, "REDIS_CACHE_DB=one: expected a whole number from 0 to 1048576" },
    { { REDIS_PASSWORD = string.rep("p", 512) }, "REDIS_PASSWORD: value is too long (at most 511 bytes)" },
    { { REDIS_USERNAME = string.rep("u", 256) }, "REDIS_USERNAME: value is too long (at most 255 bytes)" },
    { { REDIS_URL = "127.0.0.1:6379" }, "REDIS_URL=127.0.0.1:6379: expected "
        .. "redis://[user:password@]host[:port][/db] (rediss:// or tls:// for TLS) or unix:///path/to/redis.sock" },
    { { REDIS_URL = "https://user:secret@127.0.0.1:6379" }, "REDIS_URL=https://user:***: expected "
        .. "redis://[user:password@]host[:port][/db] (rediss:// or tls:// for TLS) or unix:///path/to/redis.sock" },
    { { REDIS_URL = "redis://127.0.0.1:port" }, "REDIS_URL port=port: expected a whole number from 1 to 65535" },
    { { REDIS_URL = "redis://127.0.0.1:0" }, "REDIS_URL port=0: expected a whole number from 1 to 65535" },
    { { REDIS_URL = "redis://127.0.0.1/x" }, "REDIS_URL database=x: expected a whole number from 0 to 1048576" },
    { { REDIS_PREFIX = string.rep("p", 256) }, "REDIS_PREFIX: value is too long (at most 255 bytes)" },
    { { CACHE_PREFIX = string.rep("c", 256) }, "CACHE_PREFIX: value is too long (at most 255 bytes)" },
    { { REDIS_QUEUE = string.rep("q", 256) }, "REDIS_QUEUE: value is too long (at most 255 bytes)" },
    { { QUEUE_CONNECTION = string.rep("c", 64) }, "QUEUE_CONNECTION: value is too long (at most 63 bytes)" },
    { { APP_TIMEZONE = "Mars/Olympus" }, "APP_TIMEZONE=Mars/Olympus: expected a tz database zone such as "
        .. "UTC or Europe/Paris (none such in /usr/share/zoneinfo)" },
    { { APP_TIMEZONE = "../../etc/passwd" }, "APP_TIMEZONE=../../etc/passwd: expected a tz database zone "
        .. "such as UTC or Europe/Paris (none such in /usr/share/zoneinfo)" },
    { { APP_CIPHER = "AES-512-CBC" },
        "APP_CIPHER=AES-512-CBC: expected AES-128-CBC, AES-256-CBC, AES-128-GCM or AES-256-GCM" },
    { { APP_KEY = "base64:not base64!" },
        "APP_KEY: expected \"base64:\" and the base64 of a 32-byte key for AES-256-CBC" },
    { { APP_KEY = "base64:MDEyMzQ1Njc4OWFiY2RlZg==" }, "APP_KEY: a 16-byte key, expected 32 bytes for AES-256-CBC" },
    { { APP_KEY = "too short" }, "APP_KEY: a 9-byte key, expected 32 bytes for AES-256-CBC" },
    { { APP_KEY = "base64:MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", APP_CIPHER = "aes-128-gcm" },
        "APP_KEY: a 32-byte key, expected 16 bytes for AES-128-GCM" },
}

describe("bad variables", function()
    for _, case in ipairs(BAD_VARS) do
        local name, value = next(case[1])
        it("rejects " .. name .. "=" .. value:sub(1, 40) .. " with one line and exit 2, before Redis", function()
            rejects(case[1], case[2])
        end)
    end

    it("accepts a valid APP_KEY with its APP_CIPHER, and a tz database APP_TIMEZONE", function()
        push({ APP_KEY = "base64:MDEyMzQ1Njc4OWFiY2RlZg==", APP_CIPHER = "aes-128-gcm",
            APP_TIMEZONE = "Europe/Paris" })
        push({ APP_KEY = "0123456789abcdef0123456789abcdef", APP_TIMEZONE = "UTC" })
    end)

    it("never prints the password of a REDIS_URL", function()
        local r = run({ "push", "App\\Jobs\\X" }, { REDIS_URL = "https://:s3cret@127.0.0.1" })
        assert.are.equal(2, r.status)
        assert.is_nil(r.stderr:find("s3cret", 1, true))
    end)

    it("rejects REDIS_DB=x with exit 2 naming the variable", function()
        local r = run({ "push", "App\\Jobs\\X" }, { REDIS_DB = "x" })
        assert.are.same({ status = 2, stdout = "",
            stderr = "luaworker: REDIS_DB=x: expected a whole number from 0 to 1048576\n" }, r)
    end)

    it("rejects a REDIS_URL that is not redis:// with exit 2", function()
        local r = run({ "push", "App\\Jobs\\X" }, { REDIS_URL = "http://x" })
        assert.are.same({ status = 2, stdout = "", stderr = "luaworker: REDIS_URL=http://x: expected "
            .. "redis://[user:password@]host[:port][/db] (rediss:// or tls:// for TLS) or unix:///path/to/redis.sock\n" }, r)
    end)
end)

describe("restart key", function()
    it("is laravel_database_laravel_cache:illuminate:queue:restart in DB 1 by default", function()
        assert.are.same({ "laravel_database_laravel_cache:illuminate:queue:restart" }, restart_keys(1))
    end)

    it("follows APP_NAME in both the Redis and the cache prefix", function()
        assert.are.same({ "my_app_database_my_app_cache:illuminate:queue:restart" },
            restart_keys(1, { APP_NAME = "My App" }))
    end)

    it("uses CACHE_PREFIX followed by ':'", function()
        assert.are.same({ "laravel_database_myc:illuminate:queue:restart" },
            restart_keys(1, { CACHE_PREFIX = "myc" }))
    end)

    it("adds no ':' for an empty CACHE_PREFIX", function()
        assert.are.same({ "laravel_database_illuminate:queue:restart" }, restart_keys(1, { CACHE_PREFIX = "" }))
    end)

    it("goes to the database REDIS_CACHE_DB names", function()
        assert.are.same({ "laravel_database_laravel_cache:illuminate:queue:restart" },
            restart_keys(5, { REDIS_CACHE_DB = "5" }))
        assert.are.same({}, keys(1))
    end)

    it("has no ':' after the cache prefix with --laravel-version=11", function()
        assert.are.same({ "laravel_database_laravel_cache_illuminate:queue:restart" },
            restart_keys(1, {}, { "--laravel-version=11" }))
    end)

    it("uses CACHE_PREFIX as it is with --laravel-version=11", function()
        assert.are.same({ "laravel_database_mycilluminate:queue:restart" },
            restart_keys(1, { CACHE_PREFIX = "myc" }, { "--laravel-version=11" }))
    end)
end)
