-- App\Jobs\Chaos (examples/laravel/app/Jobs/Chaos.php) for the chaos soak: does what
-- the PHP class's handle() does. Each run counts in chaos:runs <uuid> before anything
-- else, so a run the driver did not expect shows as a duplicate; a job that succeeds
-- counts in chaos:done <uuid>.
local luaworker = require "luaworker"

local P = luaworker.prefix

local Chaos = {}

function Chaos.handle(job, command)
    local uuid = job:uuid()
    luaworker.redis("HINCRBY", P .. "chaos:runs", uuid, 1)
    if command.ms > 0 then luaworker.sleep(command.ms / 1000) end

    if command.kind == "fail" then
        error(luaworker.exception("RuntimeException", "chaos: failing on purpose"), 0)
    end
    if command.kind == "release" and job:attempts() <= command.releases then
        job:release(command.releaseDelay)
        return
    end
    if command.kind == "delayed" and os.time() < command.dueAt then
        luaworker.redis("HINCRBY", P .. "chaos:early", uuid, 1)
    end
    luaworker.redis("HINCRBY", P .. "chaos:done", uuid, 1)
end

return Chaos
