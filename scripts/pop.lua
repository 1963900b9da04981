--[[ pop: take the next ready jobs, reserve each, and record them against the worker.
KEYS[1]  queues:Q            (list of ready jobs)
KEYS[2]  queues:Q:reserved   (sorted set, score = reservation expiry)
KEYS[3]  queues:Q:notify     (list of tokens)
KEYS[4]  optional: the failed-job index   (luaworker:failed_jobs)
KEYS[5]  optional: a new failed-job record (luaworker:failed_jobs:<ARGV[2]>)
KEYS[6]  optional: the worker's jobs of Q  (queues:Q:luaworker:<worker>, hash)
KEYS[7]  optional: the workers of Q        (queues:Q:luaworker:workers, set)
KEYS[8]  optional: the worker's heartbeat  (queues:Q:luaworker:<worker>:alive)
ARGV[1]  reservation expiry = now + retry_after (integer Unix seconds)
ARGV[2]  optional, with KEYS[4..5]: the record id for an unusable payload
ARGV[3]  optional: the connection name     ARGV[4]: the queue name
ARGV[5]  optional: now (integer Unix seconds)   ARGV[6]: failed_at text
ARGV[7]  optional: how many jobs to take at most (default 1)
ARGV[8]  with KEYS[6..8]: the worker's id   ARGV[9]: the number of the first job taken
         (the next ones count up)   ARGV[10]: seconds KEYS[6] lives after this pop,
         and KEYS[7] at least
         ARGV[11]: milliseconds the heartbeat lives   ARGV[12]: the heartbeat's value
         ARGV[13]: with KEYS[6..8], optional: the entries of KEYS[6] numbered below
         it go (the jobs the worker finished: their outcome is in Redis)
ARGV[14] optional: the most bytes of payloads one pop takes (the worker's memory
         allows no more); "" or absent: no limit
Returns  {job, reserved, job, reserved, ...} for the jobs taken, in list order: each
         payload as it was in the list and its copy with attempts + 1, now in
         KEYS[2]; {false, false} when the list is empty.
         With KEYS[4..5]: a payload that is not JSON or has no numeric attempts, or
         that is longer than ARGV[14] alone, is moved to the failed-job record
         instead of being lost; taking stops there and the reply ends with false,
         false and the error message. A later payload that would take the pop's
         total past ARGV[14] stays at the head of the list, and taking stops.
Each job taken has exactly the effect of one call of Laravel's pop script (LPOP,
ZADD of the reserved copy, LPOP of a notify token), which this is with one job and
without KEYS[4..8] (Laravel's raises on an unusable payload after it left the list).
With KEYS[6..8], in the same step: each job taken is recorded in KEYS[6] as fields
p<number> (the payload) and r<number> (the reserved copy), so that whoever finds
the worker's heartbeat gone can give back the jobs it had not started
(scripts/give_back.lua); the worker is added to KEYS[7]; its heartbeat is set; and
the entries of the jobs it says it finished (those below ARGV[13]) are dropped. ]]
local function reserve(job)
    local decoded = cjson.decode(job)
    decoded['attempts'] = decoded['attempts'] + 1
    return cjson.encode(decoded)
end

local record = KEYS[6]
local number = tonumber(ARGV[9])

if record then
    local below = tonumber(ARGV[13])
    if below then
        local finished = {}
        for _, field in ipairs(redis.call('hkeys', record)) do
            local n = tonumber(string.match(field, '^[pr](%d+)$'))
            if n and n < below then
                finished[#finished + 1] = field
            end
        end
        if #finished > 0 then
            redis.call('hdel', record, unpack(finished))
        end
    end
    redis.call('sadd', KEYS[7], ARGV[8])
    -- workers with a longer retry_after may share the queue: never shortened
    if redis.call('ttl', KEYS[7]) < tonumber(ARGV[10]) then
        redis.call('expire', KEYS[7], ARGV[10])
    end
    redis.call('set', KEYS[8], ARGV[12], 'px', ARGV[11])
end

local taken = {}
local entries = {}   -- the record's new fields and values, written at once
local budget = tonumber(ARGV[14])
for _ = 1, tonumber(ARGV[7]) or 1 do
    local job = redis.call('lpop', KEYS[1])
    if not job then
        break
    end
    if budget and #taken > 0 and #job > budget then
        redis.call('lpush', KEYS[1], job)
        break
    end
    local reserved
    if KEYS[5] then
        local ok, result
        if budget and #job > budget then
            ok, result = false, nil
        else
            ok, result = pcall(reserve, job)
        end
        if not ok then
            local message
            if result == nil then
                message = 'payload of ' .. #job .. ' bytes is larger than the ' .. budget
                    .. ' bytes a pop may take under the worker\'s --memory-limit (a quarter of '
                    .. 'it: a payload and its reserved copy are handed over together, then decoded)'
            else
                message = 'payload is not a JSON object with a numeric "attempts" ('
                    .. tostring(result) .. ')'
            end
            redis.call('hset', KEYS[5], 'uuid', ARGV[2], 'connection', ARGV[3],
                'queue', ARGV[4], 'payload', job, 'exception', message,
                'failed_at', ARGV[6])
            redis.call('zadd', KEYS[4], ARGV[5], ARGV[2])
            taken[#taken + 1] = false
            taken[#taken + 1] = false
            taken[#taken + 1] = message
            break
        end
        reserved = result
    else
        reserved = reserve(job)
    end
    redis.call('zadd', KEYS[2], ARGV[1], reserved)
    redis.call('lpop', KEYS[3])
    if record then
        entries[#entries + 1] = 'p' .. number
        entries[#entries + 1] = job
        entries[#entries + 1] = 'r' .. number
        entries[#entries + 1] = reserved
        number = number + 1
    end
    taken[#taken + 1] = job
    taken[#taken + 1] = reserved
    if budget then
        budget = budget - #job
    end
end

if record then
    if #entries > 0 then
        redis.call('hset', record, unpack(entries))
    end
    redis.call('expire', record, ARGV[10])
end
if #taken == 0 then
    return {false, false}
end
return taken
