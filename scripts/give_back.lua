--[[ give_back: give the jobs a worker took and did not start back to the head of
their queue, as they were.
KEYS[1]  queues:Q            (list of ready jobs)
KEYS[2]  queues:Q:reserved
KEYS[3]  queues:Q:notify
KEYS[4]  the worker's jobs of Q  (queues:Q:luaworker:<worker>, hash; see pop.lua)
KEYS[5]  the workers of Q        (queues:Q:luaworker:workers, set)
KEYS[6]  the worker's heartbeat  (queues:Q:luaworker:<worker>:alive)
ARGV[1]  the worker's id
ARGV[2]  who asks: 'own'    the worker itself, which goes on working
                   'retire' the worker itself, which stops: its record, heartbeat
                            and membership of KEYS[5] are removed
                   'dead'   another process: only when KEYS[6] is gone (the worker
                            stopped refreshing it); then as 'retire'
                   'killed' another process that saw the worker die (its
                            supervisor): as 'dead', without looking at KEYS[6]
ARGV[3]  optional, for 'dead': a Unix second; the reservation of each job the worker
         started that is still reserved ends by then at the latest (a later score
         is lowered to it): a job that never had its lease renewed (it started less
         than half a heartbeat before the worker died) comes back then, not after
         retry_after. A worker that lives renews it sooner.
Returns  {given}: how many jobs went back; -1 for 'dead' when the heartbeat is still
         there. For 'dead' and 'killed', followed by each job the worker started
         that is still reserved (it was running, or its outcome had not reached
         Redis), in number order: its number, its payload, its reserved copy.
The record's field `started` is the number of the job the worker started last (it
starts them in number order): jobs numbered above it were not started, and go
back. Each one whose reserved copy is
still in KEYS[2] is removed from it and pushed to the head of KEYS[1] with a notify
token, in its place in the queue and with its attempts as they were before the pop,
as if it had not been popped; one whose reservation expired or was settled is left
alone. Started jobs stay reserved (Laravel's rules: they come back when their
reservation expires, or are settled by their timeout). Harmless when run twice. ]]
local mode = ARGV[2]
if mode == 'dead' and redis.call('exists', KEYS[6]) == 1 then
    return -1
end

local fields = redis.call('hgetall', KEYS[4])
local started = -1
local payloads, reserveds, numbers = {}, {}, {}
for i = 1, #fields, 2 do
    local field, v = fields[i], fields[i + 1]
    if field == 'started' then
        started = tonumber(v)
    else
        local kind, n = string.match(field, '^([pr])(%d+)$')
        n = tonumber(n)
        if kind == 'p' then
            payloads[n] = v
            numbers[#numbers + 1] = n
        elseif kind == 'r' then
            reserveds[n] = v
        end
    end
end
table.sort(numbers)

local given = 0
for i = #numbers, 1, -1 do
    local n = numbers[i]
    if n > started then
        if reserveds[n] and redis.call('zrem', KEYS[2], reserveds[n]) == 1 then
            redis.call('lpush', KEYS[1], payloads[n])
            redis.call('rpush', KEYS[3], 1)
            given = given + 1
        end
        redis.call('hdel', KEYS[4], 'p' .. n, 'r' .. n)
    end
end

local reply = {given}
if mode == 'dead' or mode == 'killed' then
    local by = tonumber(ARGV[3])
    for _, n in ipairs(numbers) do
        local score = n <= started and reserveds[n] and payloads[n]
            and redis.call('zscore', KEYS[2], reserveds[n])
        if score then
            if mode == 'dead' and by and tonumber(score) > by then
                redis.call('zadd', KEYS[2], by, reserveds[n])
            end
            reply[#reply + 1] = n
            reply[#reply + 1] = payloads[n]
            reply[#reply + 1] = reserveds[n]
        end
    end
end
if mode ~= 'own' then
    redis.call('del', KEYS[4], KEYS[6])
    redis.call('srem', KEYS[5], ARGV[1])
end
return reply
