--[[ retry: push a failed job back onto its queue, as `queue:retry` does.
KEYS[1]  the failed-job index   (luaworker:failed_jobs)
KEYS[2]  the failed-job record  (luaworker:failed_jobs:<id>)
KEYS[3]  queues:Q   (Q = the record's queue)
KEYS[4]  queues:Q:notify
ARGV[1]  the record id   ARGV[2]  now (integer Unix seconds)
Returns  1 when the job was pushed and its record deleted, 0 when there is no such
         record; an error reply when the stored payload is not a JSON object (it stays
         in the store: pushing it would make every worker's pop script lose it).
The payload gets attempts = 0, as Laravel's retry does (added when missing, so a
payload kept because it had none becomes poppable); a retryUntil already in the
past is set to null (Laravel recomputes it by calling the job's retryUntil() method,
which a non-PHP tool cannot do), so the job gets its maxTries instead of failing at once. ]]
local payload = redis.call('hget', KEYS[2], 'payload')
if not payload then
    return 0
end

local ok, decoded = pcall(cjson.decode, payload)
if not ok or type(decoded) ~= 'table' then
    return redis.error_reply('failed job ' .. ARGV[1]
        .. ' has a payload that is not a JSON object; fix it or forget it')
end

decoded['attempts'] = 0
if type(decoded['retryUntil']) == 'number' and decoded['retryUntil'] < tonumber(ARGV[2]) then
    decoded['retryUntil'] = cjson.null
end

redis.call('rpush', KEYS[3], cjson.encode(decoded))
redis.call('rpush', KEYS[4], 1)
redis.call('del', KEYS[2])
redis.call('zrem', KEYS[1], ARGV[1])
return 1
