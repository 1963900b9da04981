-- Succeeds: reads its command, talks to Redis, encodes and decodes PHP values.
local luaworker = require "luaworker"

return {
    handle = function(job, command)
        local php = luaworker.php
        local copy = php.unserialize(php.serialize(command))
        luaworker.redis("INCR", luaworker.prefix .. "valgrind:succeeded")
        luaworker.redis("SET", luaworker.prefix .. "valgrind:last",
            luaworker.json.encode({ id = job:id(), n = copy.n, tags = copy.tags }))
    end,
}
