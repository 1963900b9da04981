-- luaworker.queue: Laravel's Redis queue operations, over scripts/*.lua. Keys are
-- built here, with the connection's prefix applied to keys only (as phpredis does),
-- never to payloads or scores.
local redis = require "luaworker.redis"
local host = require "luaworker.host"

local M = {}

-- The failed-job store (luaworker's, in the queue connection's database):
--   <prefix>luaworker:failed_jobs        sorted set: record id -> failed time (Unix s)
--   <prefix>luaworker:failed_jobs:<id>   hash: uuid, connection, queue, payload,
--                                        exception, failed_at (Y-m-d H:i:s)
M.FAILED_INDEX = "luaworker:failed_jobs"

local prefix = ""

function M.set_prefix(p)
    prefix = p
end

-- The four keys of queue q: list, delayed, reserved, notify.
function M.keys(q)
    local k = prefix .. "queues:" .. q
    return k, k .. ":delayed", k .. ":reserved", k .. ":notify"
end

function M.failed_index_key()
    return prefix .. M.FAILED_INDEX
end

function M.failed_record_key(id)
    return prefix .. M.FAILED_INDEX .. ":" .. id
end

function M.push(q, payload)
    local list, _, _, notify = M.keys(q)
    redis.script("queue", "push", { list, notify }, { payload })
end

function M.later(q, available_at, payload)
    local _, delayed = M.keys(q)
    redis.script("queue", "later", { delayed }, { available_at, payload })
end

-- Moves due jobs of q from :delayed, then expired reservations from :reserved, to
-- the list. batch: the most jobs per set, or nil for all.
function M.migrate(q, now, batch)
    local list, delayed, reserved, notify = M.keys(q)
    local args = batch and { now, batch } or { now }
    redis.script("queue", "migrate", { delayed, list, notify }, args)
    redis.script("queue", "migrate", { reserved, list, notify }, args)
end

-- For each queue of qs, the Unix second its next delayed job is due or its next
-- reservation expires (whichever is first), or false when it has neither.
function M.next_due(qs)
    local sets = {}
    for i, q in ipairs(qs) do
        local _, delayed, reserved = M.keys(q)
        sets[2 * i - 1], sets[2 * i] = delayed, reserved
    end
    local scores = redis.script("queue", "next_due", sets, {})
    local due = {}
    for i = 1, #qs do
        local a, b = tonumber(scores[2 * i - 1]), tonumber(scores[2 * i])
        due[i] = (a and b and math.min(a, b)) or a or b or false
    end
    return due
end

-- Ids for failed records of unusable payloads: unique per process and pop,
-- without a system call per pop.
local id_prefix, id_count
local function record_id()
    if not id_prefix then id_prefix, id_count = host.uuid():sub(1, 24), 0 end
    id_count = id_count + 1
    return string.format("%s%012x", id_prefix, id_count)
end

-- The keys and arguments of scripts/pop.lua for up to count jobs of q, reserved
-- until now + retry_after, and the record id an unusable payload would get.
local function pop_call(q, now, retry_after, connection_name, failed_at, count)
    local list, _, reserved, notify = M.keys(q)
    local id = record_id()
    return { list, reserved, notify, M.failed_index_key(), M.failed_record_key(id) },
        { now + retry_after, id, connection_name, q, now, failed_at, count or 1 }, id
end

-- A pop reply as a list of {payload, reserved copy} pairs in queue order (empty
-- when the list was empty); after them, when the pop stopped at an unusable
-- payload (moved to the failed store, see scripts/pop.lua), its message.
function M.parse_pop(r)
    local taken = {}
    for i = 1, #r - 1, 2 do
        if r[i] then taken[#taken + 1] = { r[i], r[i + 1] } end
    end
    if #r % 2 == 1 then return taken, r[#r] end
    return taken
end

-- Pops up to count (default 1) jobs of q, reserving each until now + retry_after.
-- Returns M.parse_pop's pairs and message, then the failed record's id.
function M.pop(q, now, retry_after, connection_name, failed_at, count)
    local keys, args, id = pop_call(q, now, retry_after, connection_name, failed_at, count)
    local taken, problem = M.parse_pop(redis.script("queue", "pop", keys, args))
    return taken, problem, problem and id
end

-- Starts the same pop without waiting (see host.prefetch): its jobs are reported to
-- the supervisor as soon as they come. Returns the id an unusable payload's failed
-- record would get; raises when it cannot be sent.
function M.prefetch(q, now, retry_after, connection_name, failed_at, count)
    local keys, args, id = pop_call(q, now, retry_after, connection_name, failed_at, count)
    local n = #keys
    for i = 1, #args do keys[n + i] = args[i] end
    local ok, message = host.prefetch(q, n, unpack(keys))
    if not ok then redis.raise(message, "connection") end
    return id
end

-- Gives jobs popped but not started ({payload, reserved copy} pairs, in pop
-- order) back to the head of q (scripts/unreserve.lua). Returns how many went back.
function M.unreserve(q, jobs)
    local list, _, reserved, notify = M.keys(q)
    local args = {}
    for i, job in ipairs(jobs) do
        args[2 * i - 1], args[2 * i] = job[1], job[2]
    end
    return redis.script("queue", "unreserve", { list, reserved, notify }, args)
end

-- Deletes a job (ZREM of its reserved copy) without waiting: the command goes out
-- with the next one that waits (see redis.send).
function M.delete_reserved(q, reserved_copy)
    local _, _, reserved = M.keys(q)
    redis.send("queue", "ZREM", reserved, reserved_copy)
end

function M.release(q, reserved_copy, available_at)
    local _, delayed, reserved = M.keys(q)
    redis.script("queue", "release", { delayed, reserved }, { reserved_copy, available_at })
end

-- Records a failed job and removes its reservation in one step (scripts/fail.lua).
-- The record id is record.uuid; when a record already has that id (two payloads
-- with one uuid), <uuid>-2, <uuid>-3...: a failed job never replaces another's
-- record.
function M.fail(q, reserved_copy, record)
    local _, _, reserved = M.keys(q)
    local id, n = record.uuid, 1
    while redis.call("queue", "EXISTS", M.failed_record_key(id)) == 1 do
        n = n + 1
        id = record.uuid .. "-" .. n
    end
    return redis.script("queue", "fail",
        { reserved, M.failed_index_key(), M.failed_record_key(id) },
        { reserved_copy, id, record.connection, q, record.payload,
          record.exception, record.now, record.failed_at, record.uuid })
end

-- Returns total, pending, delayed, reserved.
function M.size(q)
    local list, delayed, reserved = M.keys(q)
    local r = redis.script("queue", "size", { list, delayed, reserved }, { "parts" })
    return r[1], r[2], r[3], r[4]
end

function M.clear(q)
    local list, delayed, reserved, notify = M.keys(q)
    return redis.script("queue", "clear", { list, delayed, reserved, notify }, {})
end

function M.failed_record(id)
    local flat = redis.call("queue", "HGETALL", M.failed_record_key(id))
    if #flat == 0 then return nil end
    local rec = { id = id }
    for i = 1, #flat, 2 do rec[flat[i]] = flat[i + 1] end
    return rec
end

-- Failed records, newest first: a list of tables with the hash's fields and id.
function M.failed_records()
    local records = {}
    for _, id in ipairs(redis.call("queue", "ZREVRANGE", M.failed_index_key(), 0, -1)) do
        records[#records + 1] = M.failed_record(id)
    end
    return records
end

-- Pushes failed record id back onto its queue (scripts/retry.lua). Returns true,
-- false when there is no such record; raises when its payload cannot be retried.
function M.retry(id, q, now)
    local list, _, _, notify = M.keys(q)
    local r = redis.script("queue", "retry",
        { M.failed_index_key(), M.failed_record_key(id), list, notify }, { id, now })
    return r == 1
end

function M.forget(id)
    local removed = redis.call("queue", "ZREM", M.failed_index_key(), id)
    local deleted = redis.call("queue", "DEL", M.failed_record_key(id))
    return removed + deleted > 0
end

function M.flush()
    local ids = redis.call("queue", "ZRANGE", M.failed_index_key(), 0, -1)
    for _, id in ipairs(ids) do
        redis.call("queue", "DEL", M.failed_record_key(id))
    end
    redis.call("queue", "DEL", M.failed_index_key())
    return #ids
end

return M
