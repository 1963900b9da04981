-- Handler for App\Jobs\ProcessPodcast (examples/laravel/app/Jobs/ProcessPodcast.php).
-- command holds the job's properties by name, whatever their PHP visibility.
local luaworker = require "luaworker"

local ProcessPodcast = {}

function ProcessPodcast.handle(job, command)
    local tags = command.meta and command.meta.tags or {}
    print(string.format("  podcast %q, episode %s, tags %s, attempt %d of %s",
        command.podcast, tostring(command.episode), table.concat(tags, ","),
        job:attempts(), tostring(job:max_tries())))
    -- Anything the handler needs in Redis: keys get the app's prefix.
    luaworker.redis("INCR", luaworker.prefix .. "podcasts:processed")
end

-- Called once the job has failed for good (after its last attempt).
function ProcessPodcast.failed(job, command, err)
    io.stderr:write("  could not process ", tostring(command.podcast), ": ", tostring(err), "\n")
end

return ProcessPodcast
