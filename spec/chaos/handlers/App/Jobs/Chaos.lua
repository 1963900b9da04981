-- App\Jobs\Chaos (examples/laravel/app/Jobs/Chaos.php) for the chaos soak: does what
-- the PHP class's handle() does. Each run counts in chaos:runs <uuid> before anything
-- else, so a run the driver did not expect shows as a duplicate, and starts its trail
-- ("s <uuid> <attempt> <pid>" on chaos:trail, ended by init.lua); a job that succeeds
-- counts in chaos:done <uuid>. On a queue named with a hash tag (a Redis Cluster's
-- {default}) the keys have it too (chaos:{default}:runs...): they live in the
-- queue's slot, and the EVAL's two keys in one slot (keys.lua).
local luaworker = require "luaworker"
local pid = require "pid"
local keys = require "keys"

-- the run's count and the start of its trail, together or not at all
local START = "redis.call('hincrby', KEYS[1], ARGV[1], 1) redis.call('rpush', KEYS[2], ARGV[2])"

local Chaos = {}

function Chaos.handle(job, command)
    local uuid = job:uuid()
    local K = keys(job)
    luaworker.redis("EVAL", START, 2, K .. "runs", K .. "trail", uuid,
        string.format("s %s %d %s", uuid, job:attempts(), pid))
    if command.ms > 0 then luaworker.sleep(command.ms / 1000) end

    if command.kind == "fail" then
        error(luaworker.exception("RuntimeException", "chaos: failing on purpose"), 0)
    end
    if command.kind == "release" and job:attempts() <= command.releases then
        job:release(command.releaseDelay)
        return
    end
    if command.kind == "delayed" and os.time() < command.dueAt then
        luaworker.redis("HINCRBY", K .. "early", uuid, 1)
    end
    luaworker.redis("HINCRBY", K .. "done", uuid, 1)
end

return Chaos
