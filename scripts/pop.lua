--[[ pop: take the next ready jobs and reserve each.
KEYS[1]  queues:Q            (list of ready jobs)
KEYS[2]  queues:Q:reserved   (sorted set, score = reservation expiry)
KEYS[3]  queues:Q:notify     (list of tokens)
KEYS[4]  optional: the failed-job index   (luaworker:failed_jobs)
KEYS[5]  optional: a new failed-job record (luaworker:failed_jobs:<ARGV[2]>)
ARGV[1]  reservation expiry = now + retry_after (integer Unix seconds)
ARGV[2]  optional, with KEYS[4..5]: the record id for an unusable payload
ARGV[3]  optional: the connection name     ARGV[4]: the queue name
ARGV[5]  optional: now (integer Unix seconds)   ARGV[6]: failed_at text
ARGV[7]  optional: how many jobs to take at most (default 1)
Returns  {job, reserved, job, reserved, ...} for the jobs taken, in list order: each
         payload as it was in the list and its copy with attempts + 1, now in
         KEYS[2]; {false, false} when the list is empty.
         With KEYS[4..5]: a payload that is not JSON or has no numeric attempts is
         moved to the failed-job record instead of being lost; taking stops there
         and the reply ends with false, false and the error message.
Each job taken has exactly the effect of one call of Laravel's pop script (LPOP,
ZADD of the reserved copy, LPOP of a notify token), which this is with one job and
without KEYS[4..5] (Laravel's raises on an unusable payload after it left the list). ]]
local function reserve(job)
    local decoded = cjson.decode(job)
    decoded['attempts'] = decoded['attempts'] + 1
    return cjson.encode(decoded)
end

local taken = {}
for _ = 1, tonumber(ARGV[7]) or 1 do
    local job = redis.call('lpop', KEYS[1])
    if not job then
        break
    end
    local reserved
    if KEYS[5] then
        local ok, result = pcall(reserve, job)
        if not ok then
            local message = 'payload is not a JSON object with a numeric "attempts" ('
                .. tostring(result) .. ')'
            redis.call('hset', KEYS[5], 'uuid', ARGV[2], 'connection', ARGV[3],
                'queue', ARGV[4], 'payload', job, 'exception', message,
                'failed_at', ARGV[6])
            redis.call('zadd', KEYS[4], ARGV[5], ARGV[2])
            taken[#taken + 1] = false
            taken[#taken + 1] = false
            taken[#taken + 1] = message
            return taken
        end
        reserved = result
    else
        reserved = reserve(job)
    end
    redis.call('zadd', KEYS[2], ARGV[1], reserved)
    redis.call('lpop', KEYS[3])
    taken[#taken + 1] = job
    taken[#taken + 1] = reserved
end

if #taken == 0 then
    return {false, false}
end
return taken
