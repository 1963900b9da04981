---@meta luaworker
-- luaworker's API for handlers, for LuaLS / EmmyLua (an editor's completion and
-- checks). Definitions only: the runtime is compiled into the luaworker binary.
-- `luaworker make` copies this file into a handler directory's .luaworker/ with a
-- .luarc.json; `make install` puts it in share/luaworker/types/.
-- spec/unit/types_spec.lua holds it against the runtime.

---What a handler file returns (docs/handlers.md).
---@class luaworker.Handler
---@field handle? fun(job: luaworker.Job, command: table) runs the job; returning deletes it
---@field failed? fun(job: luaworker.Job, command: table, err: any) the job failed for good
---@field unique? boolean|"until_processing" the class is ShouldBeUnique (or ShouldBeUniqueUntilProcessing)
---@field unique_id? fun(command: table): any the class's uniqueId()
---@field delete_when_missing_models? boolean the class's $deleteWhenMissingModels
---@field skip_if_batch_cancelled? boolean Laravel 10's SkipIfBatchCancelled middleware
---@field properties? string[] the class's own properties in order ("name", "protected name", "private name")
---@field defaults? table<string, any> the declared defaults of its properties
---@field serializes_models? boolean false for a class without SerializesModels
---@field interrupted? fun(job: luaworker.Job, command: table, signal: string) Laravel 13.31's Interruptible
---@field middleware? luaworker.Middleware[]|fun(job: luaworker.Job, command: table): luaworker.Middleware[] the job's middleware()
---@field tags? fun(command: table): (string|number)[] the class's tags(), for Horizon's records of the jobs luaworker pushes
---@field silenced? boolean true: the class implements Horizon's Silenced, for the jobs luaworker pushes

---An error value printed as "Class: message", as a PHP exception.
---@class luaworker.Exception
---@field class string
---@field message string

---What a hook gets (luaworker.before(fn) and the others).
---@class luaworker.Event
---@field job? luaworker.Job
---@field connection_name? string
---@field exception? any
---@field queue? string
---@field backoff? integer
---@field timeout? integer
---@field status? integer
---@field reason? string
---@field signal? string
---@field exception_occurred? boolean

---The job a handler runs, as Laravel's RedisJob / DatabaseJob.
---@class luaworker.Job
local Job = {}

---The payload, decoded.
---@return table
function Job:payload() end

---The payload as popped.
---@return string
function Job:raw_body() end

---The reservation: the reserved copy on Redis, the row's record on a database.
---@return any
function Job:reserved_body() end

---@return string
function Job:queue() end

---@return string
function Job:connection_name() end

---The payload's id on Redis, the row's on a database.
---@return string|integer
function Job:id() end

---@return string?
function Job:uuid() end

---@return string?
function Job:display_name() end

---displayName, else the payload's job.
---@return string?
function Job:name() end

---@return integer?
function Job:max_tries() end

---@return integer?
function Job:max_exceptions() end

---@return integer?
function Job:timeout() end

---@return boolean
function Job:should_fail_on_timeout() end

---The payload's backoff ("1,5,10"), else its 12.11+ dispatch delay.
---@return string|integer?
function Job:backoff() end

---Unix seconds after which the job may not be attempted again.
---@return integer?
function Job:retry_until() end

---1 on the first run.
---@return integer
function Job:attempts() end

---The row of the job's batch in job_batches, or nil.
---@return table?
function Job:batch() end

---Laravel 11+'s Context as the payload brought it.
---@return table
function Job:log_context() end

---Context::get(key); without a key, every value by key.
---@param key? string
---@return any
function Job:context(key) end

---Context::getHidden(key); without a key, all.
---@param key? string
---@return any
function Job:hidden_context(key) end

---Context::add for the jobs this one dispatches.
---@param key string
---@param value any
function Job:add_context(key, value) end

---Context::addHidden for the jobs this one dispatches.
---@param key string
---@param value any
function Job:add_hidden_context(key, value) end

---@return boolean
function Job:is_deleted() end

---@return boolean
function Job:is_released() end

---@return boolean
function Job:has_failed() end

---@return boolean
function Job:is_deleted_or_released() end

---Removes the job from its queue.
function Job:delete() end

---Puts the job back, available after delay seconds; the next run is another attempt,
---unless opts.keep_attempts gives this one back (a job a limit held back: it did not run).
---@param delay? number seconds, default 0
---@param opts? { keep_attempts?: boolean }
function Job:release(delay, opts) end

---Fails the job for good: the failed-job record, failed(), the failing hooks.
---@param err? any default: ManuallyFailedException
function Job:fail(err) end

---The models the command names are gone: deleted or failed as Laravel's handleModelNotFound.
---@param class string the model's class
---@param ids any one id or a list of ids
function Job:model_not_found(class, ids) end

---Marks the job failed without side effects (the worker's fail does the rest).
function Job:mark_as_failed() end

---Marks the job deleted without side effects.
function Job:mark_as_deleted() end

---A connection of the app's database, as Laravel's DB facade (docs/handlers.md).
---@class luaworker.Db
---@field name string
local Db = {}

---Rows as tables keyed by column name.
---@param sql string
---@param bindings? any[]
---@return table[]
function Db:select(sql, bindings) end

---@param sql string
---@param bindings? any[]
---@return true
function Db:insert(sql, bindings) end

---The rows changed.
---@param sql string
---@param bindings? any[]
---@return integer
function Db:update(sql, bindings) end

---The rows deleted.
---@param sql string
---@param bindings? any[]
---@return integer
function Db:delete(sql, bindings) end

---@param sql string
---@param bindings? any[]
---@return true
function Db:statement(sql, bindings) end

---Runs fn in a transaction: committed when it returns, rolled back when it raises.
---@generic T
---@param fn fun(db: luaworker.Db): T
---@return T
function Db:transaction(fn) end

---name quoted as Laravel's grammar wraps it on this connection.
---@param name string
---@return string
function Db:wrap(name) end

---@class luaworker.HttpResponse
---@field status integer
---@field headers table<string, string> lower-case names
---@field body string

---@class luaworker.HttpRequest
---@field method? string default GET
---@field url string
---@field headers? table<string, string|string[]>
---@field body? string
---@field timeout? number seconds, default 30
---@field verify? boolean default true
---@field follow? boolean follow up to 5 redirects
---@field redirects? integer the most redirects followed
---@field max_size? integer the most bytes of body taken

---HTTP requests that wait without holding up the worker.
---@class luaworker.http
---@field TIMEOUT number the default seconds a request may take
local http = {}

---@param opts luaworker.HttpRequest
---@return luaworker.HttpResponse
function http.request(opts) end

---@param url string
---@param opts? luaworker.HttpRequest
---@return luaworker.HttpResponse
function http.get(url, opts) end

---@param url string
---@param body string
---@param opts? luaworker.HttpRequest
---@return luaworker.HttpResponse
function http.post(url, body, opts) end

---url without user, password, query or fragment (for messages).
---@param url string
---@return string
function http.redact(url) end

---Requests go to responder instead of the network (luaworker.testing's fake_http); nil ends it.
---@param responder? fun(request: table): luaworker.HttpResponse
function http.fake(responder) end

---A job middleware: runs the rest of the job by calling next(job), or does not.
---@alias luaworker.Middleware fun(job: luaworker.Job, next: fun(job: luaworker.Job))|{ handle: fun(job: luaworker.Job, next: fun(job: luaworker.Job)) }

---@class luaworker.WithoutOverlappingOptions
---@field release_after? integer seconds the job is released for while another holds the lock (0)
---@field expire_after? integer seconds the lock lives (0: until released)
---@field dont_release? boolean delete the job instead of releasing it
---@field shared? boolean the key without the job's class (Laravel 10.36's shared())
---@field prefix? string in place of "laravel-queue-overlap:" (withPrefix)
---@field keep_attempts? boolean a job held back gets its attempt back (default: LUAWORKER_LIMITS_KEEP_ATTEMPTS)

---Laravel's job middleware, with Laravel's keys in the app's stores (docs/handlers.md).
---@class luaworker.middleware
local middleware = {}

---WithoutOverlapping: the cache lock laravel-queue-overlap:<class>:<key> while the job runs.
---@param key? string|integer
---@param opts? luaworker.WithoutOverlappingOptions
---@return luaworker.Middleware
function middleware.without_overlapping(key, opts) end

---A limit a named limiter gives (RateLimiter::for's Limit): max jobs per decay seconds, by a key.
---@class luaworker.Limit
---@field max integer
---@field decay? integer seconds (60, a perMinute)
---@field by? string|integer the limit's key (Limit::by)

---@class luaworker.RateLimitedOptions
---@field dont_release? boolean delete the job held back instead of releasing it
---@field keep_attempts? boolean a job held back gets its attempt back (default: LUAWORKER_LIMITS_KEEP_ATTEMPTS)

---RateLimited(name): the app's cache store's RateLimiter, keys md5(name .. by).
---@param name string
---@param limits? luaworker.Limit|luaworker.Limit[] nil: Unlimited
---@param opts? luaworker.RateLimitedOptions
---@return luaworker.Middleware
function middleware.rate_limited(name, limits, opts) end

---RateLimitedWithRedis(name): Laravel's DurationLimiter on the default Redis connection.
---@param name string
---@param limits? luaworker.Limit|luaworker.Limit[] nil: Unlimited
---@param opts? luaworker.RateLimitedOptions
---@return luaworker.Middleware
function middleware.rate_limited_with_redis(name, limits, opts) end

---@class luaworker.ThrottlesExceptionsOptions
---@field backoff? integer minutes a job that raised is released for (0), as Laravel's backoff()
---@field by? string the key (Laravel's by()); default md5 of the job's class
---@field by_job? boolean the key is the job's uuid (byJob())
---@field when? fun(err: any): boolean only errors it returns true for are throttled
---@field report? boolean|string|fun(err: any): boolean|(string|fun(err: any): boolean)[] log the errors it picks (Laravel's report())
---@field delete_when? string|fun(err: any): boolean|(string|fun(err: any): boolean)[] delete the job on such an error (an exception class, a test, or a list of them)
---@field fail_when? string|fun(err: any): boolean|(string|fun(err: any): boolean)[] fail the job on such an error
---@field prefix? string in place of "laravel_throttles_exceptions:" (withPrefix)
---@field keep_attempts? boolean a job held back gets its attempt back (default: LUAWORKER_LIMITS_KEEP_ATTEMPTS)

---ThrottlesExceptions: after max exceptions within decay seconds, jobs of the key are held back.
---@param max? integer 10
---@param decay? integer seconds, 600 (Laravel's 10 minutes)
---@param opts? luaworker.ThrottlesExceptionsOptions
---@return luaworker.Middleware
function middleware.throttles_exceptions(max, decay, opts) end

---ThrottlesExceptionsWithRedis: the same counted by Laravel's DurationLimiter.
---@param max? integer 10
---@param decay? integer seconds, 600
---@param opts? luaworker.ThrottlesExceptionsOptions
---@return luaworker.Middleware
function middleware.throttles_exceptions_with_redis(max, decay, opts) end

---cjson, whose encode writes any value a command holds exactly (int64, null).
---@class luaworker.json
---@field null lightuserdata
local json = {}

---@param value any
---@return string
function json.encode(value) end

---@param text string
---@return any
function json.decode(text) end

---PHP's serialize() values.
---@class luaworker.php
---@field null lightuserdata PHP's null
local php = {}

---@param text string PHP serialize() output
---@return any value, string? err
function php.unserialize(text) end

---PHP's md5(): the lowercase hex MD5 of s.
---@param s string
---@return string
function php.md5(s) end

---PHP's hash('xxh128', s): the lowercase hex XXH3 128-bit hash of s.
---@param s string
---@return string
function php.xxh128(s) end

---@param value any
---@return string
function php.serialize(value) end

---The class of an object value, or nil.
---@param value any
---@return string?
function php.class(value) end

---The members of an array or object in PHP's order.
---@param value table
---@return any[]
function php.members(value) end

---Whether value serializes as a PHP list.
---@param value any
---@return boolean
function php.is_list(value) end

---A PHP array of the given members in order.
---@param t table
---@param keys? any[]
---@return table
function php.array(t, keys) end

---A PHP object of class with properties in order.
---@param class string
---@param t table
---@param keys? string[]
---@return table
function php.object(class, t, keys) end

---An enum case value.
---@param class string
---@param case string
---@return table
function php.enum(class, case) end

---x as PHP's (string) cast writes a float (precision 14): "0.1", "1.0E+25".
---@param x number
---@return string
function php.float_string(x) end

---A new object of value's class holding the members keys names, in that order.
---@param value table
---@param keys (string|number)[]
---@param names? table<string|number, string> PHP names of members value does not name
---@return table
function php.select(value, keys, names) end

---@class luaworker
---@field prefix string the app's Redis key prefix
---@field default_queue string
---@field connection_name string the connection the worker works
---@field null lightuserdata PHP's null (cjson.null)
---@field json luaworker.json
---@field php luaworker.php
---@field http luaworker.http
---@field middleware luaworker.middleware
local luaworker = {}

---@alias luaworker.Hook fun(event: luaworker.Event): any

---@class luaworker.ThrottleOptions
---@field allow integer runs a window allows
---@field every? integer the window's seconds (60)
---@field block? integer seconds to wait for room (3, Laravel's)
---@field fallback? fun() called when the limit holds fn back

---Redis::throttle(name): fn under Laravel's DurationLimiter; fn's results, or false when held back.
---@param name string
---@param opts luaworker.ThrottleOptions
---@param fn fun(): any
---@return any
function luaworker.throttle(name, opts, fn) end

---@class luaworker.FunnelOptions
---@field limit integer runs at once
---@field release_after? integer seconds a slot is held at most (60)
---@field block? integer seconds to wait for a slot (3, Laravel's)
---@field fallback? fun() called when the limit holds fn back

---Redis::funnel(name): fn in one of Laravel's ConcurrencyLimiter slots; fn's results, or false when held back.
---@param name string
---@param opts luaworker.FunnelOptions
---@param fn fun(): any
---@return any
function luaworker.funnel(name, opts, fn) end

---JobProcessing: before a job runs.
---@param fn luaworker.Hook
function luaworker.before(fn) end
---JobProcessed.
---@param fn luaworker.Hook
function luaworker.after(fn) end
---JobFailed: a job failed for good.
---@param fn luaworker.Hook
function luaworker.failing(fn) end
---JobExceptionOccurred.
---@param fn luaworker.Hook
function luaworker.exception_occurred(fn) end
---JobReleasedAfterException (event.backoff).
---@param fn luaworker.Hook
function luaworker.released_after_exception(fn) end
---JobAttempted (event.exception_occurred).
---@param fn luaworker.Hook
function luaworker.attempted(fn) end
---JobPopping.
---@param fn luaworker.Hook
function luaworker.popping(fn) end
---JobPopped.
---@param fn luaworker.Hook
function luaworker.popped(fn) end
---Looping: return false to pause the loop for a --sleep.
---@param fn luaworker.Hook
function luaworker.looping(fn) end
---WorkerStarting.
---@param fn luaworker.Hook
function luaworker.starting(fn) end
---WorkerStopping (event.status, event.reason).
---@param fn luaworker.Hook
function luaworker.stopping(fn) end
---JobTimedOut (event.timeout).
---@param fn luaworker.Hook
function luaworker.timed_out(fn) end
---JobReleased: the job released itself.
---@param fn luaworker.Hook
function luaworker.released(fn) end
---WorkerIdle: a poll found no job.
---@param fn luaworker.Hook
function luaworker.idle(fn) end
---WorkerInterrupted: a stop signal arrived (event.signal).
---@param fn luaworker.Hook
function luaworker.interrupted(fn) end
---JobInterrupted (13.31).
---@param fn luaworker.Hook
function luaworker.job_interrupted(fn) end
---WorkerPausing: USR2 paused the worker.
---@param fn luaworker.Hook
function luaworker.pausing(fn) end
---WorkerResuming: CONT resumed it.
---@param fn luaworker.Hook
function luaworker.resuming(fn) end
---WorkerQueuePaused: a queue was found paused (event.queue).
---@param fn luaworker.Hook
function luaworker.queue_paused(fn) end
---WorkerQueueResumed.
---@param fn luaworker.Hook
function luaworker.queue_resumed(fn) end

---A command on the worker's queue connection (keys as given: prepend luaworker.prefix).
---@param cmd string
---@param ... string|number
---@return any
function luaworker.redis(cmd, ...) end

---@class luaworker.DispatchOptions
---@field queue? string
---@field delay? number seconds
---@field connection? string only the worker's own
---@field encrypt? boolean ShouldBeEncrypted, with APP_KEY
---@field batch? string a batch id, as Batch::add

---Pushes a job PHP's queue:work runs as if Laravel had dispatched it. Returns its id.
---@param class string
---@param properties? table
---@param options? luaworker.DispatchOptions
---@return string|integer
function luaworker.dispatch(class, properties, options) end

---The app's database connection name (default DB_CONNECTION).
---@param name? string
---@return luaworker.Db
function luaworker.db(name) end

---Waits without blocking the worker: the other jobs in flight run meanwhile.
---@param seconds number
function luaworker.sleep(seconds) end

---An error value printed as "Class: message".
---@param class string
---@param message string
---@return luaworker.Exception
function luaworker.exception(class, message) end

---@param value any
---@return boolean
function luaworker.is_exception(value) end

---A value as text, as Lua sees it; never raises.
---@param value any
---@return string
function luaworker.dump(value) end

return luaworker
