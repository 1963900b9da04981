-- luaworker.base.periodic: work a process does now and then beside its jobs (the
-- queues' sizes for the metrics, the worker's record for `status`, Horizon's
-- trims): fn() at once, then every `seconds`, in a task of its own, until the
-- process gives up (settings.giving_up: a stop or a reload also ends the wait). An
-- error of fn is said once ("cannot <what> (tried again every N s): ..."), and
-- again only after fn has succeeded since.
local host = require "luaworker.host"
local task = require "luaworker.loop.task"
local settings = require "luaworker.base.settings"
local log = require "luaworker.base.log"

local M = {}

function M.start(seconds, fn, what)
    local said = false
    task.spawn(function(_, ok, err, trace)
        if not ok then log.error("internal error while trying to " .. what .. ": " .. tostring(trace or err)) end
    end, nil, function()
        while true do
            local ok, err, trace = task.run(fn)
            if ok then
                said = false
            elseif not said then
                said = true
                log.error(string.format("cannot %s (tried again every %g s): %s", what, seconds,
                    tostring(trace or err)))
            end
            host.sleep(seconds, true)
            if settings.giving_up() then return end
        end
    end)
end

return M
