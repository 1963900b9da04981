--[[ size: count a queue's jobs.
KEYS[1]  queues:Q   KEYS[2]  queues:Q:delayed   KEYS[3]  queues:Q:reserved
Returns  pending + delayed + reserved (the notify list is not counted), as
         Laravel's size script; followed, for luaworker's `size` command, by the
         three parts: {total, pending, delayed, reserved} when ARGV[1] == 'parts'. ]]
local pending = redis.call('llen', KEYS[1])
local delayed = redis.call('zcard', KEYS[2])
local reserved = redis.call('zcard', KEYS[3])
if ARGV[1] == 'parts' then
    return {pending + delayed + reserved, pending, delayed, reserved}
end
return pending + delayed + reserved
