-- luaworker.payload: values as Laravel's payloads and serialized commands hold them.
local cjson = require "cjson"

local M = {}

-- The "job" of every object job (a string job names its own Class@method).
M.CALL_QUEUED_HANDLER = "Illuminate\\Queue\\CallQueuedHandler@call"

local null = cjson.null  -- the same value as luaworker.php's null

-- v, with JSON's and PHP's null as nil.
function M.value(v)
    if v == null then return nil end
    return v
end

-- PHP's truthiness, for `$a ?: $b`.
function M.truthy(v)
    if v == null then return false end
    return v ~= nil and v ~= false and v ~= "" and v ~= 0 and v ~= "0"
end

return M
