--[[ next_due: when the next job of some queues becomes due.
KEYS[i]  queues:Q:delayed or queues:Q:reserved, any number of them
Returns  for each key, its lowest score (the Unix second its first job is due,
         or its first reservation expires) as a string, or false when it is empty.
Reads only. ]]
local due = {}
for i, key in ipairs(KEYS) do
    local first = redis.call('zrange', key, 0, 0, 'withscores')
    due[i] = first[2] or false
end
return due
