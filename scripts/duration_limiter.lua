--[[ duration_limiter: Laravel's DurationLimiter::acquire (Redis::throttle,
RateLimitedWithRedis, ThrottlesExceptionsWithRedis): at most ARGV[4] acquisitions per
window of ARGV[3] seconds, the window a hash of its start, end and count.
KEYS[1]  the limiter's key (the name as given, with the connection's prefix)
ARGV[1]  now with fractions (microtime(true))   ARGV[2]  now in whole seconds
ARGV[3]  the window's seconds                   ARGV[4]  acquisitions a window allows
ARGV[5]  optional: 'peek' for DurationLimiter::tooManyAttempts: nothing counted;
         returns {the window's end, acquisitions left}, or, with no window now,
         {0, ARGV[2] + ARGV[3]} (Laravel's reply, read as "not too many")
Returns  {acquired (1, or nil/false), the window's end (Unix second), acquisitions
         left}. A missing key, or a now outside the window, starts a new window
         (living twice its length) with this acquisition. The window test compares
         ARGV[1] with the stored numbers as strings, as Laravel's script does, so
         that both runtimes decide alike. ]]
local key, now, second = KEYS[1], ARGV[1], ARGV[2]
local decay, allowed = ARGV[3], ARGV[4]

local function start_window()
    redis.call('HMSET', key, 'start', second, 'end', second + decay, 'count', 1)
    return redis.call('EXPIRE', key, decay * 2)
end

if ARGV[5] == 'peek' then
    if redis.call('EXISTS', key) == 1 and now >= redis.call('HGET', key, 'start')
            and now <= redis.call('HGET', key, 'end') then
        return {redis.call('HGET', key, 'end'), allowed - redis.call('HGET', key, 'count')}
    end
    return {0, second + decay}
end
if redis.call('EXISTS', key) == 0 then
    return {start_window(), second + decay, allowed - 1}
end
if now >= redis.call('HGET', key, 'start') and now <= redis.call('HGET', key, 'end') then
    local count = tonumber(redis.call('HINCRBY', key, 'count', 1))
    return {count <= tonumber(allowed), redis.call('HGET', key, 'end'),
        allowed - redis.call('HGET', key, 'count')}
end
return {start_window(), second + decay, allowed - 1}
