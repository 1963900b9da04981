-- luaworker.base.values: the values every layer shares: PHP's and JSON's null (the
-- same value, cjson.null, which luaworker.php gives too), the error values with a
-- class (a PHP exception's class and message, shown as "Class: message"), and PHP's
-- reading of payload values (null as nil, truthiness).
local cjson = require "cjson"

local M = {}

-- The "job" of every object job (a string job names its own Class@method).
M.CALL_QUEUED_HANDLER = "Illuminate\\Queue\\CallQueuedHandler@call"

M.null = cjson.null
local null = M.null

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

-- An error value with a class, shown as "Class: message" (like a PHP exception).
local Exception = {}
Exception.__index = Exception
-- "Class: message", or the class alone without a message (as PHP prints an
-- exception with an empty one).
Exception.__tostring = function(e)
    local message = e.message
    if message == nil or message == "" then return tostring(e.class) end
    return tostring(e.class) .. ": " .. tostring(message)
end

function M.exception(class, message)
    return setmetatable({ class = class, message = message }, Exception)
end

function M.is_exception(v)
    return getmetatable(v) == Exception
end

return M
