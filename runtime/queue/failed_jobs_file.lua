-- luaworker.queue.failed_jobs_file: Laravel 10.10+'s `file` failed-job store
-- (FileFailedJobProvider): a JSON file, storage/framework/cache/failed-jobs.json
-- beside the app's .env by default, holding the newest `limit` (100) failed jobs,
-- newest first, each {id (the payload's uuid), connection, queue, payload,
-- exception, failed_at, failed_at_timestamp}, written pretty-printed as PHP's
-- json_encode(JSON_PRETTY_PRINT) does. Every change is made holding the lock PHP
-- takes, the file cache store's lock "laravel-failed-jobs" (12.36+:
-- "file-store-lock:laravel-failed-jobs"; 5 seconds, waited for up to 10), so
-- luaworker's processes and PHP's (queue:work, queue:forget, queue:retry) never
-- write over each other's records. The file is replaced whole (written beside it,
-- then renamed): a reader never sees half of it.
--
-- Its path and its lock's are failed_jobs.lua's settings (the lock in the cache
-- directory of the app the path belongs to, never the current directory). Text
-- other than the payload comes valid UTF-8 (failed_jobs.lua scrubs it as PHP's
-- mb_convert_encoding does); a payload that is not is refused, never altered.
--
-- A store as failed_jobs.lua describes: write (for its log), check, passing,
-- reason, all, find, forget, flush (log and retry are failed_jobs.lua's).
local cjson = require "cjson"
local host = require "luaworker.host"
local php = require "luaworker.php"
local settings = require "luaworker.base.settings"

local M = {}

local LOCK_SECONDS, LOCK_WAIT, LOCK_RETRY = 5, 10, 0.25

local encode = cjson.new().encode  -- escapes '/' as '\/', as PHP's json_encode does

-- A store error: its message, its errno's name or another code, and whether it
-- passes (the lock PHP holds, a full disk: the write is tried again, the job kept
-- reserved) or lasts (a path that cannot be made, read or written, a payload the
-- file cannot hold: failed_jobs.lua keeps the job in luaworker's Redis store).
local LASTING = { EACCES = true, EPERM = true, ENOENT = true, ENOTDIR = true, EISDIR = true,
    EROFS = true, ENAMETOOLONG = true, ELOOP = true, EEXIST = true }
local Failure = { __tostring = function(e) return e.message end }

local function fail(message, code, passing)
    if passing == nil then passing = not LASTING[code] end
    error(setmetatable({ message = message, code = code, passing = passing }, Failure), 0)
end

local KEYS = { "id", "connection", "queue", "payload", "exception", "failed_at", "failed_at_timestamp" }
local KNOWN = {}
for _, k in ipairs(KEYS) do KNOWN[k] = true end

-- The records as PHP's json_encode($jobs, JSON_PRETTY_PRINT) writes them: four
-- spaces a level, "key": value. A record's keys in the provider's order, any other
-- key (written by a newer Laravel) after them.
local function pretty(records)
    if #records == 0 then return "[]" end
    local out = { "[\n" }
    for i, r in ipairs(records) do
        local keys = {}
        for _, k in ipairs(KEYS) do
            if r[k] ~= nil then keys[#keys + 1] = k end
        end
        local extra = {}
        for k in pairs(r) do
            if type(k) == "string" and not KNOWN[k] then extra[#extra + 1] = k end
        end
        table.sort(extra)
        for _, k in ipairs(extra) do keys[#keys + 1] = k end
        out[#out + 1] = "    {\n"
        for j, k in ipairs(keys) do
            out[#out + 1] = "        " .. encode(k) .. ": " .. encode(r[k]) .. (j < #keys and ",\n" or "\n")
        end
        out[#out + 1] = i < #records and "    },\n" or "    }\n"
    end
    out[#out + 1] = "]"
    return table.concat(out)
end

function M.new(s)
    local path, limit = s.path, s.limit
    local store = { name = "file" }

    -- FileFailedJobProvider::read: the records, or none when the file is missing,
    -- empty or not a JSON array. Raises (a lasting failure) when it is there and
    -- cannot be read: written over, its records would be lost.
    local function read()
        local kind = host.file_kind(path)
        if kind == nil then return {} end
        if kind ~= "file" then
            fail("cannot read " .. path .. ": " .. (kind == "directory" and "Is a directory"
                or "not a regular file"), kind == "directory" and "EISDIR" or "not a file")
        end
        local f, err = io.open(path, "rb")
        if not f then fail("cannot read " .. err, "unreadable", false) end
        local text = f:read("*a")
        f:close()
        if not text then fail("cannot read " .. path, "unreadable", false) end
        local ok, records = pcall(cjson.decode, text)
        if not ok or type(records) ~= "table" then return {} end
        local list = {}
        for _, r in ipairs(records) do
            if type(r) == "table" then list[#list + 1] = r end
        end
        return list
    end

    local function write(records)
        local ok, err, code = host.write_file(path, pretty(records))
        if not ok then fail("cannot record failed jobs in " .. path .. ": " .. err, code) end
    end

    -- The cache file of the lock (FileStore::path: sha1 of the key, under two
    -- levels of its first hex pairs).
    local function lock_path()
        local name = settings.laravel_at_least(12, 36) and "file-store-lock:laravel-failed-jobs"
            or "laravel-failed-jobs"
        local hash = host.sha1(name)
        return s.cache_dir .. "/" .. hash:sub(1, 2) .. "/" .. hash:sub(3, 4) .. "/" .. hash
    end

    -- Runs fn() holding the lock (Lock::block(10)): tried every 250 ms; raises when
    -- it is not had in 10 s (a passing failure), or cannot be taken (as its errno
    -- says). Released after only while still ours (CacheLock).
    local function locked(fn)
        local file = lock_path()
        local owner = php.serialize(host.random_id(16))
        local deadline = host.clock() + LOCK_WAIT
        while true do
            local added, err, code = host.cache_add(file, host.now() + LOCK_SECONDS, owner)
            if added == nil then fail("cannot lock the failed jobs: " .. err, code) end
            if added then break end
            if host.clock() >= deadline then
                fail("cannot lock the failed jobs: the lock laravel-failed-jobs (" .. file
                    .. ") was held for " .. LOCK_WAIT .. " s", "locked", true)
            end
            host.sleep(LOCK_RETRY, true)
        end
        local ok, a, b = pcall(fn)
        local f = io.open(file, "rb")
        if f then
            local content = f:read("*a")
            f:close()
            if content:sub(11) == owner then os.remove(file) end
        end
        if not ok then error(a, 0) end
        return a, b
    end

    -- Writes r first in the file unless it is there (written before a crash);
    -- failed_jobs.lua's store.log around it waits out a passing failure (the lock),
    -- the job kept reserved meanwhile. A payload that is not valid UTF-8 is refused
    -- (lasting): PHP's json_decode could read none of the file's records then.
    function store.write(q, r)
        local payload = r.payload
        if select(2, host.mb_scrub(payload)) > 0 then
            fail("the payload is not valid UTF-8, which the file's JSON cannot hold (PHP's "
                .. "json_decode would read no record of the file)", "payload", false)
        end
        locked(function()
            local records = read()
            for _, old in ipairs(records) do
                if old.id == r.uuid and old.payload == payload then return end
            end
            table.insert(records, 1, { id = r.uuid, connection = r.connection, queue = q,
                payload = payload, exception = r.exception, failed_at = r.failed_at,
                failed_at_timestamp = r.now })
            for i = #records, limit + 1, -1 do records[i] = nil end
            write(records)
        end)
        return r.uuid
    end
    store.where, store.failing_where = path, path

    -- At worker start: the file's directory and the lock's can be made and written,
    -- and the file, when it is there, read. Raises as a write would.
    function store.check()
        for _, file in ipairs({ path, lock_path() }) do
            local ok, err, code = host.prepare_file(file)
            if not ok then fail(err, code) end
        end
    end

    -- Whether err, which write raised, passes (see fail); its reason, said once.
    function store.passing(err)
        return getmetatable(err) == Failure and err.passing
    end

    function store.reason(err)
        return getmetatable(err) == Failure and err.code or tostring(err)
    end

    local function record(r)
        return { id = tostring(r.id), connection = r.connection, queue = r.queue,
            payload = r.payload, exception = r.exception, failed_at = r.failed_at }
    end

    function store.all()
        local records = {}
        for i, r in ipairs(read()) do records[i] = record(r) end
        return records
    end

    function store.find(id)
        for _, r in ipairs(read()) do
            if r.id == id then return record(r) end
        end
        return nil
    end

    function store.forget(id)
        return locked(function()
            local records, kept = read(), {}
            for _, r in ipairs(records) do
                if r.id ~= id then kept[#kept + 1] = r end
            end
            write(kept)
            return #kept ~= #records
        end)
    end

    function store.flush()
        return locked(function()
            local records, kept, now = read(), {}, host.now()
            for _, r in ipairs(records) do
                -- what has no timestamp goes too (PHP: null <= now)
                local at = tonumber(r.failed_at_timestamp)
                if at and at > now then kept[#kept + 1] = r end
            end
            write(kept)
            return #records - #kept
        end)
    end

    return store
end

return M
