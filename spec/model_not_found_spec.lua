-- job:model_not_found: a handler that finds the models its command names gone gets
-- what CallQueuedHandler::handleModelNotFound does: the job deleted when it deletes
-- when models are missing (13.0+: the payload's flag; before: the class's
-- property, which the handler's delete_when_missing_models stands for, or the
-- command's own), else failed with ModelNotFoundException; 11.39+ the unique lock
-- the payload's Context names released.
local H = require "spec.helpers"

local GONE = [[
return { handle = function(job)
    job:model_not_found("App\\Models\\User", { 5, 6 })
    require("luaworker").redis("INCR", "spec:after")
end }
]]

describe("a job whose models are missing", function()
    local handlers
    setup(function()
        handlers = H.handlers({
            ["App/Jobs/Gone.lua"] = GONE,
            ["App/Jobs/GoneDeletes.lua"] = GONE:gsub("^return {", "return { delete_when_missing_models = true,"),
        })
    end)
    before_each(function() H.flush() end)

    local function run(class, version, fields, properties, env)
        local p = H.class_payload(class, fields, properties)
        H.push(p)
        local r = H.run({ "work", "--handlers=" .. handlers, "--stop-when-empty", "--sleep=0",
            "--laravel=" .. version }, { env = env })
        assert.are.equal(0, r.status, r.stderr)
        assert.are.equal(0, H.r("LLEN", (H.keys())))
        assert.are.equal(0, H.r("ZCARD", (select(3, H.keys()))))
        local record = H.failed_record(p.uuid)
        return record and record.exception or "deleted"
    end

    it("is failed with ModelNotFoundException unless it deletes when models are missing", function()
        assert.matches("Illuminate\\Database\\Eloquent\\ModelNotFoundException: No query results for "
            .. "model [App\\Models\\User] 5, 6", run("App\\Jobs\\Gone", "12.0"), 1, true)
        assert.are.equal("deleted", run("App\\Jobs\\GoneDeletes", "12.0"))
        -- the handler goes on after the call; the job's outcome is decided
        assert.are.equal("2", H.r("GET", "spec:after"))
    end)

    it("reads the payload's deleteWhenMissingModels from Laravel 13 on, and only then", function()
        assert.are.equal("deleted", run("App\\Jobs\\Gone", "13.0", { deleteWhenMissingModels = true }))
        assert.matches("ModelNotFoundException", run("App\\Jobs\\GoneDeletes", "13.0",
            { deleteWhenMissingModels = false }), 1, true)
        assert.matches("ModelNotFoundException", run("App\\Jobs\\Gone", "12.54",
            { deleteWhenMissingModels = true }), 1, true)
    end)

    it("reads the command's own property (Laravel 8 serializes it)", function()
        assert.are.equal("deleted", run("App\\Jobs\\Gone", "8.83", nil, { { "deleteWhenMissingModels", "b:1;" } }))
    end)

    it("releases the unique lock its Context names from 11.39 on", function()
        local key = "laravel_database_laravel_cache_laravel_unique_job:App\\Jobs\\Gone:9"
        local function s(v) return string.format('s:%d:"%s";', #v, v) end
        local context = { data = {}, hidden = { laravel_unique_job_cache_store = s("redis"),
            laravel_unique_job_key = s("laravel_unique_job:App\\Jobs\\Gone:9"),
            laravel_unique_job_lock_owner = s("") } }
        H.r("SET", key, "x")
        run("App\\Jobs\\Gone", "11.38", { ["illuminate:log:context"] = context })
        assert.are.equal(1, H.r("EXISTS", key))
        run("App\\Jobs\\Gone", "11.39", { ["illuminate:log:context"] = context })
        assert.are.equal(0, H.r("EXISTS", key))
    end)

    it("counts a success of its batch when deleted, from 12.51 on", function()
        local db = H.tmpdir() .. "/app.sqlite"
        local function sqlite(sql) return H.sqlite(db, sql) end
        sqlite("create table job_batches (id varchar primary key, name varchar, total_jobs integer, "
            .. "pending_jobs integer, failed_jobs integer, failed_job_ids text, options text, "
            .. "cancelled_at integer, created_at integer, finished_at integer); "
            .. "insert into job_batches values ('b-1', '', 2, 2, 0, '[]', 'a:0:{}', null, 1, null)")
        local env = { DB_CONNECTION = "sqlite", DB_DATABASE = db, QUEUE_FAILED_DRIVER = "luaworker-redis" }
        local batched = { { "batchId", 's:3:"b-1";' } }
        assert.are.equal("deleted", run("App\\Jobs\\GoneDeletes", "12.50", nil, batched, env))
        assert.are.equal("2\n", sqlite("select pending_jobs from job_batches"))
        assert.are.equal("deleted", run("App\\Jobs\\GoneDeletes", "12.51", nil, batched, env))
        assert.are.equal("1\n", sqlite("select pending_jobs from job_batches"))
    end)
end)
