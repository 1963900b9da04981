--[[ retry: push a failed job back onto its queue, as `queue:retry` does.
KEYS[1]  the failed-job index   (luaworker:failed_jobs)
KEYS[2]  the failed-job record  (luaworker:failed_jobs:<id>)
KEYS[3]  queues:Q   (Q = the record's queue)
KEYS[4]  queues:Q:notify
ARGV[1]  the record id   ARGV[2]  now (integer Unix seconds)
ARGV[3]  (optional) the payload of a record kept elsewhere (the app's failed_jobs
         table): pushed as below, and KEYS[1] and KEYS[2] are left alone
Returns  1 when the job was pushed and its record deleted, 0 when there is no such
         record; an error reply when the stored payload is not a JSON object (it stays
         in the store: pushing it would make every worker's pop script lose it).
The payload gets attempts = 0, as Laravel's retry does (added at its end when
missing, so a payload kept because it had none becomes poppable); a retryUntil
already in the past is set to null (Laravel recomputes it by calling the job's
retryUntil() method, which a non-PHP tool cannot do), so the job gets its maxTries
instead of failing at once. Those values alone change: every other byte of the
payload stays as it was (Redis' cjson would turn 12345678901234567 into
1.2345678901235e+16, [] into {}, and reorder the keys), as PHP's json_decode and
json_encode keep a payload Laravel wrote. ]]
local payload = ARGV[3] or redis.call('hget', KEYS[2], 'payload')
if not payload then
    return 0
end

local ok, decoded = pcall(cjson.decode, payload)
if not ok or type(decoded) ~= 'table' or string.match(payload, '^%s*{') == nil then
    return redis.error_reply('failed job ' .. ARGV[1]
        .. ' has a payload that is not a JSON object; fix it or forget it')
end

-- payload is valid JSON (cjson read it): what follows only finds where things are.
local function after_space(i)
    return string.find(payload, '[^ \t\r\n]', i)
end

-- The index of the quote that ends the string starting at i.
local function string_end(i)
    local j = i + 1
    while true do
        local k = string.find(payload, '["\\]', j)
        if string.sub(payload, k, k) == '"' then
            return k
        end
        j = k + 2
    end
end

-- The index of the last character of the value starting at i.
local function value_end(i)
    local c = string.sub(payload, i, i)
    if c == '"' then
        return string_end(i)
    elseif c == '{' or c == '[' then
        local depth, j = 0, i
        while true do
            local k = string.find(payload, '[%[%]{}"]', j)
            local d = string.sub(payload, k, k)
            if d == '"' then
                j = string_end(k) + 1
            else
                depth = depth + ((d == '{' or d == '[') and 1 or -1)
                if depth == 0 then
                    return k
                end
                j = k + 1
            end
        end
    end
    return (string.find(payload, '[ \t\r\n,}%]]', i) or #payload + 1) - 1
end

-- The top-level keys' values: key -> {first, last} (the last of duplicates, as
-- json_decode keeps), and the index of the object's closing brace.
local function top_level()
    local spans = {}
    local i = after_space(after_space(1) + 1)
    while string.sub(payload, i, i) ~= '}' do
        local key_end = string_end(i)
        local key = cjson.decode(string.sub(payload, i, key_end))
        local first = after_space(after_space(key_end + 1) + 1)
        local last = value_end(first)
        spans[key] = { first, last }
        i = after_space(last + 1)
        if string.sub(payload, i, i) == ',' then
            i = after_space(i + 1)
        end
    end
    return spans, i
end

local spans, closing = top_level()
-- the changes, {first, last, text}, made from the end of the payload backwards
local changes = {}
local retry_until = decoded['retryUntil']
if type(retry_until) == 'number' and retry_until < tonumber(ARGV[2]) then
    changes[#changes + 1] = { spans['retryUntil'][1], spans['retryUntil'][2], 'null' }
end
if spans['attempts'] then
    changes[#changes + 1] = { spans['attempts'][1], spans['attempts'][2], '0' }
else
    local empty = next(spans) == nil
    changes[#changes + 1] = { closing, closing - 1, (empty and '' or ',') .. '"attempts":0' }
end
table.sort(changes, function(a, b) return a[1] > b[1] end)
for _, c in ipairs(changes) do
    payload = string.sub(payload, 1, c[1] - 1) .. c[3] .. string.sub(payload, c[2] + 1)
end

redis.call('rpush', KEYS[3], payload)
redis.call('rpush', KEYS[4], 1)
if not ARGV[3] then
    redis.call('del', KEYS[2])
    redis.call('zrem', KEYS[1], ARGV[1])
end
return 1
