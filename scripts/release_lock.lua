--[[ release_lock: Laravel 13.24+'s release of a unique job's lock held by an owner
(restoreLock()->release()): the key deleted only while it still holds that owner.
KEYS[1]  the lock key (laravel_unique_job:..., with the cache prefix)
ARGV[1]  the owner token the job carries (its uniqueLockOwner)
Returns  1 when the key was deleted, 0 when another owner holds it or it is gone. ]]
if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0
