--[[ unreserve: give jobs reserved but not started back to the head of their queue.
KEYS[1]  queues:Q            (list of ready jobs)
KEYS[2]  queues:Q:reserved
KEYS[3]  queues:Q:notify
ARGV     payload, reserved copy, payload, reserved copy, ... in the order they were
         popped
Returns  how many jobs were given back
A job whose reserved copy is no longer in KEYS[2] (its reservation expired and it
was moved, or it was settled) is left alone. Each one given back is where the pop
found it, as it was, with the notify token the pop took: as if it had not been
popped. ]]
local given = 0
for i = #ARGV - 1, 1, -2 do
    if redis.call('zrem', KEYS[2], ARGV[i + 1]) == 1 then
        redis.call('lpush', KEYS[1], ARGV[i])
        redis.call('rpush', KEYS[3], 1)
        given = given + 1
    end
end
return given
