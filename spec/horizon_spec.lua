-- `luaworker work --horizon`: Horizon's records of the jobs luaworker runs, held
-- against Horizon's own PHP classes: laravel/horizon 5.22.1 (../shared/horizon,
-- its sources; it runs in Debian's Laravel 8) installed in a copy of the example
-- app, whose RedisQueue writes the records of the pushes and whose
-- JobRepository and MetricsRepository read back what luaworker wrote. They must
-- report what they report after the app's own `queue:work` (which, Horizon
-- installed, keeps the same records) ran the same jobs.
local H = require "spec.helpers"
local cjson = H.json

local TARBALL = H.root .. "/../shared/horizon/horizon-v5.22.1.tar.xz"

local HANDLERS = {
    ["App/Jobs/Simple.lua"] = [[
local luaworker = require "luaworker"
return { handle = function(job, command)
    if command.n == "dispatch" then luaworker.dispatch("App\\Jobs\\Simple", { n = "x" }) end
end }
]],
    ["App/Jobs/Failing.lua"] = 'return { handle = function() error("Failing job failed") end }',
    ["App/Jobs/WithModel.lua"] = [[
local luaworker = require "luaworker"
return { handle = function(job, command) luaworker.dispatch("App\\Jobs\\WithModel", command) end }
]],
    ["App/Jobs/Tagged.lua"] = [[
local luaworker = require "luaworker"
return {
    tags = function(command) return { "render", "video:" .. command.video, "render" } end,
    handle = function(job, command) luaworker.dispatch("App\\Jobs\\Tagged", command) end,
}
]],
    ["App/Jobs/Quiet.lua"] = [[
local luaworker = require "luaworker"
return {
    silenced = true,
    handle = function(job, command)
        if command.again then luaworker.dispatch("App\\Jobs\\Quiet", { again = false }) end
    end,
}
]],
    ["App/Jobs/Releasing.lua"] = [[
return { handle = function(job, command)
    if job:attempts() <= command.releaseTimes then job:release(command.releaseDelay) end
end }
]],
}

-- What Horizon's repositories report, read by PHP in the app: each list's jobs
-- (name, status, queue, connection), the counts, the measured jobs and queues with
-- their throughput; with the argument `snapshot`, then the snapshot the app's
-- scheduled horizon:snapshot takes of those metrics (MetricsRepository::snapshot,
-- which resets them), as the Metrics panel's charts read it: each snapshot's
-- throughput, and whether it has a runtime (the two runtimes' own).
local READ = [[<?php
require __DIR__.'/bootstrap/autoload.php';
$app = require __DIR__.'/bootstrap/app.php';
$app->make(Illuminate\Contracts\Console\Kernel::class)->bootstrap();
$jobs = $app->make(Laravel\Horizon\Contracts\JobRepository::class);
$metrics = $app->make(Laravel\Horizon\Contracts\MetricsRepository::class);
$tags = $app->make(Laravel\Horizon\Contracts\TagRepository::class);
if (($argv[1] ?? '') === 'monitor') {
    $tags->monitor($argv[2]);
    exit(0);
}
$redis = $app->make('redis')->connection('horizon');
$monitoredIds = $redis->zrange('monitored_jobs', 0, -1);
$list = function ($found) {
    return collect($found)->map(function ($j) {
        return [$j->name, $j->status, $j->queue, $j->connection];
    })->sortBy(function ($j) { return implode(' ', $j); })->values()->all();
};
$measured = collect($metrics->measuredJobs())->sort()->values()->all();
echo json_encode([
    'recent' => $list($jobs->getRecent()),
    'completed' => $list($jobs->getCompleted()),
    'failed' => $list($jobs->getFailed()),
    'pending' => $list($jobs->getPending()),
    'silenced' => $list($jobs->getSilenced()),
    'counts' => [$jobs->countRecent(), $jobs->countCompleted(), $jobs->countFailed(),
        $jobs->countPending(), $jobs->countRecentlyFailed(), $jobs->countSilenced()],
    'measured_jobs' => $measured,
    'measured_queues' => collect($metrics->measuredQueues())->sort()->values()->all(),
    'throughput' => collect($measured)->mapWithKeys(function ($j) use ($metrics) {
        return [$j => $metrics->throughputForJob($j)];
    })->all(),
    'queue_throughput' => $metrics->throughputForQueue('default'),
    'failed_exception' => collect($jobs->getFailed())->map(function ($j) {
        return strtok($j->exception, "\n") !== false;
    })->all(),
    'tag_count' => $tags->count('App\Models\User:1'),
    'monitored' => $list($jobs->getJobs($monitoredIds)),
    'snapshots' => ($argv[1] ?? '') !== 'snapshot' ? null : (function () use ($metrics, $measured) {
        $metrics->snapshot();
        $read = function ($found) {
            return collect($found)->map(function ($s) {
                return [$s->throughput, is_numeric($s->runtime) && $s->runtime >= 0];
            })->all();
        };
        return ['jobs' => collect($measured)->mapWithKeys(function ($j) use ($metrics, $read) {
            return [$j => $read($metrics->snapshotsForJob($j))];
        })->all(), 'queue' => $read($metrics->snapshotsForQueue('default'))];
    })(),
]);
]]

-- A job class with its own tags(), in the app's copy; its handler's `tags` says the
-- same (one tag twice: Tags::for keeps each once).
local TAGGED = [[<?php
namespace App\Jobs;

use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;

class Tagged implements ShouldQueue
{
    use Dispatchable, InteractsWithQueue, Queueable;

    public $video;

    public function __construct($video = 5)
    {
        $this->video = $video;
    }

    public function tags()
    {
        return ['render', 'video:' . $this->video, 'render'];
    }

    public function handle()
    {
    }
}
]]

-- A job class Horizon silences (its handler says silenced = true).
local QUIET = [[<?php
namespace App\Jobs;

use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;
use Laravel\Horizon\Contracts\Silenced;

class Quiet implements ShouldQueue, Silenced
{
    use Dispatchable, InteractsWithQueue, Queueable;

    public $again;

    public function __construct($again = false)
    {
        $this->again = $again;
    }

    public function handle()
    {
    }
}
]]

describe("luaworker work --horizon", function()
    local app

    setup(function()
        if not H.read_file(TARBALL) then return end
        H.laravel_setup()
        app = H.tmpdir() .. "/app"
        assert(os.execute("cp -r " .. H.quote(H.app) .. " " .. H.quote(app)))
        assert(os.execute("mkdir -p " .. H.quote(app .. "/horizon/routes") .. " && tar xf " .. H.quote(TARBALL)
            .. " -C " .. H.quote(app .. "/horizon") .. " --strip-components=1"))
        H.write_file(app .. "/horizon/routes/web.php", "<?php\n")  -- the tarball has no routes; nothing here serves HTTP
        assert(os.execute("cp " .. H.quote(app .. "/horizon/config/horizon.php") .. " " .. H.quote(app .. "/config/")))
        local autoload = H.read_file(app .. "/bootstrap/autoload.php")
        H.write_file(app .. "/bootstrap/autoload.php", (autoload:gsub("('App\\\\' => %$base%.'/app/',)",
            "%1\n            'Laravel\\\\Horizon\\\\' => $base.'/horizon/src/',", 1)))
        local config = H.read_file(app .. "/config/app.php")
        H.write_file(app .. "/config/app.php", (config:gsub("(App\\Providers\\EventServiceProvider::class,)",
            "%1\n        Laravel\\Horizon\\HorizonServiceProvider::class,", 1)))
        H.write_file(app .. "/read_horizon.php", READ)
        H.write_file(app .. "/app/Jobs/Tagged.php", TAGGED)
        H.write_file(app .. "/app/Jobs/Quiet.php", QUIET)
        -- config('horizon.silenced') from HORIZON_SILENCED, as luaworker reads it
        local horizon_config = H.read_file(app .. "/config/horizon.php")
        local silenced_config, found = horizon_config:gsub("'silenced' => %[",
            "'silenced' => array_filter(array_map('trim', explode(',', (string) env('HORIZON_SILENCED')))), 'unread' => [", 1)
        assert(found == 1, "config/horizon.php has no 'silenced'")
        H.write_file(app .. "/config/horizon.php", silenced_config)
    end)

    -- (env: more variables, name -> value)
    local function php(args, env)
        local words = { "cd", H.quote(app), "&&", "env", "REDIS_HOST=127.0.0.1", "REDIS_PORT=" .. H.port }
        for name, value in pairs(env or {}) do words[#words + 1] = H.quote(name .. "=" .. value) end
        words[#words + 1] = "php"
        for _, a in ipairs(args) do words[#words + 1] = H.quote(a) end
        local p = io.popen(table.concat(words, " ") .. " 2>&1")
        local out = p:read("*a")
        local ok = p:close()
        assert(ok, out)
        return out
    end

    local function dispatch_all()
        php({ "artisan", "jobs:dispatch", "Simple", '--args=["a"]' })
        php({ "artisan", "jobs:dispatch", "Failing" })
        php({ "artisan", "jobs:dispatch", "Releasing", "--args=[1, 0, 1]" })
    end

    local function read(what)
        return cjson.decode(php({ "read_horizon.php", what }))
    end

    it("keeps the records Horizon's repositories read as they read the app's own worker's", function()
        if not app then
            return pending("../shared/horizon is absent: Horizon's PHP classes are not there to check against")
        end
        H.flush()
        dispatch_all()
        php({ "artisan", "queue:work", "--stop-when-empty", "--sleep=0" })
        local by_php = read("snapshot")

        H.flush()
        dispatch_all()
        local r = H.run({ "work", "--horizon", "--stop-when-empty", "--sleep=0.05",
            "--handlers=" .. H.handlers(HANDLERS) })
        assert.are.equal(0, r.status, r.stderr)
        local by_luaworker = read("snapshot")

        assert.are.same(by_php, by_luaworker)
        -- and what they hold: two completed, one failed with its exception, the metrics
        assert.are.same({ { "App\\Jobs\\Failing", "failed", "default", "redis" } }, by_luaworker.failed)
        assert.are.equal(2, #by_luaworker.completed)
        assert.are.same({ "App\\Jobs\\Releasing", "App\\Jobs\\Simple" }, by_luaworker.measured_jobs)
        assert.are.equal(2, by_luaworker.queue_throughput)
        -- the Metrics panel's charts: a snapshot of each, throughput as counted
        assert.are.same({ { "1", true } }, by_luaworker.snapshots.jobs["App\\Jobs\\Simple"])
        assert.are.same({ { "2", true } }, by_luaworker.snapshots.queue)
    end)

    it("gives the jobs it pushes the payload and the record Horizon's queue gives a push", function()
        if not app then
            return pending("../shared/horizon is absent: Horizon's PHP classes are not there to check against")
        end
        local list = H.keys()
        local function normal(text)
            return (text:gsub('"uuid":"[^"]*"', '"uuid":"U"'):gsub('"id":"[^"]*"', '"id":"U"')
                :gsub('"pushedAt":"[^"]*"', '"pushedAt":"T"'))
        end
        H.flush()
        php({ "artisan", "jobs:dispatch", "Simple", '--args=["x"]' })
        local by_php, read_php = H.r("LINDEX", list, 0), read()

        H.flush()
        php({ "artisan", "jobs:dispatch", "Simple", '--args=["dispatch"]' })
        local r = H.run({ "work", "--horizon", "--once", "--handlers=" .. H.handlers(HANDLERS) })
        assert.are.equal(0, r.status, r.stderr)
        local by_luaworker = H.r("LINDEX", list, 0)
        assert.matches('"tags":%[%],"silenced":false,"pushedAt":"%d+%.%d+"}$', by_luaworker)
        assert.are.equal(normal(by_php), normal(by_luaworker))
        -- the pending job (the one it pushed) as Horizon reads it, beside the one it ran
        local read_luaworker = read()
        assert.are.same(read_php.pending, read_luaworker.pending)
        assert.are.same({ { "App\\Jobs\\Simple", "pending", "default", "redis" } }, read_luaworker.pending)
    end)

    -- The Horizon fields (type, tags, silenced) of the job the app pushes of class
    -- (jobs:dispatch's name), and of the one luaworker pushes as it runs that job (its
    -- handler dispatches it again).
    -- (args: jobs:dispatch's --args, or nil; env: both workers' more variables)
    local function pushed_fields(class, args, env)
        local list = H.keys()
        local function horizon_fields(text)
            return text:match('("type":.*),"pushedAt"')
        end
        H.flush()
        php({ "artisan", "jobs:dispatch", class, args and ("--args=" .. args) or nil }, env)
        local by_php = horizon_fields(H.r("LINDEX", list, 0))
        local r = H.run({ "work", "--horizon", "--once", "--handlers=" .. H.handlers(HANDLERS) }, { env = env })
        assert.are.equal(0, r.status, r.stderr)
        return by_php, horizon_fields(H.r("LINDEX", list, 0))
    end

    it("tags the jobs it pushes by the models their properties name, as Horizon's Tags::for", function()
        if not app then
            return pending("../shared/horizon is absent: Horizon's PHP classes are not there to check against")
        end
        local by_php, by_luaworker = pushed_fields("WithModel")
        assert.are.equal('"type":"job","tags":["App\\\\Models\\\\User:1","App\\\\Models\\\\User:2"],"silenced":false', by_php)
        assert.are.equal(by_php, by_luaworker)
    end)

    it("tags the jobs it pushes by their handler's tags, as Horizon's Tags::for by a class's own tags()",
        function()
        if not app then
            return pending("../shared/horizon is absent: Horizon's PHP classes are not there to check against")
        end
        local by_php, by_luaworker = pushed_fields("Tagged")
        assert.are.equal('"type":"job","tags":["render","video:5"],"silenced":false', by_php)
        assert.are.equal(by_php, by_luaworker)
    end)

    it("silences the jobs it pushes as Horizon's JobPayload: a Silenced class by its handler's silenced, "
        .. "a class HORIZON_SILENCED names (config horizon.silenced)", function()
        if not app then
            return pending("../shared/horizon is absent: Horizon's PHP classes are not there to check against")
        end
        local by_php, by_luaworker = pushed_fields("Quiet", "[true]")
        assert.are.equal('"type":"job","tags":[],"silenced":true', by_php)
        assert.are.equal(by_php, by_luaworker)
        local env = { HORIZON_SILENCED = "App\\Jobs\\Tagged, App\\Jobs\\Simple" }
        by_php, by_luaworker = pushed_fields("Simple", '["dispatch"]', env)
        assert.are.equal('"type":"job","tags":[],"silenced":true', by_php)
        assert.are.equal(by_php, by_luaworker)
        -- and not another class
        by_php, by_luaworker = pushed_fields("Simple", '["dispatch"]', { HORIZON_SILENCED = "App\\Jobs\\Simpler" })
        assert.are.equal('"type":"job","tags":[],"silenced":false', by_php)
        assert.are.equal(by_php, by_luaworker)
    end)

    it("refuses, naming the handler, a tags that is not a function or a silenced that is not a boolean",
        function()
        local function tried(field)
            H.flush()
            H.dispatch("Simple", '--args=["dispatch"]')
            -- (the class it dispatches is its own: its handler has the bad field)
            local handlers = H.handlers({ ["App/Jobs/Simple.lua"] = (HANDLERS["App/Jobs/Simple.lua"]:gsub(
                "return { handle", "return { " .. field .. ", handle")) })
            local r = H.run({ "work", "--horizon", "--once", "--tries=1", "--handlers=" .. handlers })
            return r.stderr
        end
        assert.matches("Simple.lua: silenced must be true or false, got string", tried('silenced = "yes"'), 1, true)
        assert.matches("Simple.lua: tags must be a function(command) returning a list, got table",
            tried('tags = { "a" }'), 1, true)
    end)

    it("lists the silenced jobs it runs among Horizon's silenced jobs, not the completed, as the app's "
        .. "worker does", function()
        if not app then
            return pending("../shared/horizon is absent: Horizon's PHP classes are not there to check against")
        end
        local env = { HORIZON_SILENCED = "App\\Jobs\\Simple" }
        local function run(worker)
            H.flush()
            php({ "artisan", "jobs:dispatch", "Quiet" }, env)
            php({ "artisan", "jobs:dispatch", "Simple", '--args=["a"]' }, env)
            php({ "artisan", "jobs:dispatch", "Tagged" }, env)
            worker()
            return read()
        end
        local by_php = run(function() php({ "artisan", "queue:work", "--stop-when-empty", "--sleep=0" }, env) end)
        local handlers = H.handlers({ ["App/Jobs/Tagged.lua"] = "return { handle = function() end }",
            ["App/Jobs/Quiet.lua"] = HANDLERS["App/Jobs/Quiet.lua"], ["App/Jobs/Simple.lua"] = HANDLERS["App/Jobs/Simple.lua"] })
        local by_luaworker = run(function()
            local r = H.run({ "work", "--horizon", "--stop-when-empty", "--handlers=" .. handlers }, { env = env })
            assert.are.equal(0, r.status, r.stderr)
        end)
        assert.are.same(by_php, by_luaworker)
        assert.are.same({ { "App\\Jobs\\Quiet", "completed", "default", "redis" },
            { "App\\Jobs\\Simple", "completed", "default", "redis" } }, by_luaworker.silenced)
        assert.are.same({ { "App\\Jobs\\Tagged", "completed", "default", "redis" } }, by_luaworker.completed)
    end)

    it("trims Horizon's lists as its master's loop does, by the trim settings", function()
        if not app then
            return pending("../shared/horizon is absent: Horizon's PHP classes are not there to check against")
        end
        H.flush()
        local handlers = H.handlers(HANDLERS)
        php({ "artisan", "jobs:dispatch", "Simple", '--args=["a"]' })
        assert.are.equal(0, H.run({ "work", "--horizon", "--stop-when-empty", "--handlers=" .. handlers }).status)
        local a = H.r("ZRANGE", "laravel_horizon:completed_jobs", 0, -1)
        assert.are.equal(1, #a)
        php({ "artisan", "jobs:dispatch", "Simple", '--args=["b"]' })
        H.sleep(1.1)  -- the trims' cut is a whole second
        -- trims at start: every job at least 0 minutes old leaves the recent and
        -- completed lists; the one it then runs is completed after them
        local r = H.run({ "work", "--horizon", "--stop-when-empty", "--handlers=" .. handlers },
            { env = { HORIZON_TRIM_RECENT = "0", HORIZON_TRIM_COMPLETED = "0" } })
        assert.are.equal(0, r.status, r.stderr)
        assert.are.same({}, H.r("ZRANGE", "laravel_horizon:recent_jobs", 0, -1))
        local b = H.r("ZRANGE", "laravel_horizon:completed_jobs", 0, -1)
        assert.are.equal(1, #b)
        assert.are_not.equal(a[1], b[1])
        assert.are.equal("completed", H.r("HGET", "laravel_horizon:" .. a[1], "status"))
    end)

    it("keeps a monitored tag's jobs as Horizon does", function()
        if not app then
            return pending("../shared/horizon is absent: Horizon's PHP classes are not there to check against")
        end
        local plain = H.handlers({ ["App/Jobs/WithModel.lua"] = "return { handle = function() end }" })
        local function run(worker)
            H.flush()
            php({ "read_horizon.php", "monitor", "App\\Models\\User:1" })
            php({ "artisan", "jobs:dispatch", "WithModel" })
            worker()
            return read()
        end
        local by_php = run(function() php({ "artisan", "queue:work", "--once" }) end)
        local by_luaworker = run(function()
            assert.are.equal(0, H.run({ "work", "--horizon", "--once", "--handlers=" .. plain }).status)
        end)
        assert.are.same({ { "App\\Jobs\\WithModel", "completed", "default", "redis" } }, by_php.monitored)
        assert.are.same(by_php.monitored, by_luaworker.monitored)
        assert.are.same(by_php.tag_count, by_luaworker.tag_count)
    end)

    it("refuses --horizon at start, status 2, where it cannot be kept: the database queue, a Redis Cluster "
        .. "below Laravel 13.5", function()
        local handlers = H.handlers(HANDLERS)
        local r = H.run({ "work", "database", "--horizon", "--handlers=" .. handlers },
            { env = { DB_CONNECTION = "sqlite", DB_DATABASE = "/nonexistent.sqlite" } })
        assert.are.equal(2, r.status)
        assert.matches("cannot start: %-%-horizon: Horizon keeps records of Redis queues only", r.stderr)
        r = H.run({ "work", "--horizon", "--handlers=" .. handlers },
            { env = { REDIS_CLUSTER_NODES = "127.0.0.1:1", REDIS_QUEUE = "{default}" } })
        assert.are.equal(2, r.status)
        assert.matches("cannot start: --horizon: on a Redis Cluster Horizon keeps its records there from Laravel "
            .. "13.5 on", r.stderr, 1, true)
    end)

    it("keeps none without --horizon", function()
        if not app then
            return pending("../shared/horizon is absent: Horizon's PHP classes are not there to check against")
        end
        H.flush()
        dispatch_all()
        local before = H.r("KEYS", "laravel_horizon:*")
        local r = H.run({ "work", "--stop-when-empty", "--sleep=0.05", "--handlers=" .. H.handlers(HANDLERS) })
        assert.are.equal(0, r.status, r.stderr)
        -- the pushes' records (Horizon's RedisQueue, in PHP) alone: none was marked
        local statuses = {}
        for _, k in ipairs(H.r("KEYS", "laravel_horizon:*")) do
            if H.r("TYPE", k) == "hash" then statuses[#statuses + 1] = H.r("HGET", k, "status") end
        end
        assert.are.same({ "pending", "pending", "pending" }, statuses)
        assert.are.equal(#before, #H.r("KEYS", "laravel_horizon:*"))
    end)

    it("retries a failed job from Horizon's dashboard (its RetryFailedJob) as the app's worker does: the "
        .. "payload pushed again, retried_by kept on the failed job, then the retry's end", function()
        if not app then
            return pending("../shared/horizon is absent: Horizon's PHP classes are not there to check against")
        end
        local handlers = H.handlers(HANDLERS)
        -- the failed job, as luaworker leaves it; then the dashboard's retry, dispatched
        H.flush()
        php({ "artisan", "jobs:dispatch", "Failing" })
        local r = H.run({ "work", "--horizon", "--stop-when-empty", "--sleep=0.05", "--handlers=" .. handlers })
        assert.are.equal(0, r.status, r.stderr)
        local failed_id = H.r("ZRANGE", "laravel_horizon:failed_jobs", 0, 0)[1]
        H.write_file(app .. "/retry_horizon.php", "<?php\nrequire __DIR__.'/bootstrap/autoload.php';\n"
            .. "$app = require __DIR__.'/bootstrap/app.php';\n"
            .. "$app->make(Illuminate\\Contracts\\Console\\Kernel::class)->bootstrap();\n"
            .. "dispatch(new Laravel\\Horizon\\Jobs\\RetryFailedJob($argv[1]));\n")
        php({ "retry_horizon.php", failed_id })
        local state = H.snapshot()
        -- what each worker leaves: the retry, run and failed again, noted on the parent
        local function outcome()
            local retried = cjson.decode(H.r("HGET", "laravel_horizon:" .. failed_id, "retried_by"))
            assert.are.equal(1, #retried)
            local retry = H.hash("laravel_horizon:" .. retried[1].id)
            local payload = cjson.decode(retry.payload)
            return { status = retried[1].status, keys = (function()
                local k = {}
                for name in pairs(retried[1]) do k[#k + 1] = name end
                table.sort(k)
                return k
            end)(), retry_status = retry.status, retry_of = payload.retry_of, attempts_pushed = payload.attempts,
                same_id = payload.uuid == retried[1].id and payload.id == retried[1].id,
                read = read() }
        end
        php({ "artisan", "queue:work", "--stop-when-empty", "--sleep=0" })
        local by_php = outcome()
        H.restore(state)
        r = H.run({ "work", "--horizon", "--stop-when-empty", "--sleep=0.05", "--handlers=" .. handlers })
        assert.are.equal(0, r.status, r.stderr)
        local by_luaworker = outcome()
        assert.are.same(by_php, by_luaworker)
        assert.are.equal("failed", by_luaworker.status)
        assert.are.equal(failed_id, by_luaworker.retry_of)
        assert.is_true(by_luaworker.same_id)
    end)
end)
