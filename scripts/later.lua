--[[ later: add a job to the delayed set, due at a given time.
KEYS[1]  queues:Q:delayed  (sorted set, score = Unix second the job becomes available)
ARGV[1]  available-at (integer Unix seconds, from the caller's clock)
ARGV[2]  the payload (JSON text)
Returns  nil
Same effect as Laravel's delayed push (ZADD, no notify token). ]]
redis.call('zadd', KEYS[1], ARGV[1], ARGV[2])
