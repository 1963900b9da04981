-- luaworker.base.json: luaworker.json, cjson (decode, null and the rest as they are)
-- with an encode that takes any value a command holds: an int64_t or uint64_t
-- cdata (PHP's integers beyond 2^53), as a value or a key, is written as its exact
-- digits, where cjson raises "Cannot serialise cdata". Other values encode as cjson
-- encodes them, and what cjson refuses (a function, a cycle) it still refuses.
local cjson = require "cjson"
local host = require "luaworker.host"

local M = setmetatable({}, { __index = cjson })

local function digits(v)
    return (tostring(v):gsub("U?LL$", ""))
end

-- A copy of v with each cdata value replaced by a token (tokens[i] its digits) and
-- each cdata key by its digits; tables met again map to the same copy.
local function is_integer(v)
    return type(v) == "cdata" and tostring(v):match("^%-?%d+U?LL$") ~= nil
end

local function replaced(v, token, tokens, copies)
    if is_integer(v) then
        tokens[#tokens + 1] = digits(v)
        return token .. #tokens
    end
    if type(v) ~= "table" then return v end
    if copies[v] then return copies[v] end
    local copy = {}
    copies[v] = copy
    for k, x in pairs(v) do
        copy[is_integer(k) and digits(k) or k] = replaced(x, token, tokens, copies)
    end
    return copy
end

function M.encode(v)
    local ok, text = pcall(cjson.encode, v)
    if ok then return text end
    if not tostring(text):find("cdata", 1, true) then error(text, 2) end
    -- a token no value holds: random, tried against nothing but this call's output
    local token = "luaworker_int64_" .. host.uuid():gsub("%-", "") .. "_"
    local tokens = {}
    text = cjson.encode(replaced(v, token, tokens, {}))
    return (text:gsub('"' .. token .. '(%d+)"', function(i) return tokens[tonumber(i)] end))
end

return M
