--[[ migrate: move due jobs from a sorted set to the tail of the ready list.
KEYS[1]  queues:Q:delayed or queues:Q:reserved
KEYS[2]  queues:Q
KEYS[3]  queues:Q:notify
ARGV[1]  now (integer Unix seconds); members scored <= now are due
ARGV[2]  optional: the most jobs to move (Laravel 9.23+ migration_batch_size;
         negative or absent = all)
Returns  the moved payloads, in score order
Same keys, arguments and effects as Laravel's migrateExpiredJobs script: one RPUSH
per 100 jobs and one notify token per job. ]]
local due
if ARGV[2] then
    due = redis.call('zrangebyscore', KEYS[1], '-inf', ARGV[1], 'limit', 0, ARGV[2])
else
    due = redis.call('zrangebyscore', KEYS[1], '-inf', ARGV[1])
end

if next(due) ~= nil then
    redis.call('zremrangebyrank', KEYS[1], 0, #due - 1)
    for i = 1, #due, 100 do
        local last = math.min(i + 99, #due)
        redis.call('rpush', KEYS[2], unpack(due, i, last))
        for _ = i, last do
            redis.call('rpush', KEYS[3], 1)
        end
    end
end

return due
