--[[ release: put a reserved job back on the delayed set.
KEYS[1]  queues:Q:delayed
KEYS[2]  queues:Q:reserved
ARGV[1]  the reserved copy, byte for byte as the pop script stored it
ARGV[2]  available-at = now + delay (integer Unix seconds)
Returns  1
Same keys, arguments and effects as Laravel's release script: the ZADD happens
whether or not the ZREM removed anything. ]]
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('zadd', KEYS[1], ARGV[2], ARGV[1])
return true
