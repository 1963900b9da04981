-- luaworker.base.json: luaworker.json, cjson (decode, null and the rest as they are)
-- with an encode that takes any value a command holds, exactly: an int64_t or
-- uint64_t cdata (PHP's integers beyond 2^53), as a value or a key, is written as its
-- digits, where cjson raises "Cannot serialise cdata"; a number cjson's 14 digits
-- would change (an integer from 10^14 on, 0.1 + 0.2) is written with the fewest
-- digits that read back the same, as PHP's json_encode writes it. Other values
-- encode as cjson encodes them, and what cjson refuses (a function, a cycle) it
-- still refuses.
local cjson = require "cjson"
local host = require "luaworker.host"
local values = require "luaworker.base.values"

local M = setmetatable({}, { __index = cjson })

-- The text of number n when cjson's would not read back as n, else nil.
local function exact_text(n)
    if n ~= n or n == math.huge or n == -math.huge then return nil end  -- cjson refuses these
    if tonumber(string.format("%.14g", n)) == n then return nil end
    return values.number_text(n, 2 ^ 63)
end

-- Whether v holds something cjson would refuse or write inexactly (see above).
local function needs_care(v, seen)
    local kind = type(v)
    if kind == "cdata" then return values.integer_digits(v) ~= nil end
    if kind == "number" then return exact_text(v) ~= nil end
    if kind ~= "table" or seen[v] then return false end
    seen[v] = true
    for k, x in pairs(v) do
        if values.integer_digits(k) or needs_care(x, seen) then return true end
    end
    return false
end

-- A copy of v with each such value replaced by a token (tokens[i] its text) and
-- each cdata key by its digits; tables met again map to the same copy.
local function replaced(v, token, tokens, copies)
    local exact = values.integer_digits(v) or type(v) == "number" and exact_text(v)
    if exact then
        tokens[#tokens + 1] = exact
        return token .. #tokens
    end
    if type(v) ~= "table" then return v end
    if copies[v] then return copies[v] end
    local copy = {}
    copies[v] = copy
    for k, x in pairs(v) do
        copy[values.integer_digits(k) or k] = replaced(x, token, tokens, copies)
    end
    return copy
end

function M.encode(v)
    if not needs_care(v, {}) then return cjson.encode(v) end
    -- a token no value holds: random, looked for in nothing but this call's output
    local token = "luaworker_exact_" .. host.uuid():gsub("%-", "") .. "_"
    local tokens = {}
    local text = cjson.encode(replaced(v, token, tokens, {}))
    return (text:gsub('"' .. token .. '(%d+)"', function(i) return tokens[tonumber(i)] end))
end

return M
