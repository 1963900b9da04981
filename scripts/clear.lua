--[[ clear: delete every job of a queue.
KEYS[1]  queues:Q   KEYS[2]  queues:Q:delayed   KEYS[3]  queues:Q:reserved
KEYS[4]  queues:Q:notify
Returns  the number of jobs deleted (pending + delayed + reserved), as Laravel's
         clear script; reserved jobs still running elsewhere are deleted too. ]]
local size = redis.call('llen', KEYS[1]) + redis.call('zcard', KEYS[2])
    + redis.call('zcard', KEYS[3])
redis.call('del', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
return size
