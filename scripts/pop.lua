--[[ pop: take the next ready job and reserve it.
KEYS[1]  queues:Q            (list of ready jobs)
KEYS[2]  queues:Q:reserved   (sorted set, score = reservation expiry)
KEYS[3]  queues:Q:notify     (list of tokens)
KEYS[4]  optional: the failed-job index   (luaworker:failed_jobs)
KEYS[5]  optional: a new failed-job record (luaworker:failed_jobs:<ARGV[2]>)
ARGV[1]  reservation expiry = now + retry_after (integer Unix seconds)
ARGV[2]  optional, with KEYS[4..5]: the record id for an unusable payload
ARGV[3]  optional: the connection name     ARGV[4]: the queue name
ARGV[5]  optional: now (integer Unix seconds)   ARGV[6]: failed_at text
Returns  {job, reserved}: the payload as it was in the list, and the copy with
         attempts + 1 that is now in KEYS[2]; {false, false} when the list is empty.
         With KEYS[4..5]: a payload that is not JSON or has no numeric attempts is
         moved to a failed-job record instead of being lost, and the reply is
         {false, false, error message}.
Without KEYS[4..5] the keys, arguments and effects are those of Laravel's pop script
(which raises on such payloads after they left the list). ]]
local job = redis.call('lpop', KEYS[1])
if not job then
    return {false, false}
end

local function reserve()
    local decoded = cjson.decode(job)
    decoded['attempts'] = decoded['attempts'] + 1
    return cjson.encode(decoded)
end

local reserved
if KEYS[5] then
    local ok, result = pcall(reserve)
    if not ok then
        local message = 'payload is not a JSON object with a numeric "attempts" ('
            .. tostring(result) .. ')'
        redis.call('hset', KEYS[5], 'uuid', ARGV[2], 'connection', ARGV[3],
            'queue', ARGV[4], 'payload', job, 'exception', message,
            'failed_at', ARGV[6])
        redis.call('zadd', KEYS[4], ARGV[5], ARGV[2])
        return {false, false, message}
    end
    reserved = result
else
    reserved = reserve()
end

redis.call('zadd', KEYS[2], ARGV[1], reserved)
redis.call('lpop', KEYS[3])
return {job, reserved}
