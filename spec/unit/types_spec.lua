-- types/*.lua (the editor's definition files, `---@meta`) held against the runtime:
-- every public function of require "luaworker" and of what it hands out (the job,
-- a db, luaworker.http, .json, .php) and of luaworker.testing (its fake job, its
-- fakes) is annotated, and no annotation names a function the runtime lacks. Runs
-- inside the luaworker binary, from the repository's root.
local luaworker = require "luaworker"
local testing = require "luaworker.testing"
local fakes = require "luaworker.testing.fakes"
local fake_job = require "luaworker.worker.fake_job"
local db = require "luaworker.db"

-- The functions a definition file annotates, by the local table they are in:
-- { luaworker = { before = true, ... }, Job = {...} }.
local function annotated(path)
    local f = assert(io.open(path))
    local found = {}
    for line in f:lines() do
        local owner, name = line:match("^function ([%w_]+)[.:]([%w_]+)%(")
        if owner then
            found[owner] = found[owner] or {}
            found[owner][name] = true
        end
    end
    f:close()
    return found
end

-- The functions of t by name (metamethods left out), its __index's too when
-- that is a table.
local function functions_of(t)
    local names = {}
    for k, v in pairs(t) do
        if type(v) == "function" and type(k) == "string" and not k:match("^__") then names[k] = true end
    end
    return names
end

local function same_functions(file, owner, runtime, annotations)
    local written = annotations[owner] or {}
    for name in pairs(runtime) do
        if not written[name] then error(file .. ": " .. owner .. "." .. name .. " is not annotated", 0) end
    end
    for name in pairs(written) do
        if not runtime[name] then
            error(file .. ": " .. owner .. "." .. name .. " is annotated but the runtime has no such "
                .. "function", 0)
        end
    end
end

local job = fake_job.new("default", '{"job":"X"}')

describe("types/luaworker.lua", function()
    local file = "types/luaworker.lua"
    local annotations = annotated(file)

    it("annotates every function of require \"luaworker\", and only those", function()
        same_functions(file, "luaworker", functions_of(luaworker), annotations)
    end)

    it("annotates every method of the job, a db, luaworker.http, luaworker.php and luaworker.middleware", function()
        same_functions(file, "Job", functions_of(getmetatable(job)), annotations)
        same_functions(file, "Db", functions_of(getmetatable(db.connection("pgsql")).__index), annotations)
        same_functions(file, "http", functions_of(luaworker.http), annotations)
        same_functions(file, "php", functions_of(luaworker.php), annotations)
        same_functions(file, "middleware", functions_of(luaworker.middleware), annotations)
    end)

    it("annotates luaworker.json's encode and cjson's decode beneath it", function()
        local json = functions_of(luaworker.json)
        json.decode = type(luaworker.json.decode) == "function" or nil
        same_functions(file, "json", json, annotations)
    end)

    it("fails on a function the runtime lacks and on one left out (the check can fail)", function()
        assert.has_error(function()
            same_functions("x", "m", { a = true }, { m = { a = true, gone = true } })
        end, "x: m.gone is annotated but the runtime has no such function")
        assert.has_error(function()
            same_functions("x", "m", { a = true, new = true }, { m = { a = true } })
        end, "x: m.new is not annotated")
    end)
end)

describe("types/testing.lua", function()
    local file = "types/testing.lua"
    local annotations = annotated(file)

    it("annotates every function of luaworker.testing and of its fakes, and only those", function()
        same_functions(file, "testing", functions_of(testing), annotations)
        same_functions(file, "FakeJob", functions_of(fakes.JOB_ASSERTIONS), annotations)
        same_functions(file, "DispatchFake", functions_of(getmetatable(fakes.dispatched()).__index),
            annotations)
        same_functions(file, "HttpFake", functions_of(getmetatable(fakes.http({})).__index), annotations)
    end)
end)
