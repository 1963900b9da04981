-- A real Laravel 12 beside luaworker, for the specs that compare bytes with it: the
-- fixture ../shared/laravel12 (laravel/framework v12.67.0 and the packages its queue
-- path loads, an app skeleton whose `php artisan queue:work` is Laravel 12's own
-- worker), copied and unpacked once per spec run into the specs' private directory.
-- It is a fixture beside the project, not part of it: where it is absent, L12.app()
-- returns nil and the reason, and the specs say so and pass over it.
--
-- The app talks to the specs' private redis-server with Laravel's default names
-- (APP_NAME laravel: keys laravel_database_..., cache laravel_cache_), the same ones
-- luaworker derives with --laravel=12.
local H = require "spec.helpers"

local L12 = {}

local FIXTURE = H.root .. "/../shared/laravel12"
L12.VERSION = "12.67"

local app_dir, missing

-- The environment of the app's PHP processes (and of a luaworker beside them).
function L12.env(extra)
    local e = { APP_NAME = "laravel", REDIS_HOST = "127.0.0.1", REDIS_PORT = tostring(H.port),
        REDIS_PREFIX = "laravel_database_", CACHE_PREFIX = "laravel_cache_",
        QUEUE_FAILED_DRIVER = "null", DB_CONNECTION = "sqlite" }
    for k, v in pairs(extra or {}) do e[k] = v end
    return e
end

-- The app's directory (set up at the first call), or nil and why it is absent.
function L12.app()
    if app_dir or missing then return app_dir, missing end
    local f = io.open(FIXTURE .. "/vendor.tar.xz", "rb")
    if not f then
        missing = "../shared/laravel12 is absent: the specs against a real Laravel 12 are skipped"
        return nil, missing
    end
    f:close()
    local dir = H.tmp .. "/laravel12"
    local ok = os.execute(string.format("rm -rf %s && cp -a %s %s && cd %s && tar -xJf vendor.tar.xz "
        .. "&& mkdir -p app/app/Jobs app/storage/framework/cache/data app/storage/logs",
        H.quote(dir), H.quote(FIXTURE), H.quote(dir), H.quote(dir)))
    if not ok then
        missing = "../shared/laravel12 could not be unpacked into " .. dir
        return nil, missing
    end
    app_dir = dir .. "/app"
    return app_dir
end

-- Writes the job class App\Jobs\<name> (the PHP source of its body, inside the
-- class) into the app, with the Queueable traits Laravel's make:job gives
-- (Dispatchable, InteractsWithQueue, Queueable, SerializesModels) unless traits
-- is given.
function L12.job(name, body, traits)
    traits = traits or "Dispatchable, InteractsWithQueue, Queueable, SerializesModels"
    H.write_file(app_dir .. "/app/Jobs/" .. name .. ".php", string.format([[<?php
namespace App\Jobs;

use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;
use Illuminate\Queue\SerializesModels;

class %s implements ShouldQueue
{
    use %s;
%s
}
]], name, traits, body))
end

-- "cd <app> && env <the app's environment> timeout -s KILL <timeout> <words>", quoted.
local function command_line(words, extra_env, timeout)
    local env = {}
    for k, v in pairs(L12.env(extra_env)) do env[#env + 1] = k .. "=" .. H.quote(v) end
    local quoted = {}
    for i, w in ipairs(words) do quoted[i] = H.quote(w) end
    return string.format("cd %s && env %s timeout -s KILL %d %s", H.quote(app_dir), table.concat(env, " "),
        timeout, table.concat(quoted, " "))
end

-- Runs the command line words (PHP's) in the app's directory with its environment;
-- returns {status, stdout, stderr}.
local function run(words, extra_env, timeout)
    local out = H.tmpdir()
    local _, _, status = os.execute(string.format("%s >%s/out 2>%s/err </dev/null",
        command_line(words, extra_env, timeout or 120), out, out))
    return { status = status, stdout = H.read_file(out .. "/out"), stderr = H.read_file(out .. "/err") }
end

-- Runs PHP code in the booted app (its console kernel bootstrapped: dispatch(),
-- Bus::chain(), Queue::... work); returns its output. Raises when it fails.
function L12.php(code, extra_env)
    local file = app_dir .. "/run-" .. tostring(math.random(1, 1e9)) .. ".php"
    H.write_file(file, "<?php\nrequire __DIR__.'/bootstrap/autoload.php';\n"
        .. "$app = require __DIR__.'/bootstrap/app.php';\n"
        .. "$app->make(Illuminate\\Contracts\\Console\\Kernel::class)->bootstrap();\n" .. code .. "\n")
    local r = run({ "php", file }, extra_env, 60)
    os.remove(file)
    assert(r.status == 0, "Laravel 12's php failed: " .. r.stdout .. r.stderr)
    return r.stdout
end

-- Runs `php artisan <args>` in the app; returns {status, stdout, stderr}.
function L12.artisan(args, extra_env)
    local full = { "php", "artisan" }
    for _, a in ipairs(args) do full[#full + 1] = a end
    return run(full, extra_env, 120)
end

-- Starts `php artisan <args>` in the app in the background; returns {wait(timeout)
-- -> {status, stdout, stderr}} (the process is killed past timeout, 60 s).
function L12.spawn_artisan(args, extra_env)
    local out = H.tmpdir()
    local words = { "php", "artisan" }
    for _, a in ipairs(args) do words[#words + 1] = a end
    assert(os.execute(string.format("(%s >%s/out 2>%s/err </dev/null; echo $? >%s/status.tmp; "
        .. "mv %s/status.tmp %s/status) >/dev/null 2>&1 &", command_line(words, extra_env, 300), out, out, out,
        out, out)))
    local p = {}
    function p.wait(timeout)
        H.wait_until(function() return H.read_file(out .. "/status") end, timeout or 60,
            "Laravel 12's artisan " .. args[1] .. " to exit: " .. (H.read_file(out .. "/err") or ""))
        return { status = tonumber(H.read_file(out .. "/status"):match("%d+")),
            stdout = H.read_file(out .. "/out") or "", stderr = H.read_file(out .. "/err") or "" }
    end
    return p
end

-- The job both specs against Laravel 12 run, in PHP (the body of App\Jobs\Recorded,
-- for L12.job) and as its Lua handler.
-- App\Jobs\Recorded records each run in spec:ran (who ran it, its tag and attempt),
-- then does what its action says: "release" releases it for 3 s on its first
-- attempt, "release_now" for 0 s, "slow" takes 10 ms, "fail" fails it.
L12.RECORDED_PHP = [[
    public $tries = 2;
    public $tag;
    public $action;

    public function __construct($tag = null, $action = 'ok')
    {
        $this->tag = $tag;
        $this->action = $action;
    }

    public function handle()
    {
        \Illuminate\Support\Facades\Redis::rpush('spec:ran', json_encode(
            ['by' => 'php', 'tag' => $this->tag, 'attempt' => $this->attempts()]));
        if ($this->action === 'release' && $this->attempts() === 1) {
            $this->release(3);
        } elseif ($this->action === 'release_now' && $this->attempts() === 1) {
            $this->release(0);
        } elseif ($this->action === 'slow') {
            usleep(10000);
        } elseif ($this->action === 'fail') {
            $this->fail(new \RuntimeException('boom'));
        }
    }
]]

L12.RECORDED_LUA = [[
local luaworker = require "luaworker"
return { handle = function(job, command)
    luaworker.redis("RPUSH", luaworker.prefix .. "spec:ran", luaworker.json.encode(
        { by = "lua", tag = command.tag, attempt = job:attempts() }))
    if command.action == "release" and job:attempts() == 1 then
        job:release(3)
    elseif command.action == "release_now" and job:attempts() == 1 then
        job:release(0)
    elseif command.action == "slow" then
        luaworker.sleep(0.01)
    elseif command.action == "fail" then
        job:fail(luaworker.exception("RuntimeException", "boom"))
    end
end }
]]

-- A Lua App\Jobs\Recorded for the specs of leases: it records its run as
-- RECORDED_LUA does, then takes its action's seconds ("15", "60") and records its end
-- on spec:ended.
L12.LONG_LUA = [[
local luaworker = require "luaworker"
return { handle = function(job, command)
    luaworker.redis("RPUSH", luaworker.prefix .. "spec:ran", luaworker.json.encode(
        { by = "lua", tag = command.tag, attempt = job:attempts() }))
    luaworker.sleep(tonumber(command.action))
    luaworker.redis("RPUSH", luaworker.prefix .. "spec:ended", command.tag)
end }
]]

-- Leases beside Laravel 12's worker (worker/lease_keeper.h,
-- worker/database_lease_keeper.h), on the queue of opts.connection (nil: the app's
-- redis one; "database"), with busted's assert: a job of 15 s at a retry_after of 5
-- (the environment opts.short, the luaworker options opts.short_args) runs once
-- while Laravel 12's queue:work and a second luaworker poll the queue; then in a job
-- of 60 s at --heartbeat=1, the luaworker group killed with kill -9 leaves the job to
-- Laravel 12's worker within 5 s, as its attempt 2. opts.env: the environment of
-- both; opts.left(): how many jobs are left (queued or reserved), 0 after the first.
function L12.leases(assert, opts)
    local connection = opts.connection and { opts.connection } or {}
    local function leased(seconds, extra, args, fn)
        local e = {}
        for k, v in pairs(opts.env) do e[k] = v end
        for k, v in pairs(extra) do e[k] = v end
        L12.php("App\\Jobs\\Recorded::dispatch('lease', '" .. seconds .. "');", e)
        local full = { "work", "--laravel=" .. L12.VERSION, "--sleep=0.2", "--no-watch",
            "--handlers=" .. H.handlers({ ["App/Jobs/Recorded.lua"] = L12.LONG_LUA }) }
        for _, a in ipairs(connection) do full[#full + 1] = a end
        for _, a in ipairs(args) do full[#full + 1] = a end
        local w = H.spawn(full, { env = e, group = true })
        local others = {}
        local ok, err = pcall(fn, w, e, full, others)
        if not w:status() then w:kill_group("KILL") end
        for _, o in ipairs(others) do o:stop() end
        if not ok then error(err, 0) end
    end
    local function php_worker(e, args)
        local full = { "queue:work" }
        for _, a in ipairs(connection) do full[#full + 1] = a end
        for _, a in ipairs(args) do full[#full + 1] = a end
        return L12.spawn_artisan(full, e)
    end
    local short_args = { "--timeout=60" }
    for _, a in ipairs(opts.short_args or {}) do short_args[#short_args + 1] = a end
    leased(15, opts.short, short_args, function(w, e, full, others)
        H.wait_until(function() return #L12.runs() == 1 end, 20, "the job's start")
        local php = php_worker(e, { "--sleep=1", "--max-time=18" })
        others[1] = H.spawn(full, { env = e })
        H.wait_until(function() return H.r("LLEN", H.prefix .. "spec:ended") == 1 end, 40, "the job's end")
        local done = php.wait(40)
        assert.are.equal(0, done.status, done.stdout .. done.stderr)
        assert.are.same({ { by = "lua", tag = "lease", attempt = 1 } }, L12.runs(), w:stderr())
        assert.are.equal(0, opts.left())
    end)
    H.flush()
    leased(60, {}, { "--timeout=120", "--heartbeat=1" }, function(w, e)
        H.wait_until(function() return #L12.runs() == 1 end, 20, "the job's start")
        H.sleep(2.5)
        w:kill_group("KILL")
        local killed = os.time()
        local php = php_worker(e, { "--sleep=0.2", "--max-time=12" })
        H.wait_until(function() return #L12.runs() == 2 end, 15, "Laravel 12's worker to run the job")
        assert.is_true(os.time() - killed <= 5, "took " .. (os.time() - killed) .. " s")
        assert.are.same({ by = "php", tag = "lease", attempt = 2 }, L12.runs()[2])
        php.wait(30)
    end)
end

-- The runs App\Jobs\Recorded recorded, oldest first: {by =, tag =, attempt =}.
function L12.runs()
    local out = {}
    for _, r in ipairs(H.r("LRANGE", H.prefix .. "spec:ran", 0, -1)) do out[#out + 1] = H.json.decode(r) end
    return out
end

-- The attempts each tag ran (sorted), by tag, and how many runs each worker made:
-- seen, {php =, lua =}.
function L12.runs_by_tag()
    local seen, by = {}, { php = 0, lua = 0 }
    for _, r in ipairs(L12.runs()) do
        seen[r.tag] = seen[r.tag] or {}
        seen[r.tag][#seen[r.tag] + 1] = r.attempt
        by[r.by] = by[r.by] + 1
    end
    for _, attempts in pairs(seen) do table.sort(attempts) end
    return seen, by
end

-- App\Jobs\Windowed, a job Laravel 12's RateLimitedWithRedis holds to 3 runs a window
-- of 1 s (Limit::perSecond(3)), in PHP (for L12.job) and as its Lua handler: each run
-- records its tag, who ran it and the start of the limiter's window it ran in (the
-- DurationLimiter's hash, read just after its acquire) in windowed:runs.
L12.WINDOWED_PHP = [[
    public $tries = 0;
    public function __construct(public $n = '1') {}
    public function middleware()
    {
        \Illuminate\Support\Facades\RateLimiter::for('windowed',
            fn () => \Illuminate\Cache\RateLimiting\Limit::perSecond(3));
        return [new \Illuminate\Queue\Middleware\RateLimitedWithRedis('windowed')];
    }
    public function handle()
    {
        $start = \Illuminate\Support\Facades\Redis::hget(md5('windowed'), 'start');
        \Illuminate\Support\Facades\Redis::rpush('windowed:runs', $this->n . ' php ' . $start);
    }
]]

L12.WINDOWED_LUA = [[
local luaworker = require "luaworker"
return {
    middleware = { luaworker.middleware.rate_limited_with_redis("windowed", { max = 3, decay = 1 }) },
    handle = function(_, command)
        local start = luaworker.redis("HGET", luaworker.prefix .. luaworker.php.md5("windowed"), "start")
        luaworker.redis("RPUSH", luaworker.prefix .. "windowed:runs", command.n .. " lua " .. tostring(start))
    end,
}
]]

-- Laravel 12's queue:work and two luaworkers take 12 App\Jobs\Windowed jobs at the
-- same time (opts: connection, the queue connection's name or nil; env, both
-- workers' environment): each runs once, by both runtimes, never more than 3 in one
-- window of the limiter.
function L12.windowed(assert, opts)
    local connection = opts.connection and { opts.connection } or {}
    L12.php([[for ($i = 1; $i <= 12; $i++) { App\Jobs\Windowed::dispatch('w' . $i); }]], opts.env)
    local full = { "queue:work", "--sleep=0", "--max-time=40" }
    for _, a in ipairs(connection) do table.insert(full, 2, a) end
    local php = L12.spawn_artisan(full, opts.env)
    local lua = { "work", "--laravel=" .. L12.VERSION, "--sleep=0", "--no-watch",
        "--handlers=" .. H.handlers({ ["App/Jobs/Windowed.lua"] = L12.WINDOWED_LUA }) }
    for _, a in ipairs(connection) do table.insert(lua, 2, a) end
    local key = H.prefix .. "windowed:runs"
    local workers = {}
    local ok, err = pcall(function()
        -- (the luaworkers start once PHP's worker, slower to start, has run one)
        H.wait_until(function() return H.r("LLEN", key) >= 1 end, 60, "Laravel 12's worker's first run")
        workers = { H.spawn(lua, { env = opts.env }), H.spawn(lua, { env = opts.env }) }
        H.wait_until(function() return H.r("LLEN", key) >= 12 end, 60, "the 12 jobs to run")
        H.sleep(0.5)
        local runs, ran, in_window, by = H.r("LRANGE", key, 0, -1), {}, {}, { php = 0, lua = 0 }
        for _, run in ipairs(runs) do
            local n, who, start = run:match("^(%S+) (%a+) (%S+)$")
            assert.is_nil(ran[n], n .. " ran twice: " .. table.concat(runs, ", "))
            ran[n] = true
            by[who] = by[who] + 1
            in_window[start] = (in_window[start] or 0) + 1
            assert.is_true(in_window[start] <= 3, "more than 3 runs in the window of " .. start .. ": "
                .. table.concat(runs, ", "))
        end
        assert.are.equal(12, #runs)
        assert.is_true(by.php > 0 and by.lua > 0, by.php .. " by php, " .. by.lua .. " by luaworker")
    end)
    for _, w in ipairs(workers) do w:stop() end
    local done = php.wait(60)
    if not ok then error(tostring(err) .. "\nLaravel 12's worker said: " .. done.stdout .. done.stderr, 0) end
end

return L12
