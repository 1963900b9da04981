-- luaworker.base.values: the values every layer shares: PHP's and JSON's null (the
-- same value, cjson.null, which luaworker.php gives too), the error values with a
-- class (a PHP exception's class and message, shown as "Class: message"), and PHP's
-- reading of payload values (null as nil, truthiness), and the exact text of a
-- number or an int64.
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

-- The digits of an int64_t or uint64_t cdata (PHP's integers beyond 2^53), or nil
-- for any other value.
function M.integer_digits(v)
    if type(v) ~= "cdata" then return nil end
    return tostring(v):match("^(%-?%d+)U?LL$")
end

-- A finite number with the fewest digits (14 to 17) that read back as it; an
-- integer below integers (in magnitude) with all its digits and no exponent.
function M.number_text(n, integers)
    if n == math.floor(n) and math.abs(n) < integers then return string.format("%d", n) end
    for digits = 14, 17 do
        local s = string.format("%." .. digits .. "g", n)
        if tonumber(s) == n then return s end
    end
    return string.format("%.17g", n)
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

-- Checks an option given as a whole number: v, named name, of what (a function's
-- name, for the message), from least up. Returns v; raises "<what>: <name> = <v>:
-- expected a whole number from <least>" at level (as error's, counted from here).
function M.whole(what, name, v, least, level)
    if type(v) ~= "number" or v < least or v ~= math.floor(v) then
        error(string.format("%s: %s = %s: expected a whole number from %d", what, name, tostring(v), least),
            level)
    end
    return v
end

return M
