-- luaworker.php.json: JSON text read as PHP's json_decode($text, true) reads it, as
-- PHP serialize() text, so that luaworker.php.unserialize makes values keeping what
-- json_decode keeps: key order; integers exact to 64 bits (past them a float, as in
-- PHP); 1.0 a float; objects as arrays, a key such as "7" as the integer 7; the last
-- of duplicate keys, in the place of the first.
local cjson = require "cjson"

local M = {}

local json = cjson.new()
json.decode_invalid_numbers(false)   -- NaN, Infinity, 0x10 are not JSON
local decode = json.decode

local function skip_space(text, i)
    return text:find("[^ \t\r\n]", i)
end

-- The index of the quote that ends the string whose opening quote is at i.
local function string_end(text, i)
    local j = i + 1
    while true do
        local k = text:find('["\\]', j)
        if text:sub(k, k) == '"' then return k end
        j = k + 2
    end
end

-- Whether the decimal digits (no sign, no leading zero) fit PHP's int.
local function fits_int(digits, negative)
    if #digits ~= 19 then return #digits < 19 end
    return digits <= (negative and "9223372036854775808" or "9223372036854775807")
end

function M.string(s)
    return string.format('s:%d:"%s";', #s, s)
end

-- An array key as PHP stores it: a decimal integer string becomes the integer.
local function key_text(key)
    local sign, digits = key:match("^(%-?)([1-9]%d*)$")
    if key == "0" or (digits and fits_int(digits, sign == "-")) then return "i:" .. key .. ";" end
    return M.string(key)
end

-- Sets key to v in an ordered member list ({key, value text} pairs; at: key ->
-- position), as PHP sets an array key: a key already there keeps its place.
function M.put(list, at, key, v)
    if at[key] then
        list[at[key]][2] = v
    else
        list[#list + 1] = { key, v }
        at[key] = #list
    end
end

local value

-- The members of the object at i: an ordered member list, its positions, the index
-- after it, and where each member's value is in text (key -> {first, last}; a
-- duplicate key's last).
local function members(text, i)
    local list, at, spans = {}, {}, {}
    i = skip_space(text, i + 1)
    while text:sub(i, i) ~= "}" do
        local e = string_end(text, i)
        local key = decode(text:sub(i, e))
        local first = skip_space(text, skip_space(text, e + 1) + 1)
        local v
        v, i = value(text, first)
        spans[key] = { first, i - 1 }
        M.put(list, at, key, v)
        i = skip_space(text, i)
        if text:sub(i, i) == "," then i = skip_space(text, i + 1) end
    end
    return list, at, i + 1, spans
end

-- The serialize() text of the value at i, and the index after it.
function value(text, i)
    local c = text:sub(i, i)
    if c == "{" then
        local list, _, after = members(text, i)
        local parts = {}
        for n, m in ipairs(list) do parts[n] = key_text(m[1]) .. m[2] end
        return "a:" .. #list .. ":{" .. table.concat(parts) .. "}", after
    elseif c == "[" then
        local parts = {}
        i = skip_space(text, i + 1)
        while text:sub(i, i) ~= "]" do
            local v
            v, i = value(text, i)
            parts[#parts + 1] = "i:" .. #parts .. ";" .. v
            i = skip_space(text, i)
            if text:sub(i, i) == "," then i = skip_space(text, i + 1) end
        end
        return "a:" .. #parts .. ":{" .. table.concat(parts) .. "}", i + 1
    elseif c == '"' then
        local e = string_end(text, i)
        return M.string(decode(text:sub(i, e))), e + 1
    elseif c == "t" then
        return "b:1;", i + 4
    elseif c == "f" then
        return "b:0;", i + 5
    elseif c == "n" then
        return "N;", i + 4
    end
    local token = text:match("^[-+%deE.]+", i)
    local negative, digits = token:match("^(%-?)(%d+)$")
    if digits and fits_int(digits, negative == "-") then
        return "i:" .. (token == "-0" and "0" or token) .. ";", i + #token
    end
    return "d:" .. token .. ";", i + #token
end

-- The members of the JSON object in text, as an ordered member list of {name,
-- serialize() text of the value} and their positions (see M.put); nil and a message
-- when text is not a JSON object.
function M.object_members(text)
    local ok, decoded = pcall(decode, text)
    if not ok then return nil, tostring(decoded) end
    local i = skip_space(text, 1)
    if type(decoded) == "table" and next(decoded) == nil and text:sub(i, i) == "[" then
        return {}, {}   -- [], as json_decode gives an empty array for {}
    end
    if type(decoded) ~= "table" or text:sub(i, i) ~= "{" then return nil, "not a JSON object" end
    local list, at = members(text, i)
    return list, at
end

-- PHP's json_encode(array_merge(json_decode(text, true), changes)) for text a
-- json_encode wrote (a payload): its members kept byte for byte, each of changes (a
-- list of {name, JSON text of the value}) set in its place, or added at the end in
-- order, as array_merge does. Returns the text, or nil and why text is no object.
function M.merge(text, changes)
    local ok, decoded = pcall(decode, text)
    local start = ok and skip_space(text, 1)
    if not ok or type(decoded) ~= "table" or text:sub(start, start) ~= "{" then
        return nil, ok and "not a JSON object" or tostring(decoded)
    end
    local list, _, after, spans = members(text, start)
    local i = after - 1  -- its closing brace
    local edits, added = {}, {}
    for _, c in ipairs(changes) do
        local span = spans[c[1]]
        if span then
            edits[#edits + 1] = { span[1], span[2], c[2] }
        else
            added[#added + 1] = json.encode(c[1]) .. ":" .. c[2]
        end
    end
    local out = text
    if #added > 0 then
        out = out:sub(1, i - 1) .. (#list > 0 and "," or "") .. table.concat(added, ",") .. out:sub(i)
    end
    table.sort(edits, function(a, b) return a[1] > b[1] end)
    for _, e in ipairs(edits) do out = out:sub(1, e[1] - 1) .. e[3] .. out:sub(e[2] + 1) end
    return out
end

return M
