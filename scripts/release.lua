--[[ release: put a reserved job back on the delayed set.
KEYS[1]  queues:Q:delayed
KEYS[2]  queues:Q:reserved
ARGV[1]  the reserved copy, byte for byte as the pop script stored it
ARGV[2]  available-at = now + delay (integer Unix seconds)
ARGV[3]  optional: 'reserved' to add the job to KEYS[1] only when it was still in
         KEYS[2] (luaworker always gives it: a job whose reservation expired and
         was taken again, whose pop a failover lost, or whose first release ran
         before a lost connection, is not added a second time)
Returns  1
Without ARGV[3], same keys, arguments and effects as Laravel's release script: the
ZADD happens whether or not the ZREM removed anything. ]]
local removed = redis.call('zrem', KEYS[2], ARGV[1])
if removed == 1 or ARGV[3] ~= 'reserved' then
    redis.call('zadd', KEYS[1], ARGV[2], ARGV[1])
end
return true
