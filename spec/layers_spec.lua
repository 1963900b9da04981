-- The layers of runtime/ (docs/architecture.md): every `require` of a Lua module and
-- every `#include` of runtime/ goes down the layers or stays in its folder, never
-- up or sideways into another folder of the same layer, and no module and no
-- folder depends on itself through others. A failure names the two files. Function-
-- local requires count as any other: a require put in a function to dodge load
-- order is a cycle all the same. Also: no source file of runtime/ past 600 lines.
local H = require "spec.helpers"

-- From the bottom. A folder may use the folders of the layers below its own.
local LAYERS = {
    { "lib" },                     -- the C side's small types (the growing buffer)
    { "loader" },                  -- loading libraries on first use
    { "php" },                     -- PHP values, hashes and the encrypter
    { "config" },                  -- the command line, the environment, .env
    { "loop" },                    -- the vm (LuaJIT and libev), tasks, waits, the system
    { "base" },                    -- values, settings, the log, the events registry
    { "redis", "db", "http" },     -- the clients, each its C binding beside its Lua
    { "queue" },                   -- Laravel's queue protocol, the failed-job stores
    { "bus", "supervisor" },       -- batches; the supervisor of worker processes
    { "worker" },                  -- the daemon loop and a job's life
    { "commands", "testing" },     -- failed, retry, push, size...; the handlers' specs' fakes
    { "." },                       -- the handlers' API, the entry points
}

local RANK = {}
for rank, folders in ipairs(LAYERS) do
    for _, f in ipairs(folders) do RANK[f] = rank end
end

local root = H.root .. "/runtime"

local function lines_of(cmd)
    local out = {}
    local p = io.popen(cmd)
    for line in p:lines() do out[#out + 1] = line end
    p:close()
    return out
end

-- Every source file of runtime/, by its path below runtime/.
local function sources()
    return lines_of("cd " .. H.quote(root) .. " && find . -name '*.lua' -o -name '*.c' -o -name '*.h' | sed 's#^./##' | sort")
end

local function folder_of(path)
    return path:match("^([^/]+)/") or "."
end

-- The file a module name is (the Makefile's lua_module, backwards); nil for the C
-- modules (luaworker.host is the vm's, luaworker.php and luaworker.encrypter php/'s).
local C_MODULES = { ["luaworker.host"] = "loop/vm.c", ["luaworker.php"] = "php/php_value.c",
    ["luaworker.encrypter"] = "php/encrypter.c" }

local function file_of(module)
    if C_MODULES[module] then return C_MODULES[module] end
    if module == "luaworker" then return "luaworker.lua" end
    if module == "luaworker.start" then return "start.lua" end
    local parts = {}
    for p in module:gmatch("[^.]+") do parts[#parts + 1] = p end
    if #parts == 2 then return parts[2] .. "/" .. parts[2] .. ".lua" end
    if #parts == 3 then return parts[2] .. "/" .. parts[3] .. ".lua" end
    return nil
end

-- path -> the files it depends on (runtime paths).
local function dependencies()
    local deps = {}
    for _, path in ipairs(sources()) do
        local text = H.read_file(root .. "/" .. path)
        -- comments say what a file is for, in words that may look like a require
        if path:match("%.lua$") then
            text = text:gsub("%-%-%[(=*)%[.-%]%1%]", ""):gsub("%-%-[^\n]*", "")
        else
            text = text:gsub("/%*.-%*/", "")
        end
        local list = {}
        if path:match("%.lua$") then
            for module in text:gmatch("require%s*%(?%s*[\"'](luaworker[%w_.]*)[\"']") do
                list[#list + 1] = { file_of(module) or ("?" .. module), module }
            end
        else
            for inc in text:gmatch('#include%s+"([^"]+)"') do
                local target = inc
                -- a header stands for its unit: a .c including its own .h is no edge
                if not (inc:gsub("%.h$", ".c") == path or inc == path:gsub("%.c$", ".h")) then
                    list[#list + 1] = { target, inc }
                end
            end
        end
        deps[path] = list
    end
    return deps
end

describe("runtime/'s layers", function()
    local deps = dependencies()

    it("has a layer for every folder", function()
        for path in pairs(deps) do
            assert(RANK[folder_of(path)], "runtime/" .. path .. ": its folder " .. folder_of(path)
                .. " has no layer in spec/layers_spec.lua")
        end
    end)

    it("requires only modules that exist", function()
        for path, list in pairs(deps) do
            for _, d in ipairs(list) do
                local f = io.open(root .. "/" .. d[1])
                assert(f, "runtime/" .. path .. " requires " .. d[2] .. ", which is no file of runtime/")
                f:close()
            end
        end
    end)

    it("depends only down the layers, or within its folder", function()
        for path, list in pairs(deps) do
            local from = folder_of(path)
            for _, d in ipairs(list) do
                local to = folder_of(d[1])
                if to ~= from then
                    assert(RANK[to] < RANK[from], "runtime/" .. path .. " (" .. from .. ") depends on runtime/"
                        .. d[1] .. " (" .. to .. "), which is not below it")
                end
            end
        end
    end)

    it("has no cycle of modules", function()
        local state = {}
        local function visit(path, stack)
            if state[path] == "done" then return end
            if state[path] == "open" then
                error("a cycle: runtime/" .. table.concat(stack, " -> runtime/"))
            end
            state[path] = "open"
            for _, d in ipairs(deps[path] or {}) do
                stack[#stack + 1] = d[1]
                visit(d[1], stack)
                stack[#stack] = nil
            end
            state[path] = "done"
        end
        for path in pairs(deps) do visit(path, { path }) end
    end)

    it("has no source file past 600 lines", function()
        for _, path in ipairs(sources()) do
            local n = 0
            for _ in H.read_file(root .. "/" .. path):gmatch("\n") do n = n + 1 end
            assert(n <= 600, "runtime/" .. path .. " has " .. n .. " lines")
        end
    end)
end)
