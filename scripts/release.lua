--[[ release: put a reserved job back on the delayed set.
KEYS[1]  queues:Q:delayed
KEYS[2]  queues:Q:reserved
ARGV[1]  the reserved copy, byte for byte as the pop script stored it
ARGV[2]  available-at = now + delay (integer Unix seconds)
ARGV[3]  optional: 'reserved' to add the job to KEYS[1] only when it was still in
         KEYS[2] (luaworker always gives it: a job whose reservation expired and
         was taken again, whose pop a failover lost, or whose first release ran
         before a lost connection, is not added a second time)
ARGV[4]  optional: what goes on KEYS[1] in place of the reserved copy: the job as it
         was popped, its attempt given back (a job a limit held back, with
         keep_attempts); only when the reserved copy was still in KEYS[2]
Returns  1
Without ARGV[3], same keys, arguments and effects as Laravel's release script: the
ZADD happens whether or not the ZREM removed anything. ]]
local removed = redis.call('zrem', KEYS[2], ARGV[1])
if ARGV[4] then
    if removed == 1 then redis.call('zadd', KEYS[1], ARGV[2], ARGV[4]) end
elseif removed == 1 or ARGV[3] ~= 'reserved' then
    redis.call('zadd', KEYS[1], ARGV[2], ARGV[1])
end
return true
