-- luaworker.base.log: errors and notices for the operator, on stderr, each a line
-- written at once ("[Y-m-d H:i:s][<payload id>] message"), and text made safe for a
-- log line (payload values cannot split or forge a line, nor send an escape
-- sequence to the operator's terminal). The job lines are luaworker.worker.output's.
local M = {}

-- s (any value) with its control characters as \xNN (C0 and DEL; C1 as \u00NN).
function M.text(s)
    s = tostring(s)
    if not s:find("[%z\1-\31\127\194]") then return s end
    s = s:gsub("[%z\1-\31\127]", function(c) return string.format("\\x%02x", c:byte()) end)
    s = s:gsub("\194([\128-\159])", function(c) return string.format("\\u%04x", c:byte()) end)
    return s
end

-- An error or notice, on stderr. job (a job, or nil) names the line by its payload
-- id. Each line is one write, so the lines of worker processes sharing the stream
-- do not tear into each other.
-- The longest message a line holds; the rest is said as its length (a handler's
-- error of 100 MB is kept whole in the failed store, not in the log).
local LONGEST = 65536

function M.error(message, job)
    local where = job and ("[" .. M.text(job:id()) .. "] ") or " "
    if #message > LONGEST then
        message = message:sub(1, LONGEST) .. string.format("... (%d more bytes)", #message - LONGEST)
    end
    io.stderr:write("[" .. os.date("%Y-%m-%d %H:%M:%S") .. "]" .. where .. message .. "\n")
    io.stderr:flush()
end

return M
