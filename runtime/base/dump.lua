-- luaworker.base.dump: luaworker.dump(value), a value as Lua sees it, readable, for
-- a handler's author: what a command holds, printed without raising on anything it
-- can hold. Objects with their class, members in PHP's order, lists as { a, b },
-- int64 exact, null as null, enums as Class::Case, strings quoted (bytes that are not
-- printable as \ddd), a table met again inside itself as <cycle>, nesting past
-- MAX_DEPTH as { ... }.
local php = require "luaworker.php"
local values = require "luaworker.base.values"

local MAX_DEPTH = 32
local INDENT = "    "

local function number_text(n)
    if n ~= n then return "nan" end
    if n == math.huge then return "inf" end
    if n == -math.huge then return "-inf" end
    return values.number_text(n, 2 ^ 53)
end

local function string_text(s)
    return '"' .. s:gsub('[%c"\\\128-\255]', function(c)
        if c == '"' then return '\\"' end
        if c == "\\" then return "\\\\" end
        if c == "\n" then return "\\n" end
        if c == "\t" then return "\\t" end
        return string.format("\\%d", c:byte())
    end) .. '"'
end

local function key_text(k)
    if type(k) == "string" and k:match("^[%a_][%w_]*$") then return k end
    if type(k) == "string" then return "[" .. string_text(k) .. "]" end
    if type(k) == "number" then return "[" .. number_text(k) .. "]" end
    if values.integer_digits(k) then return "[" .. values.integer_digits(k) .. "]" end
    return "[" .. tostring(k) .. "]"
end

local put

-- The keys of t in PHP's order (its members), else sorted by their text.
local function keys_of(t)
    local ok, keys = pcall(php.members, t)
    if ok then return keys end
    keys = {}
    for k in pairs(t) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
    return keys
end

local function put_table(out, t, depth, open)
    local class = php.class(t)
    if class and rawget(t, "case") ~= nil and rawget(t, "class") == class then
        out[#out + 1] = class .. "::" .. tostring(rawget(t, "case"))
        return
    end
    if open[t] then
        out[#out + 1] = "<cycle>"
        return
    end
    local head = class and class .. " {" or "{"
    if next(t) == nil then
        out[#out + 1] = head .. "}"
        return
    end
    if depth >= MAX_DEPTH then
        out[#out + 1] = head .. " ... }"
        return
    end
    open[t] = true
    local pad = INDENT:rep(depth + 1)
    out[#out + 1] = head .. "\n"
    if not class and php.is_list(t) then
        for i = 1, #t do
            out[#out + 1] = pad
            put(out, t[i], depth + 1, open)
            out[#out + 1] = ",\n"
        end
    else
        for _, k in ipairs(keys_of(t)) do
            out[#out + 1] = pad .. key_text(k) .. " = "
            put(out, rawget(t, k), depth + 1, open)
            out[#out + 1] = ",\n"
        end
    end
    out[#out + 1] = INDENT:rep(depth) .. "}"
    open[t] = nil
end

put = function(out, v, depth, open)
    local kind = type(v)
    if v == values.null then
        out[#out + 1] = "null"
    elseif kind == "string" then
        out[#out + 1] = string_text(v)
    elseif kind == "number" then
        out[#out + 1] = number_text(v)
    elseif values.integer_digits(v) then
        out[#out + 1] = values.integer_digits(v)
    elseif kind == "table" then
        put_table(out, v, depth, open)
    else
        out[#out + 1] = tostring(v)
    end
end

-- The text of v (see above).
return function(v)
    local out = {}
    put(out, v, 0, {})
    return table.concat(out)
end
