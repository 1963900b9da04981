-- luaworker.queue.serialized_job: a job object's data.command as the Laravel version
-- luaworker speaks writes it, for the jobs luaworker pushes (luaworker.dispatch,
-- push, the next job of a chain), and the defaults a handler declares for its
-- class's properties.
--
-- PHP writes a job object one of two ways:
--   * every property (PHP's own serialize(): a class without SerializesModels; and
--     before 9.4 SerializesModels::__sleep, which names them all);
--   * from 9.4.0 (SerializesModels::__serialize, laravel/framework#41348) every
--     property except those whose value is identical (===) to the default the
--     class declares; a property without a default (a promoted constructor
--     parameter, a typed property without one) is always written.
-- Either way in ReflectionClass::getProperties order: the class's own properties
-- as it declares them, then its traits' in `use` order (make:job's `Dispatchable,
-- InteractsWithQueue, Queueable, SerializesModels`, Laravel's docs put `Batchable`
-- first; 11+'s Illuminate\Foundation\Queue\Queueable uses them in that order).
--
-- luaworker cannot see the PHP class: the members an object already has keep the
-- order they were read or given in (php.members' recorded ones); a member set by
-- Lua afterwards, or filled in here, goes to its place among the trait
-- properties (traits(), by version) or among the class's own as the handler
-- declares them (see declaration).
local php = require "luaworker.php"
local settings = require "luaworker.base.settings"

local M = {}

local null = php.null

-- Queueable's properties by version, checked in laravel/framework's git history
-- (src/Illuminate/Bus/Queueable.php at each tag): 8.x-11.1 in this order; 11.2.0
-- moved the chain's three after chained (#50858); 12.27.0 added group after
-- queue, 12.28.1 renamed it messageGroup (luaworker knows minors: 12.28 is
-- messageGroup), 12.32.0 added deduplicator after it; 13.6.0 debounceOwner
-- (default '') and 13.24.0 uniqueLockOwner (default '') after deduplicator. All
-- default to null but middleware and chained ([]) and the two owners ('').
local function queueable()
    local at_least = settings.laravel_at_least
    local list = { "connection", "queue" }
    if at_least(12, 28) then
        list[#list + 1] = "messageGroup"
    elseif at_least(12, 27) then
        list[#list + 1] = "group"
    end
    if at_least(12, 32) then list[#list + 1] = "deduplicator" end
    if at_least(13, 6) then list[#list + 1] = "debounceOwner" end
    if at_least(13, 24) then list[#list + 1] = "uniqueLockOwner" end
    local chain = { "chainConnection", "chainQueue", "chainCatchCallbacks" }
    local rest = { "delay", "afterCommit", "middleware", "chained" }
    if at_least(11, 2) then
        for _, k in ipairs(rest) do list[#list + 1] = k end
        for _, k in ipairs(chain) do list[#list + 1] = k end
    else
        for _, k in ipairs(chain) do list[#list + 1] = k end
        for _, k in ipairs(rest) do list[#list + 1] = k end
    end
    return list
end

local EMPTY = {}  -- stands for the default [] (never handed out: see copy_value)
local TRAIT_DEFAULTS = { middleware = EMPTY, chained = EMPTY, debounceOwner = "", uniqueLockOwner = "" }

-- Every trait property name of every version, for the handlers' declarations.
local TRAIT_NAMES = { batchId = true, job = true, group = true, messageGroup = true,
    deduplicator = true, debounceOwner = true, uniqueLockOwner = true }
for _, k in ipairs({ "connection", "queue", "chainConnection", "chainQueue", "chainCatchCallbacks",
    "delay", "afterCommit", "middleware", "chained" }) do TRAIT_NAMES[k] = true end

-- Queueable properties every version declares: a job object lacking one was
-- written by SerializesModels::__serialize (9.4+), which left it out at its default.
local EVERY_VERSION = { "connection", "queue", "delay", "afterCommit", "middleware", "chained",
    "chainConnection", "chainQueue", "chainCatchCallbacks" }

-- The trait properties of the version in reflection order: { names = {...},
-- rank = name -> position, fill = name -> true for those a job class always has
-- (InteractsWithQueue's job, Queueable's; Batchable's batchId only when used) }.
local traits_cache = {}
local function traits()
    local key = tostring(settings.config.laravel_version) .. "." .. tostring(settings.config.laravel_minor)
    local t = traits_cache[key]
    if t then return t end
    local names = { "batchId", "job" }
    for _, k in ipairs(queueable()) do names[#names + 1] = k end
    t = { names = names, rank = {}, fill = {} }
    for i, k in ipairs(names) do
        t.rank[k] = i
        if k ~= "batchId" then t.fill[k] = true end
    end
    traits_cache[key] = t
    return t
end

-- Whether k names a property of Laravel's job traits (in any version).
function M.is_trait_property(k)
    return TRAIT_NAMES[k] == true
end

-- A fresh copy of a default value (tables deep, PHP marks kept), so that a job
-- changing its value does not change the declared default.
local function copy_value(v)
    if v == EMPTY then return {} end
    if type(v) ~= "table" then return v end
    local out = {}
    for k, x in pairs(v) do out[k] = copy_value(x) end
    local mt = getmetatable(v)
    if mt then
        local mt2 = {}
        for k, x in pairs(mt) do mt2[k] = x end
        setmetatable(out, mt2)
    end
    return out
end

-- Whether a and b are identical as PHP's === finds them: null, booleans, strings
-- and numbers by value (a float and an int of one value count as identical: Lua
-- has one number type); arrays member by member in order; enum cases by class and
-- case; other objects never (=== is identity, and a value read or made here is
-- never the default's object).
local function identical(a, b)
    if a == nil then a = null end
    if b == nil then b = null end
    if a == EMPTY then a = {} end
    if b == EMPTY then b = {} end
    if a == b then return true end
    if type(a) ~= "table" or type(b) ~= "table" then return false end
    local ca, cb = php.class(a), php.class(b)
    if ca or cb then
        local enum = "luaworker.php_enum"
        return ca == cb and getmetatable(a).__name == enum and getmetatable(b).__name == enum
            and a.case == b.case
    end
    local ka = php.members(a)
    local kb = php.members(b)
    if #ka ~= #kb then return false end
    for i = 1, #ka do
        if ka[i] ~= kb[i] or not identical(a[ka[i]], b[kb[i]]) then return false end
    end
    return true
end

local VISIBILITY = { public = true, protected = true, private = true }

-- The PHP name of own property k of class under decl (the handler's declaration,
-- or nil): k, "\0*\0k" (protected) or "\0Class\0k" (private).
local function mangled(decl, class, k)
    local v = decl and decl.visibility[k]
    if v == "protected" then return "\0*\0" .. k end
    if v == "private" then return "\0" .. class .. "\0" .. k end
    return k
end
M.php_name = mangled

local function is_name(k)
    return type(k) == "string" and k:match("^[%a_\128-\255][%w_\128-\255]*$") ~= nil
end

-- What a handler declares about its PHP class, checked: `properties`, the class's
-- own properties in the order it declares them ("name", or "protected name" /
-- "private name"); `defaults`, the value each property with a declared default
-- has (luaworker.null for an untyped property without one, whose default is
-- null); `serializes_models = false` for a class without SerializesModels.
-- Returns nil when the handler declares none of them, else { order = {names},
-- rank = name -> i, visibility = name -> word, defaults = name -> value,
-- defaults_order = {names}, serializes_models = boolean }; or nil, message
-- naming the field.
function M.declaration(handler)
    local props, defaults, sm = handler.properties, handler.defaults, handler.serializes_models
    if props == nil and defaults == nil and sm == nil then return nil end
    local decl = { order = {}, rank = {}, visibility = {}, defaults = {}, defaults_order = {},
        serializes_models = sm ~= false }
    if sm ~= nil and type(sm) ~= "boolean" then
        return nil, "serializes_models: expected true or false, got " .. tostring(sm)
    end
    if props ~= nil then
        if type(props) ~= "table" then
            return nil, "properties: expected a list of the class's property names, got " .. type(props)
        end
        for i = 1, #props do
            local p = props[i]
            local word, name
            if type(p) == "string" then
                word, name = p:match("^(%a+) +(.+)$")
                if not (word and VISIBILITY[word]) then word, name = "public", p end
            end
            if not is_name(name) then
                return nil, string.format("properties[%d]: expected a property name, optionally after "
                    .. "public, protected or private (\"protected token\"), got %s", i,
                    type(p) == "string" and ("'" .. p .. "'") or tostring(p))
            end
            if TRAIT_NAMES[name] then
                return nil, string.format("properties[%d]: %s is a property of Laravel's job traits "
                    .. "(Queueable, InteractsWithQueue, Batchable), not the class's own", i, name)
            end
            if decl.rank[name] then
                return nil, string.format("properties[%d]: %s is listed twice", i, name)
            end
            decl.order[i], decl.rank[name], decl.visibility[name] = name, i, word
        end
        for k in pairs(props) do
            if type(k) ~= "number" or k < 1 or k > #props or k % 1 ~= 0 then
                return nil, "properties: expected a list of names, got the key " .. tostring(k)
            end
        end
    end
    if defaults ~= nil then
        if type(defaults) ~= "table" or php.class(defaults) then
            return nil, "defaults: expected a table of default values by property name, got "
                .. (php.class(defaults) or type(defaults))
        end
        for k, v in pairs(defaults) do
            if not is_name(k) then
                return nil, "defaults: expected property names as keys, got " .. tostring(k)
            end
            if TRAIT_NAMES[k] then
                return nil, "defaults." .. k .. ": " .. k .. " is a property of Laravel's job "
                    .. "traits (Queueable, InteractsWithQueue, Batchable): its default is Laravel's"
            end
            if props ~= nil and not decl.rank[k] then
                return nil, "defaults." .. k .. ": " .. k .. " is not in properties"
            end
            local ok, err = php.serialize(v)
            if not ok then return nil, "defaults." .. k .. ": not a PHP value: " .. err end
            decl.defaults[k] = v
            decl.defaults_order[#decl.defaults_order + 1] = k
        end
        table.sort(decl.defaults_order, function(a, b)
            local ra, rb = decl.rank[a], decl.rank[b]
            if ra and rb then return ra < rb end
            return a < b
        end)
    end
    return decl
end

-- Inserts k into list before the first member ranked after it, else after the
-- last one ranked before it; false when no member of list is ranked.
local function insert_ranked(list, k, rank)
    local r, last = rank[k], nil
    for i, x in ipairs(list) do
        local rx = rank[x]
        if rx then
            if rx > r then
                table.insert(list, i, k)
                return true
            end
            last = i
        end
    end
    if last then
        table.insert(list, last + 1, k)
        return true
    end
    return false
end

-- A copy of obj with the members of adds (name -> value, set in adds_order) that
-- it lacks, the members set by Lua after it was read or made placed (see the
-- top), and, when omit, the members at their defaults left out (`at_default(k,
-- v)`). decl: the class's declaration, or nil.
local function arrange(obj, decl, adds, adds_order, at_default)
    local class = php.class(obj)
    local keys, names, recorded = php.members(obj)
    local t = traits()
    local own_rank = decl and decl.rank or {}
    local src = php.select(obj, keys)
    local list, pending, given = {}, {}, {}
    for i = 1, #keys do
        if i <= recorded then list[#list + 1] = keys[i] else pending[#pending + 1] = keys[i] end
        given[keys[i]] = names[i]
    end
    for _, k in ipairs(adds_order or {}) do
        if src[k] == nil then
            src[k] = copy_value(adds[k])
            pending[#pending + 1] = k
        end
    end
    local new_names = {}
    for _, k in ipairs(pending) do
        if not t.rank[k] then
            if not (own_rank[k] and insert_ranked(list, k, own_rank)) then
                local first_trait
                for i, x in ipairs(list) do
                    if t.rank[x] then first_trait = i break end
                end
                table.insert(list, first_trait or #list + 1, k)
            end
            if given[k] == nil or given[k] == k then new_names[k] = mangled(decl, class, k) end
        end
    end
    for _, k in ipairs(pending) do
        if t.rank[k] and not insert_ranked(list, k, t.rank) then list[#list + 1] = k end
    end
    if at_default then
        local kept = {}
        for _, k in ipairs(list) do
            if not at_default(k, src[k]) then kept[#kept + 1] = k end
        end
        list = kept
    end
    return php.select(src, list, new_names)
end

-- Whether obj, a job object as PHP wrote it, was written by 9.4+'s
-- SerializesModels::__serialize: it lacks a Queueable property (PHP's own
-- serialize() and 8.83's __sleep write them all). Always false before 9.4.
function M.omits_defaults(obj)
    if not settings.laravel_at_least(9, 4) then return false end
    for _, k in ipairs(EVERY_VERSION) do
        if rawget(obj, k) == nil then return true end
    end
    return false
end

-- obj with the defaults decl declares for the properties it lacks, each in its
-- declared place (a job's command before its handler runs: from 9.4 PHP leaves
-- them out); obj itself when it lacks none.
function M.with_defaults(obj, decl)
    if not decl then return obj end
    local missing = {}
    for _, k in ipairs(decl.defaults_order) do
        if rawget(obj, k) == nil then missing[#missing + 1] = k end
    end
    if #missing == 0 then return obj end
    return arrange(obj, decl, decl.defaults, missing)
end

-- The serialized job object (PHP serialize() text), or nil, message. how:
--   declared  the class's declaration (M.declaration), or nil;
--   omit      leave out the members at their defaults (SerializesModels, 9.4+);
--             nil: from 9.4 unless declared.serializes_models is false;
--   fill      when writing every member: add the trait properties (and the
--             declared defaults) obj lacks, as PHP's object has them all.
function M.serialize(obj, how)
    local decl = how.declared
    local omit = how.omit
    if omit == nil then
        omit = settings.laravel_at_least(9, 4) and not (decl and not decl.serializes_models)
    end
    local adds, adds_order = {}, {}
    if how.fill and not omit then
        local t = traits()
        for _, k in ipairs(t.names) do
            if t.fill[k] then
                adds[k] = TRAIT_DEFAULTS[k] or null
                adds_order[#adds_order + 1] = k
            end
        end
        if decl then
            for _, k in ipairs(decl.defaults_order) do
                adds[k] = decl.defaults[k]
                adds_order[#adds_order + 1] = k
            end
        end
    end
    local at_default
    if omit then
        local t = traits()
        at_default = function(k, v)
            if t.rank[k] then return identical(v, TRAIT_DEFAULTS[k] or null) end
            if decl and decl.defaults[k] ~= nil then return identical(v, decl.defaults[k]) end
            return false
        end
    end
    return php.serialize(arrange(obj, decl, adds, adds_order, at_default))
end

-- A copy of the object obj (the members it had when read or made still recorded
-- as such, those Lua set since not), so that changing it leaves obj as it was.
function M.copy(obj)
    local keys, _, recorded = php.members(obj)
    local first = {}
    for i = 1, recorded do first[i] = keys[i] end
    local out = php.select(obj, first)
    for i = recorded + 1, #keys do out[keys[i]] = obj[keys[i]] end
    return out
end

return M
