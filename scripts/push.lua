--[[ push: append a job to a queue and add one notify token.
KEYS[1]  queues:Q          (list of ready jobs)
KEYS[2]  queues:Q:notify   (list of tokens for blocking pops)
ARGV[1]  the payload (JSON text)
Returns  nil
Same keys, arguments and effects as Laravel's push script. ]]
redis.call('rpush', KEYS[1], ARGV[1])
redis.call('rpush', KEYS[2], 1)
