-- App\Jobs\Chaos for the bench's lease row: as the PHP class does for kind "ok"
-- (examples/laravel/app/Jobs/Chaos.php), waits `ms` milliseconds, then counts the
-- run in <prefix>chaos:done.
local luaworker = require "luaworker"

return {
    handle = function(job, command)
        luaworker.sleep(command.ms / 1000)
        luaworker.redis("HINCRBY", luaworker.prefix .. "chaos:done", job:uuid(), 1)
    end,
}
