-- luaworker.queue: Laravel's Redis queue operations, over scripts/*.lua. Keys are
-- built here, with the connection's prefix applied to keys only (as phpredis does),
-- never to payloads or scores; the pop script's reply is read here, and only here.
--
-- On a Redis Cluster every key of a queue must live in one slot, which a hash tag
-- makes ({default}): below Laravel 13.5 the app names its queues with one (or its
-- prefix has one), and a queue whose keys would have none is refused
-- (M.cluster_problem); from 13.5 on, a queue name without one is wrapped in braces
-- in its keys (queues:{default}), as RedisQueue::getQueueRedisKey does. The
-- payloads and the failed records keep the queue's own name.
local redis = require "luaworker.redis"
local host = require "luaworker.host"
local log = require "luaworker.base.log"

local M = {}

-- The failed-job store (luaworker's, in the queue connection's database):
--   <prefix>luaworker:failed_jobs        sorted set: record id -> failed time (Unix s)
--   <prefix>luaworker:failed_jobs:<id>   hash: uuid, connection, queue, payload,
--                                        exception, failed_at (Y-m-d H:i:s)
-- On a cluster a job's record must share its queue's slot (scripts/fail.lua writes
-- both in one step), so each queue has its index and records beside its keys,
--   <prefix>queues:<name>:luaworker:failed_jobs[:<id>]
-- and the set <prefix>luaworker:failed_queues names the queues that may have some.
M.FAILED_INDEX = "luaworker:failed_jobs"

local prefix = ""
local cluster, wraps = false, false

function M.set_prefix(p)
    prefix = p
end

-- key with the connection's prefix, as phpredis applies it to the app's keys.
function M.prefixed(key)
    return prefix .. key
end

-- On a cluster (wrap: Laravel 13.5+, which wraps untagged queue names).
function M.set_cluster(on, wrap)
    cluster, wraps = on, on and wrap
end

-- Laravel's Connection::hasHashTag: a '{' with a '}' after it and something between.
local function has_hash_tag(s)
    local open = s:find("{", 1, true)
    local close = open and s:find("}", open + 1, true)
    return close ~= nil and close > open + 1
end
M.has_hash_tag = has_hash_tag

-- Whether the worker is on a cluster, and whether it names keys as Laravel 13.5+
-- does there (M.set_cluster's).
function M.cluster()
    return cluster, wraps
end

-- The name of q in its keys.
local function key_name(q)
    if wraps and not has_hash_tag(q) then return "{" .. q .. "}" end
    return q
end

-- Why q cannot be worked on this cluster, or nil.
function M.cluster_problem(q)
    if not cluster or wraps or has_hash_tag(prefix .. "queues:" .. q) then return nil end
    return string.format("queue %s has no hash tag, and on a Redis Cluster its keys (%squeues:%s, "
        .. ":reserved, ...) would be in different slots: name it {%s} in the app and here, as "
        .. "Laravel before 13.5 needs on a cluster (13.5 wraps it itself: --laravel=13.5)",
        q, prefix, q, q)
end

-- The four keys of queue q: list, delayed, reserved, notify.
function M.keys(q)
    local k = prefix .. "queues:" .. key_name(q)
    return k, k .. ":delayed", k .. ":reserved", k .. ":notify"
end

-- The keys that account for the jobs of q a worker holds (scripts/pop.lua,
-- give_back.lua): its record (a hash), the set of the workers of q, its heartbeat.
-- With id nil, only the set.
function M.worker_keys(q, id)
    local k = prefix .. "queues:" .. key_name(q) .. ":luaworker:"
    if not id then return nil, k .. "workers" end
    return k .. id, k .. "workers", k .. id .. ":alive"
end

-- The failed-job index that holds q's records (see above).
function M.failed_index_key(q)
    if cluster then return prefix .. "queues:" .. key_name(q) .. ":" .. M.FAILED_INDEX end
    return prefix .. M.FAILED_INDEX
end

function M.failed_record_key(id, q)
    return M.failed_index_key(q) .. ":" .. id
end

local function failed_queues_key()
    return prefix .. "luaworker:failed_queues"
end

-- On a cluster, notes that q may have failed records (before a worker of q pops).
function M.note_failed_queue(q)
    if cluster then redis.call("queue", "SADD", failed_queues_key(), q) end
end

-- The queues whose indexes hold failed records: the one index off a cluster (any
-- queue stands for it).
local function failed_queues()
    if not cluster then return { "default" } end
    local qs = redis.call("queue", "SMEMBERS", failed_queues_key())
    table.sort(qs)
    return qs
end

-- On a cluster, a push waits until a replica of its master has it (WAIT 1): the job
-- that pushed it (a chain's next link, luaworker.dispatch) is deleted next, on its
-- own queue's master, and a failover of the pushed job's master before it passed
-- the push on would lose the new job while the delete stayed. A master with no
-- replica that confirms within REPLICA_WAIT_MS is not waited for again for
-- UNREPLICATED_FOR seconds, and this is said once per queue.
local REPLICA_WAIT_MS, UNREPLICATED_FOR = 1000, 60
local unreplicated = {}  -- key -> until when (host.clock()) pushes onto it are not waited for

local function replicated(q, key)
    if not cluster or (unreplicated[key] or 0) > host.clock() then return end
    if redis.call_at("queue", key, "WAIT", 1, REPLICA_WAIT_MS) == 0 then
        if not unreplicated[key] then
            log.error(string.format("no replica of the master of queue %s confirmed a push within %d ms: "
                .. "pushes onto it are not waited for (a failover of that master may lose the "
                .. "jobs it had not passed on)", q, REPLICA_WAIT_MS))
        end
        unreplicated[key] = host.clock() + UNREPLICATED_FOR
    end
end

-- Pushes a payload (Laravel's push). Not safe to repeat: a lost connection raises.
function M.push(q, payload)
    local list, _, _, notify = M.keys(q)
    redis.script_once("queue", "push", { list, notify }, { payload })
    replicated(q, list)
end

-- Adds a payload to the delayed set (Laravel's later).
function M.later(q, available_at, payload)
    local _, delayed = M.keys(q)
    redis.script("queue", "later", { delayed }, { available_at, payload })
    replicated(q, delayed)
end

-- Moves due jobs of q from :delayed, then expired reservations from :reserved, to
-- the list. batch: the most jobs per set, or nil for all.
function M.migrate(q, now, batch)
    local list, delayed, reserved, notify = M.keys(q)
    local args = batch and { now, batch } or { now }
    redis.script("queue", "migrate", { delayed, list, notify }, args)
    redis.script("queue", "migrate", { reserved, list, notify }, args)
end

-- Waits for a push onto one of qs (a BLPOP on their notify lists, on the "block"
-- connection of its own) for up to seconds (-1: without limit; exact: to the
-- millisecond, for a job that comes due then); a signal or a change of a tracked
-- delayed set (track_delayed) ends it early. Raises a RedisError.
function M.wait_for_push(qs, seconds, exact)
    local notify = {}
    for i, q in ipairs(qs) do notify[i] = select(4, M.keys(q)) end
    redis.wait_notify(seconds, exact, notify)
end

-- Asks Redis to report every change of the :delayed sets of qs to the idle wait
-- (CLIENT TRACKING ... BCAST on the "block" connection, Redis 6+): Laravel's later()
-- adds a job without a notify token, and each report ends a wait_for_push. Raises a
-- RedisError (a reply error: this Redis cannot).
function M.track_delayed(qs)
    local delayed = select(2, M.keys(qs[1]))
    -- on a cluster, the block connection learns first which node serves the queue's
    -- slot (a MOVED if it did not know): the subscription must be on that node
    if cluster then redis.call("block", "EXISTS", delayed) end
    local id = redis.subscribe_invalidations(delayed)
    local args = { "CLIENT", "TRACKING", "ON", "REDIRECT", id, "BCAST" }
    for _, q in ipairs(qs) do
        args[#args + 1] = "PREFIX"
        args[#args + 1] = select(2, M.keys(q))
    end
    redis.call("block", "CLIENT", "TRACKING", "OFF")
    redis.call("block", unpack(args))
end

-- For each queue of qs, the Unix second its next delayed job is due or its next
-- reservation expires (whichever is first), or false when it has neither.
function M.next_due(qs)
    local sets = {}
    for i, q in ipairs(qs) do
        local _, delayed, reserved = M.keys(q)
        sets[2 * i - 1], sets[2 * i] = delayed, reserved
    end
    local scores
    if cluster then  -- a script's keys share a slot: one call per queue
        scores = {}
        for i = 1, #qs do
            local s = redis.script("queue", "next_due", { sets[2 * i - 1], sets[2 * i] }, {})
            scores[2 * i - 1], scores[2 * i] = s[1], s[2]
        end
    else
        scores = redis.script("queue", "next_due", sets, {})
    end
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

-- A pop of up to count jobs of q for a worker, as scripts/pop.lua's keys and
-- arguments, and the id an unusable payload's failed record gets. pop:
-- {now =, retry_after =, connection =, count =, worker =, number =, ttl =,
--  heartbeat_ms =, heartbeat =, finished_below =, max_bytes =}: worker's jobs are
-- numbered from number on; its record lives ttl seconds; heartbeat is the
-- heartbeat's value; the entries of the jobs numbered below finished_below go (it
-- finished them); max_bytes (optional): the most bytes of payloads the pop takes,
-- a longer payload alone kept as failed (its memory could not hold it).
local function pop_call(q, pop)
    local list, _, reserved, notify = M.keys(q)
    local record, workers, alive = M.worker_keys(q, pop.worker)
    local id = record_id()
    local args = { pop.now + pop.retry_after, id, pop.connection, q, pop.now,
          os.date("%Y-%m-%d %H:%M:%S", pop.now), pop.count, pop.worker, pop.number, pop.ttl,
          pop.heartbeat_ms, pop.heartbeat }
    args[13] = pop.finished_below or ""
    args[14] = pop.max_bytes or ""
    return { list, reserved, notify, M.failed_index_key(q), M.failed_record_key(id, q), record,
            workers, alive }, args, id
end

-- A pop reply as a list of {payload, reserved copy} pairs in queue order (empty
-- when the list was empty); after them, when the pop stopped at an unusable
-- payload (moved to the failed store, see scripts/pop.lua), its message.
local function parse_pop(r)
    local taken = {}
    for i = 1, #r - 1, 2 do
        if r[i] then taken[#taken + 1] = { r[i], r[i + 1] } end
    end
    if #r % 2 == 1 then return taken, r[#r] end
    return taken
end

-- Pops (see pop_call). Returns the {payload, reserved copy} pairs taken, and, when
-- it met an unusable payload, the message and the failed record's id. Raises a
-- RedisError; when its kind is "connection", the pop may have happened: its jobs
-- are then in the worker's record (give_back finds them).
function M.pop(q, pop)
    local keys, args, id = pop_call(q, pop)
    local taken, problem = parse_pop(redis.script_once("queue", "pop", keys, args))
    return taken, problem, problem and id
end

-- Starts the same pop without waiting. Returns a handle for M.finish_pop.
function M.start_pop(q, pop)
    local keys, args, id = pop_call(q, pop)
    return { id = redis.defer("queue", "pop", keys, args), record_id = id }
end

-- Waits for the pop of handle; returns as M.pop.
function M.finish_pop(handle)
    local taken, problem = parse_pop(redis.collect(handle.id))
    return taken, problem, problem and handle.record_id
end

-- Gives back the jobs of q that worker took and did not start (scripts/give_back.lua;
-- mode: "own", "retire", "dead" or "killed"). Returns how many went back (false for
-- "dead" while the worker's heartbeat is still there) and, for "dead" and "killed",
-- the jobs it started that are still reserved, a list of {number =, payload =,
-- reserved =} (empty when none). limit: the most seconds to wait out a Redis
-- outage (default: none). expire_by, for "dead": the Unix second by which the
-- reservations of the jobs it started end at the latest (see scripts/give_back.lua).
function M.give_back(q, worker, mode, limit, expire_by)
    local list, _, reserved, notify = M.keys(q)
    local record, workers, alive = M.worker_keys(q, worker)
    local r = redis.script("queue", "give_back", { list, reserved, notify, record, workers, alive },
        { worker, mode, expire_by }, limit)
    if r == -1 then return false end
    local running = {}
    for i = 2, #r, 3 do
        running[#running + 1] = { number = r[i], payload = r[i + 1], reserved = r[i + 2] }
    end
    return r[1], running
end

-- The ids of the workers recorded as holding jobs of q.
function M.workers(q)
    local _, workers = M.worker_keys(q)
    return redis.call("queue", "SMEMBERS", workers)
end

-- Which of the workers ids (a list) of q have a heartbeat: a list of booleans.
function M.alive(q, ids)
    if #ids == 0 then return {} end
    local keys = {}
    for i, id in ipairs(ids) do keys[i] = select(3, M.worker_keys(q, id)) end
    local values = redis.call("queue", "MGET", unpack(keys))
    local alive = {}
    for i = 1, #ids do alive[i] = values[i] ~= false and values[i] ~= nil end
    return alive
end

-- Records that worker started its job number of q (the record's `started` field;
-- see give_back.lua), without waiting.
function M.start(q, worker, number)
    redis.send("queue", "HSET", (M.worker_keys(q, worker)), "started", number)
end

-- Whether reserved_copy is still in q's reserved set. Waits out Redis failures.
function M.is_reserved(q, reserved_copy)
    local _, _, reserved = M.keys(q)
    return redis.call("queue", "ZSCORE", reserved, reserved_copy) ~= nil
end

-- Ends the reservation of a job whose worker died while it ran: its reserved copy
-- is due at Unix second `at` (ZADD XX: nothing when it left the set), and the next
-- migrate of any worker puts it back on its queue with the attempt it used counted.
function M.expire_reservation(q, reserved_copy, at)
    local _, _, reserved = M.keys(q)
    redis.call("queue", "ZADD", reserved, "XX", at, reserved_copy)
end

-- Deletes a job (ZREM of its reserved copy) without waiting: the command goes out
-- with the next one that waits, or a flush (see redis.send).
function M.delete_reserved(q, reserved_copy)
    local _, _, reserved = M.keys(q)
    redis.send("queue", "ZREM", reserved, reserved_copy)
end

-- Laravel's release: the job back on the delayed set, due at available_at, but only
-- while this worker still holds it (scripts/release.lua's ARGV[3]): its reserved copy
-- is still in the reserved set. Laravel's script adds it whatever; a job whose
-- reservation expired and was taken again, or whose pop a failover lost, would then
-- be in the queue twice. Made again, after a lost connection, the same way.
-- as_popped (optional): the job as it was popped, put back in place of its reserved
-- copy: its attempt given back.
function M.release(q, reserved_copy, available_at, as_popped)
    local _, delayed, reserved = M.keys(q)
    redis.script("queue", "release", { delayed, reserved },
        { reserved_copy, available_at, "reserved", as_popped })
end

-- Records a failed job and removes its reservation in one step (scripts/fail.lua).
-- The record id is record.uuid; when a record already has that id (two payloads
-- with one uuid), <uuid>-2, <uuid>-3...: a failed job never replaces another's
-- record. A record of the same payload is taken for this one, so that a call made
-- again (after a lost connection) writes no second record.
function M.fail(q, reserved_copy, record)
    local _, _, reserved = M.keys(q)
    local id, n = record.uuid, 1
    while redis.call("queue", "EXISTS", M.failed_record_key(id, q)) == 1 do
        if redis.call("queue", "HGET", M.failed_record_key(id, q), "payload") == record.payload then
            return redis.call("queue", "ZREM", reserved, reserved_copy)
        end
        n = n + 1
        id = record.uuid .. "-" .. n
    end
    return redis.script("queue", "fail",
        { reserved, M.failed_index_key(q), M.failed_record_key(id, q) },
        { reserved_copy, id, record.connection, q, record.payload,
          record.exception, record.now, record.failed_at, record.uuid })
end

-- Returns total, pending, delayed, reserved.
function M.size(q)
    local list, delayed, reserved = M.keys(q)
    local r = redis.script("queue", "size", { list, delayed, reserved }, { "parts" })
    return r[1], r[2], r[3], r[4]
end

-- The payload of q's oldest waiting job (the head of its list), or nil.
function M.oldest_pending(q)
    local list = M.keys(q)
    local payload = redis.call("queue", "LINDEX", list, 0)
    return type(payload) == "string" and payload or nil
end

-- For `luaworker peek`: count jobs of q in state ("pending": the list, oldest first;
-- "delayed" and "reserved": their sets, soonest first) from the offset-th on, as
-- {payload =, due = the set's score (when due, when the reservation expires)}.
-- Reads only.
function M.peek(q, state, offset, count)
    local list, delayed, reserved = M.keys(q)
    local jobs = {}
    if state == "pending" then
        for i, payload in ipairs(redis.call("queue", "LRANGE", list, offset, offset + count - 1)) do
            jobs[i] = { payload = payload }
        end
        return jobs
    end
    local flat = redis.call("queue", "ZRANGE", state == "delayed" and delayed or reserved, offset,
        offset + count - 1, "WITHSCORES")
    for i = 1, #flat, 2 do jobs[#jobs + 1] = { payload = flat[i], due = tonumber(flat[i + 1]) } end
    return jobs
end

function M.clear(q)
    local list, delayed, reserved, notify = M.keys(q)
    return redis.script("queue", "clear", { list, delayed, reserved, notify }, {})
end

-- The queue whose index holds failed record id (any queue off a cluster), or nil.
local function failed_queue_of(id)
    if not cluster then return "default" end
    for _, q in ipairs(failed_queues()) do
        if redis.call("queue", "ZSCORE", M.failed_index_key(q), id) then return q end
    end
    return nil
end

local function read_record(id, q)
    local flat = redis.call("queue", "HGETALL", M.failed_record_key(id, q))
    if #flat == 0 then return nil end
    local rec = { id = id }
    for i = 1, #flat, 2 do rec[flat[i]] = flat[i + 1] end
    return rec
end

function M.failed_record(id)
    local q = failed_queue_of(id)
    return q and read_record(id, q)
end

-- Failed records, newest first: a list of tables with the hash's fields and id.
function M.failed_records()
    local entries = {}
    for _, q in ipairs(failed_queues()) do
        local flat = redis.call("queue", "ZREVRANGE", M.failed_index_key(q), 0, -1, "WITHSCORES")
        for i = 1, #flat, 2 do
            entries[#entries + 1] = { id = flat[i], q = q, at = tonumber(flat[i + 1]), n = #entries }
        end
    end
    -- newest first; one index's order kept between records of the same second
    table.sort(entries, function(a, b)
        if a.at ~= b.at then return a.at > b.at end
        return a.n < b.n
    end)
    local records = {}
    for _, e in ipairs(entries) do records[#records + 1] = read_record(e.id, e.q) end
    return records
end

-- Pushes failed record id back onto its queue (scripts/retry.lua). Returns true,
-- false when there is no such record; raises when its payload cannot be retried.
function M.retry(id, q, now)
    local list, _, _, notify = M.keys(q)
    local r = redis.script("queue", "retry",
        { M.failed_index_key(q), M.failed_record_key(id, q), list, notify }, { id, now })
    return r == 1
end

-- Pushes payload, the failed record id of another store, back onto queue q as
-- retry does (scripts/retry.lua with the payload given). Returns true; raises when
-- the payload cannot be retried.
function M.retry_payload(id, payload, q, now)
    local list, _, _, notify = M.keys(q)
    redis.script("queue", "retry", { M.failed_index_key(q), M.failed_record_key(id, q), list, notify },
        { id, now, payload })
    return true
end

function M.forget(id)
    local q = failed_queue_of(id)
    if not q then return false end
    local removed = redis.call("queue", "ZREM", M.failed_index_key(q), id)
    local deleted = redis.call("queue", "DEL", M.failed_record_key(id, q))
    return removed + deleted > 0
end

-- Deletes the failed records the indexes list when it starts, FLUSH_BATCH at a
-- time, each batch in one step (scripts/flush.lua): records failed meanwhile stay
-- whole. Returns how many it deleted.
local FLUSH_BATCH = 500

function M.flush()
    local deleted = 0
    for _, q in ipairs(failed_queues()) do
        local index = M.failed_index_key(q)
        local ids = redis.call("queue", "ZRANGE", index, 0, -1)
        for first = 1, #ids, FLUSH_BATCH do
            local keys, batch = { index }, {}
            for i = first, math.min(#ids, first + FLUSH_BATCH - 1) do
                batch[#batch + 1] = ids[i]
                keys[#keys + 1] = M.failed_record_key(ids[i], q)
            end
            deleted = deleted + redis.script("queue", "flush", keys, batch)
        end
    end
    return deleted
end

return M
