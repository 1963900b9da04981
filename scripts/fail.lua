--[[ fail: record a job as failed and remove its reservation, atomically.
KEYS[1]  queues:Q:reserved
KEYS[2]  the failed-job index   (luaworker:failed_jobs, sorted set of ids by failed time)
KEYS[3]  the failed-job record  (luaworker:failed_jobs:<id>, hash)
ARGV[1]  the reserved copy, byte for byte as the pop script stored it
ARGV[2]  the record id (the payload's uuid)   ARGV[3]  the connection name
ARGV[4]  the queue name   ARGV[5]  the payload as it was popped (attempts not incremented)
ARGV[6]  the exception text   ARGV[7]  now (integer Unix seconds)
ARGV[8]  failed_at text (Y-m-d H:i:s)
ARGV[9]  optional: the job's uuid, when it is not the record id
Returns  the number of reservations removed (0 or 1)
Laravel deletes the reservation, then writes failed_jobs; doing both in one script
means a crash in between cannot lose the job. A record with the same id is replaced
(the caller picks an id no record has). ]]
redis.call('del', KEYS[3])
redis.call('hset', KEYS[3], 'uuid', ARGV[9] or ARGV[2], 'connection', ARGV[3], 'queue', ARGV[4],
    'payload', ARGV[5], 'exception', ARGV[6], 'failed_at', ARGV[8])
redis.call('zadd', KEYS[2], ARGV[7], ARGV[2])
return redis.call('zrem', KEYS[1], ARGV[1])
