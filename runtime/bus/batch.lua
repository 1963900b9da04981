-- luaworker.bus.batch: Laravel's job batches (Bus::batch) as its worker keeps them: a
-- job whose command carries a batchId (the Batchable trait) updates its row in the
-- app's job_batches table (Illuminate\Bus\DatabaseBatchRepository, the database
-- connection DB_CONNECTION names, through luaworker.db) when it succeeds and when
-- it fails for good, in a transaction that locks the row, so that workers running
-- at once (PHP's and luaworker's, any number of processes and jobs in flight)
-- count exactly. A batch whose row is missing is left alone, as Laravel does.
--
-- The batch's then / catch / finally callbacks are PHP closures: luaworker cannot
-- run them. When Laravel would run them, luaworker says so, once per batch and
-- process, and goes on.
local cjson = require "cjson"
local host = require "luaworker.host"
local db_module = require "luaworker.db"
local php = require "luaworker.php"
local log = require "luaworker.base.log"

local M = {}

-- config/queue.php's 'batching': the connection (DB_CONNECTION, luaworker.db's
-- default) and the table.
local TABLE = "job_batches"

local function db()
    return db_module.connection()
end

-- The table as SQL names it (Db:wrap).
local function quoted_table()
    return db():wrap(TABLE)
end

-- The batch id a command carries, or nil.
function M.id_of(command)
    local id = type(command) == "table" and command.batchId
    if type(id) == "string" and id ~= "" then return id end
    return nil
end

-- failed_job_ids as PHP's json_encode writes a list: [] when empty, never {}.
local function encode_ids(ids)
    local parts = {}
    for i, id in ipairs(ids) do parts[i] = cjson.encode(id) end
    return "[" .. table.concat(parts, ",") .. "]"
end

local function decode_ids(text)
    local ok, ids = pcall(cjson.decode, text or "[]")
    if not ok or type(ids) ~= "table" then return {} end
    local list = {}
    for _, id in ipairs(ids) do list[#list + 1] = tostring(id) end
    return list
end

local B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

local function base64_decode(text)
    local bits = text:gsub("[^%w+/]", ""):gsub(".", function(c)
        local n, out = B64:find(c, 1, true) - 1, {}
        for i = 6, 1, -1 do out[#out + 1] = math.floor(n / 2 ^ (i - 1)) % 2 end
        return table.concat(out)
    end)
    return (bits:gsub("%d%d%d%d%d%d%d%d", function(byte)
        return string.char(tonumber(byte, 2))
    end):gsub("[01]+$", ""))
end

-- The batch's options (PHP-serialized; base64 of it on PostgreSQL, as Laravel
-- stores them there), as a table, or {} when they cannot be read.
local function options_of(text)
    if type(text) ~= "string" then return {} end
    if not text:find("[:;]") then text = base64_decode(text) end
    local ok, options = pcall(php.unserialize, text)
    if ok and type(options) == "table" then return options end
    return {}
end

local function non_empty(v)
    return type(v) == "table" and next(v) ~= nil
end

-- A row as the batch a handler sees (job:batch()).
local function batch_of(row)
    if not row then return nil end
    local options = options_of(row.options)
    return { id = row.id, name = row.name, total_jobs = tonumber(row.total_jobs),
        pending_jobs = tonumber(row.pending_jobs), failed_jobs = tonumber(row.failed_jobs),
        failed_job_ids = decode_ids(row.failed_job_ids),
        created_at = tonumber(row.created_at), cancelled_at = tonumber(row.cancelled_at),
        finished_at = tonumber(row.finished_at),
        cancelled = tonumber(row.cancelled_at) ~= nil, finished = tonumber(row.finished_at) ~= nil,
        allows_failures = options.allowFailures == true, options = options }
end

-- The batch of id (Batchable::batch()), or nil when it has no row.
function M.find(id)
    return batch_of(db():select("select * from " .. quoted_table() .. " where id = ?", { id })[1])
end

local told = {}   -- batch id -> true once its callbacks were said to be left

local function callbacks_left(id, which, job)
    if told[id] then return end
    told[id] = true
    log.error("batch " .. id .. " reached its " .. which
        .. " callbacks: they are PHP closures, which luaworker cannot run; they are not run "
        .. "(said once per batch)", job)
end

-- Laravel's updateAtomicValues: the row read with a lock and updated by change in
-- one transaction. Returns the counts {pending_jobs, failed_jobs} and the row's
-- options, or nil when the batch has no row.
local function update_atomic(id, change)
    local d = db()
    -- SQLite has no row locks: its transactions take the database's write lock
    local lock = d.driver_name == "sqlite" and "" or " for update"
    return d:transaction(function(tx)
        local row = tx:select("select pending_jobs, failed_jobs, failed_job_ids, options from "
            .. quoted_table() .. " where id = ?" .. lock, { id })[1]
        if not row then return nil end
        local pending, failed, ids = change(tonumber(row.pending_jobs), tonumber(row.failed_jobs),
            decode_ids(row.failed_job_ids))
        tx:update("update " .. quoted_table() .. " set pending_jobs = ?, failed_jobs = ?, failed_job_ids = ? "
            .. "where id = ?", { pending, failed, encode_ids(ids), id })
        return { pending_jobs = pending, failed_jobs = failed }, options_of(row.options)
    end)
end

-- Runs fn(...) waiting out a database that cannot be reached (said once, the job
-- kept reserved meanwhile); other errors, or the worker stopping meanwhile, raise
-- as Laravel's worker would: the job's exception rules apply.
local function waiting_out_outages(what, job, fn, ...)
    return db_module.wait_out(fn, db_module.lost_connection, function(err)
        log.error("cannot " .. what .. " (" .. tostring(err) .. "); the job stays reserved "
            .. "until it can, tried again every 30 s at most", job)
    end, nil, ...)
end

local function all_ran_once(counts)
    return counts.pending_jobs - counts.failed_jobs == 0
end

-- Batch::add for one job: counts it in (total and pending jobs, finished_at
-- cleared) and calls push() in one transaction, as Laravel pushes the jobs it adds:
-- a push that raises leaves the counts as they were. Returns push's result; raises
-- when the batch has no row.
function M.add_job(id, push)
    return db():transaction(function(tx)
        local n = tx:update("update " .. quoted_table() .. " set total_jobs = total_jobs + 1, "
            .. "pending_jobs = pending_jobs + 1, finished_at = null where id = ?", { id })
        if n == 0 then error("luaworker.dispatch: batch " .. id .. " has no row in " .. TABLE, 0) end
        return push()
    end)
end

-- Batch::recordSuccessfulJob: after a job of the batch succeeded (not released, not
-- failed): one pending job fewer, its id out of failed_job_ids (a retried job that
-- succeeds), finished_at when none is pending.
local function record_success(id, job_id, job)
    local counts, options = waiting_out_outages("update batch " .. id, job, update_atomic, id,
        function(pending, failed, ids)
            local kept = {}
            for _, v in ipairs(ids) do if v ~= job_id then kept[#kept + 1] = v end end
            return pending - 1, failed, kept
        end)
    if not counts then return end
    if counts.pending_jobs == 0 then
        waiting_out_outages("update batch " .. id, job, function()
            db():update("update " .. quoted_table() .. " set finished_at = ? where id = ?",
                { host.now(), id })
        end)
        if non_empty(options["then"]) then callbacks_left(id, "then", job) end
    end
    if all_ran_once(counts) and non_empty(options.finally) then callbacks_left(id, "finally", job) end
end

-- Batch::recordFailedJob: after a job of the batch failed for good: one failed job
-- more, its id in failed_job_ids; the batch cancelled at the first failure unless
-- it allows failures.
local function record_failure(id, job_id, job)
    local counts, options = waiting_out_outages("update batch " .. id, job, update_atomic, id,
        function(pending, failed, ids)
            local list, seen = {}, false
            for _, v in ipairs(ids) do
                list[#list + 1] = v
                if v == job_id then seen = true end
            end
            if not seen then list[#list + 1] = job_id end
            return pending, failed + 1, list
        end)
    if not counts then return end
    if counts.failed_jobs == 1 and options.allowFailures ~= true then
        waiting_out_outages("cancel batch " .. id, job, function()
            local now = host.now()
            db():update("update " .. quoted_table() .. " set cancelled_at = ?, finished_at = ? where id = ?",
                { now, now, id })
        end)
    end
    if counts.failed_jobs == 1 and non_empty(options.catch) then callbacks_left(id, "catch", job) end
    if all_ran_once(counts) and non_empty(options.finally) then callbacks_left(id, "finally", job) end
end

-- Both outside the job's own transactions: a job's outcome is counted whatever a
-- transaction of its handler becomes.
function M.record_successful_job(id, job_id, job)
    return db_module.outside_transactions(record_success, id, job_id, job)
end

function M.record_failed_job(id, job_id, job)
    return db_module.outside_transactions(record_failure, id, job_id, job)
end

return M
