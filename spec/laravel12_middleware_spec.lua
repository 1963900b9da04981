-- luaworker's job middleware beside a real Laravel 12.67 worker (spec/laravel12.lua:
-- ../shared/laravel12, skipped with a plain message where it is absent): a Lua
-- handler and Laravel 12's own middleware on the same class take one limit, by turns,
-- for a class with a displayName() of its own, whose keys Laravel 12 hashes with
-- xxh128 (WithoutOverlapping 12.54+, ThrottlesExceptions 12.41+).
local H = require "spec.helpers"
local L12 = require "spec.laravel12"

local app, missing = L12.app()
local RUNS = H.prefix .. "guarded:runs"

-- App\Jobs\Guarded: records its run, then takes ms milliseconds, or raises for "fail";
-- its middleware by `mode`.
local GUARDED_PHP = [[
    public $tries = 100;
    public function __construct(public $n = '1', public $mode = 'overlap', public $ms = 0) {}
    public function displayName() { return 'Guarded Job'; }
    public function middleware()
    {
        \Illuminate\Support\Facades\RateLimiter::for('payments',
            fn () => \Illuminate\Cache\RateLimiting\Limit::perMinute(1)->by('acme'));
        return match ($this->mode) {
            'overlap' => [(new \Illuminate\Queue\Middleware\WithoutOverlapping('k'))->releaseAfter(30)],
            'exceptions' => [new \Illuminate\Queue\Middleware\ThrottlesExceptions(1, 60)],
            'rate' => [new \Illuminate\Queue\Middleware\RateLimitedWithRedis('payments')],
        };
    }
    public function handle()
    {
        \Illuminate\Support\Facades\Redis::rpush('guarded:runs', $this->n . ' php');
        usleep($this->ms * 1000);
        if ($this->n === 'fail') throw new \RuntimeException('failing');
    }
]]

local GUARDED_LUA = [[
local luaworker = require "luaworker"
local m = luaworker.middleware
return {
    middleware = function(_, command)
        if command.mode == "overlap" then return { m.without_overlapping("k", { release_after = 30 }) } end
        if command.mode == "exceptions" then return { m.throttles_exceptions(1, 60) } end
        return { m.rate_limited_with_redis("payments", { max = 1, decay = 60, by = "acme" }) }
    end,
    handle = function(_, command)
        luaworker.redis("RPUSH", luaworker.prefix .. "guarded:runs", command.n .. " lua")
        luaworker.sleep(command.ms / 1000)
        if command.n == "fail" then error("failing") end
    end,
}
]]

describe("luaworker's job middleware beside a real Laravel 12 worker", function()
    if not app then
        it("is skipped: " .. missing, function() print(missing) end)
        return
    end

    local handlers
    local fleet = H.worker_set()
    setup(function()
        L12.job("Guarded", GUARDED_PHP)
        L12.job("Windowed", L12.WINDOWED_PHP)
        handlers = H.handlers({ ["App/Jobs/Guarded.lua"] = GUARDED_LUA })
    end)
    before_each(H.flush)
    after_each(fleet.stop_all)

    local function dispatch(n, mode, ms)
        L12.php(string.format("App\\Jobs\\Guarded::dispatch('%s', '%s', %d);", n, mode, ms or 0))
    end

    local function luaworker(extra)
        local full = { "work", "--laravel=" .. L12.VERSION, "--handlers=" .. handlers, "--sleep=0",
            "--tries=100" }
        for _, a in ipairs(extra or { "--stop-when-empty" }) do full[#full + 1] = a end
        return full
    end

    local function php_turn()
        local r = L12.artisan({ "queue:work", "--stop-when-empty", "--sleep=0", "--tries=100" })
        assert.are.equal(0, r.status, r.stdout .. r.stderr)
    end

    local function lua_turn()
        local r = H.run(luaworker(), { env = L12.env() })
        assert.are.equal(0, r.status, r.stderr)
    end

    local function held()
        local _, delayed = H.keys()
        return H.r("ZCARD", delayed)
    end

    it("holds Laravel 12's worker back while a Lua handler holds WithoutOverlapping's lock, named by the "
        .. "xxh128 of the class's displayName()", function()
        dispatch("a", "overlap", 3000)
        fleet.spawn(luaworker({ "--no-watch" }), { env = L12.env() })
        H.wait_until(function() return H.r("LLEN", RUNS) == 1 end, 20, "the Lua run")
        dispatch("b", "overlap")
        php_turn()
        assert.are.same({ "a lua" }, H.r("LRANGE", RUNS, 0, -1))
        assert.are.equal(1, held())
    end)

    it("holds Laravel 12's worker back on the exceptions a Lua handler's runs counted (ThrottlesExceptions, "
        .. "its key the xxh128 of the displayName())", function()
        dispatch("fail", "exceptions")
        lua_turn()
        dispatch("b", "exceptions")
        php_turn()
        assert.are.same({ "fail lua" }, H.r("LRANGE", RUNS, 0, -1))
        assert.are.equal(2, held())
    end)

    it("keeps RateLimitedWithRedis's 3 runs a window with Laravel 12's worker and two luaworkers taking the "
        .. "jobs at the same time", function()
        L12.windowed(assert, { env = L12.env() })
    end)

    it("shares RateLimitedWithRedis's window with Laravel 12's worker", function()
        dispatch("a", "rate")
        lua_turn()
        dispatch("b", "rate")
        php_turn()
        dispatch("c", "rate")
        lua_turn()
        assert.are.same({ "a lua" }, H.r("LRANGE", RUNS, 0, -1))
        assert.are.equal(2, held())
    end)
end)
