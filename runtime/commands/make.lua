-- luaworker.commands.make: `luaworker make CLASS [--handlers=DIR] [--specs=DIR]
-- [--from-queue=Q]`, as artisan's make:job (a class without a namespace goes in
-- App\Jobs): writes DIR/<class path>.lua with handle and failed, and its busted
-- spec (luaworker.testing) at SPECS/<class path>_spec.lua, refusing to overwrite
-- either. With --from-queue, the properties of the command of a job of that class
-- waiting on that queue (commands/peek.lua) are listed in the handler, with their
-- types, as LuaLS fields. A handler directory without a .luarc.json gets one, and
-- the editor's definition files (types/ beside the scripts) in .luaworker/, which
-- the worker does not read (it skips dot entries).
local host = require "luaworker.host"
local php = require "luaworker.php"
local values = require "luaworker.base.values"
local dump = require "luaworker.base.dump"
local serialized_job = require "luaworker.queue.serialized_job"
local peek = require "luaworker.commands.peek"

local MODEL_IDENTIFIER = "Illuminate\\Contracts\\Database\\ModelIdentifier"
local TYPES = { "luaworker.lua", "testing.lua" }

local function complain(...)
    io.stderr:write("luaworker: make: ", ...)
    io.stderr:write("\n")
    return 2
end

-- The class named, or nil: PHP's rules for a class name, '\' between the parts.
local function class_of(name)
    name = name:gsub("^\\", "")
    for part in (name .. "\\"):gmatch("([^\\]*)\\") do
        if not part:match("^[%a_\128-\255][%w_\128-\255]*$") then return nil end
    end
    if not name:find("\\", 1, true) then name = "App\\Jobs\\" .. name end
    return name
end

-- A property's type as a LuaLS field type, and what its value shows.
local function described(v)
    if v == nil or v == values.null then return "nil", "null" end
    local t = type(v)
    if t == "boolean" then return "boolean", tostring(v) end
    if t == "number" then return v == math.floor(v) and "integer" or "number", dump(v) end
    if values.integer_digits(v) then return "integer", values.integer_digits(v) .. " (int64)" end
    if t == "string" then
        local shown = dump(v)
        return "string", #shown > 40 and shown:sub(1, 37) .. "...\"" or shown
    end
    if t ~= "table" then return "any", t end
    local class = php.class(v)
    if class == MODEL_IDENTIFIER then
        local id = values.value(v.id)
        local ids = type(id) == "table" and "ids " .. dump(id):gsub("%s+", " ") or "id " .. dump(id)
        return "table", "a model: " .. tostring(values.value(v.class)) .. ", " .. ids
    end
    if class and rawget(v, "case") ~= nil then return "table", class .. "::" .. tostring(rawget(v, "case")) end
    if class then return "table", "an object of " .. class end
    if php.is_list(v) then return "any[]", "a list of " .. #v end
    return "table", "an array"
end

-- The LuaLS lines naming the command's own properties (Laravel's job traits'
-- left out), for the class named type_name.
local function field_lines(command, type_name, q)
    local lines = { "-- The properties of a " .. "job waiting on queue " .. q .. " (luaworker make --from-queue):",
        "---@class " .. type_name }
    for _, k in ipairs(php.members(command)) do
        if not serialized_job.is_trait_property(k) then
            local kind, shown = described(command[k])
            lines[#lines + 1] = string.format("---@field %s %s %s", k, kind, shown:gsub("\n", " "))
        end
    end
    return table.concat(lines, "\n") .. "\n"
end

local function handler_text(class, fields, type_name)
    return table.concat({
        "-- The handler of ", class, "'s jobs (docs/handlers.md). handle returns: the job is\n",
        "-- deleted; it raises: the job is released or failed by Laravel's rules; failed runs\n",
        "-- once the job failed for good.\n",
        "-- local luaworker = require \"luaworker\"  -- luaworker.db(), .http, .dispatch...\n",
        "\n",
        fields and (fields .. "\n") or "",
        "---@type luaworker.Handler\n",
        "return {\n",
        "    ---@param job luaworker.Job\n",
        "    ---@param command ", type_name, "\n",
        "    handle = function(job, command)\n",
        "    end,\n",
        "\n",
        "    ---@param job luaworker.Job\n",
        "    ---@param command ", type_name, "\n",
        "    ---@param err any the error the job failed with\n",
        "    failed = function(job, command, err)\n",
        "    end,\n",
        "}\n",
    })
end

local function spec_text(class, properties)
    local lua_class = class:gsub("\\", "\\\\")
    return table.concat({
        "-- ", class, "'s handler, run as the worker runs it: luaworker test (docs/handlers.md,\n",
        "-- \"Testing handlers\").\n",
        "local testing = require \"luaworker.testing\"\n",
        "\n",
        "describe(\"", lua_class, "\", function()\n",
        "    it(\"is deleted once handled\", function()\n",
        "        local job = testing.run(testing.job(\"", lua_class, "\", ", properties, "))\n",
        "        job:assert_not_raised()\n",
        "        job:assert_deleted()\n",
        "    end)\n",
        "end)\n",
    })
end

-- The properties of command as a Lua table's text (scalars only; models and
-- objects are left for the author, named in a comment).
local function properties_text(command)
    if not command then return "{ --[[ the command's properties ]] }" end
    local parts = {}
    for _, k in ipairs(php.members(command)) do
        local v = command[k]
        if not serialized_job.is_trait_property(k) and k:match("^[%a_][%w_]*$") then
            local t = type(v)
            if t == "string" or t == "boolean" or (t == "number" and v == v and v ~= math.huge and v ~= -math.huge) then
                parts[#parts + 1] = k .. " = " .. dump(v)
            end
        end
    end
    return "{ " .. table.concat(parts, ", ") .. (#parts > 0 and " " or "") .. "}"
end

local function write(path, text)
    local dir = path:match("^(.*)/[^/]*$")
    if dir and os.execute("mkdir -p '" .. dir:gsub("'", "'\\''") .. "'") ~= 0 then
        return nil, "cannot make the directory " .. dir
    end
    local f, err = io.open(path, "wb")
    if not f then return nil, err end
    f:write(text)
    f:close()
    return true
end

-- .luarc.json and .luaworker/ (the definition files) in dir when it has no
-- .luarc.json. Returns what it wrote, or nil, why.
local function editor_files(dir, scripts_dir)
    if host.file_kind(dir .. "/.luarc.json") then return {} end
    local types = scripts_dir:gsub("/+$", ""):gsub("[^/]+$", "") .. "types"
    local written = {}
    for _, name in ipairs(TYPES) do
        local f = io.open(types .. "/" .. name, "rb")
        if not f then
            return nil, "no definition file " .. types .. "/" .. name .. " (installed by make install)"
        end
        local text = f:read("*a")
        f:close()
        local ok, err = write(dir .. "/.luaworker/" .. name, text)
        if not ok then return nil, err end
    end
    written[#written + 1] = dir .. "/.luaworker/"
    local ok, err = write(dir .. "/.luarc.json", '{\n  "runtime.version": "LuaJIT",\n'
        .. '  "workspace.library": [".luaworker"]\n}\n')
    if not ok then return nil, err end
    written[#written + 1] = dir .. "/.luarc.json"
    return written
end

return function(cli, config)
    local options = cli.options
    local class = class_of(cli.args[1])
    if not class then
        return complain("'", cli.args[1], "' is not a PHP class name (expected App\\Jobs\\SendInvoice, ",
            "or SendInvoice for App\\Jobs\\SendInvoice)")
    end
    local rel = class:gsub("\\", "/")
    local dir = options.handlers:gsub("/+$", "")
    local handler_path = dir .. "/" .. rel .. ".lua"
    local spec_path = options.specs:gsub("/+$", "") .. "/" .. rel .. "_spec.lua"
    for _, path in ipairs({ handler_path, spec_path }) do
        if host.file_kind(path) then return complain(path, " exists already: not overwritten") end
    end
    local command, fields
    local type_name = rel:gsub("/", ".") .. ".Command"
    if options.from_queue then
        local connection = config.connection_name
        local found, why = peek.first(connection, options.from_queue, class)
        if not found then return complain(why) end
        command = found
        fields = field_lines(command, type_name, options.from_queue)
    else
        type_name = "table"
    end
    local ok, err = write(handler_path, handler_text(class, fields, type_name))
    if not ok then return complain(err) end
    ok, err = write(spec_path, spec_text(class, properties_text(command)))
    if not ok then return complain(err) end
    io.stdout:write("Handler [", handler_path, "] created successfully.\n")
    io.stdout:write("Spec [", spec_path, "] created successfully (run it: luaworker test ", spec_path, ").\n")
    local written, why = editor_files(dir, config.scripts_dir)
    if not written then
        io.stderr:write("luaworker: make: no editor files written: ", why, "\n")
    else
        for _, path in ipairs(written) do io.stdout:write("Editor file [", path, "] written.\n") end
    end
    return 0
end
