--[[ flush: delete failed-job records with their index entries, as `queue:flush` does.
KEYS[1]      the failed-job index   (luaworker:failed_jobs)
KEYS[2..n]   the records to delete  (luaworker:failed_jobs:<id>)
ARGV[1..n-1] their ids, in the order of KEYS[2..n]
Returns  how many of them were in the index.
A record and its index entry go in the same step, so a job failed meanwhile (not
listed) is kept whole, never left as a record the index does not name. ]]
local deleted = 0
for i, id in ipairs(ARGV) do
    deleted = deleted + redis.call('zrem', KEYS[1], id)
    redis.call('del', KEYS[i + 1])
end
return deleted
