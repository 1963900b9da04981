--[[ cache_add: Laravel's RedisStore::add: the value stored for ARGV[2] seconds only
when the key is not there.
KEYS[1]  the item's key (the cache prefix and the key)
ARGV[1]  the value as the store keeps it (a number as it is)   ARGV[2]  seconds
Returns  OK when it was stored, false when the key was there. ]]
return redis.call('exists', KEYS[1]) < 1 and redis.call('setex', KEYS[1], ARGV[2], ARGV[1])
