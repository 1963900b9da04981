--[[ concurrency_limiter: Laravel's ConcurrencyLimiter::acquire (Redis::funnel): the
first free one of the limit's slots is taken by this holder for ARGV[2] seconds.
KEYS     the slots: the limiter's name followed by 1, 2... up to the limit
ARGV[1]  the limiter's name (the slot taken is named by it and its number)
ARGV[2]  seconds a slot is held at most     ARGV[3]  the holder (Str::random(20))
Returns  the slot's key as named by ARGV[1] and its number, or nil when every slot
         is held. Its release is scripts/release_lock.lua (only while the holder
         holds it). ]]
for index, value in pairs(redis.call('mget', unpack(KEYS))) do
    if not value then
        redis.call('set', KEYS[index], ARGV[3], 'EX', ARGV[2])
        return ARGV[1] .. index
    end
end
