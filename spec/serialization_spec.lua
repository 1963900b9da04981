-- The job objects luaworker writes into the payloads it pushes (luaworker.dispatch,
-- the next job of a chain: runtime/queue/serialized_job.lua) byte for byte as the
-- Laravel version writes them, and the defaults a handler declares for its class
-- (`properties`, `defaults`, `serializes_models`), which reach `command` when PHP
-- left them out.
--
-- How each version was checked: 12.67 against the real Laravel 12 beside luaworker
-- (spec/laravel12.lua: the same chain run by Laravel 12's own queue:work, the same
-- jobs dispatched by PHP, payloads compared); 8.83 against the Laravel 8 app
-- (spec/worker_spec.lua, spec/commands_spec.lua, spec/interop_spec.lua keep its
-- bytes); the others from laravel/framework's sources at each tag (git mirror):
-- SerializesModels::__serialize from v9.4.0 (leaves out what is === its default,
-- in ReflectionClass::getProperties order) and Bus/Queueable.php's properties:
-- v9.0-v11.1 connection, queue, chainConnection, chainQueue, chainCatchCallbacks,
-- delay, afterCommit, middleware, chained; v11.2.0 delay, afterCommit, middleware,
-- chained before the chain's three; v12.27.0 group after queue, renamed
-- messageGroup in v12.28.1; v12.32.0 deduplicator; v13.6.0 debounceOwner = '';
-- v13.24.0 uniqueLockOwner = ''. dispatchNextJobInChain is the same in every one.
local H = require "spec.helpers"
local L12 = require "spec.laravel12"
local cjson = require "cjson"

local function s(v) return "s:" .. #v .. ':"' .. v .. '";' end  -- binary-safe (NUL bytes)

-- PHP serialize() text of an object of class with members {name, serialized}...
local function object(class, members)
    local parts = {}
    for i, m in ipairs(members) do parts[i] = s(m[1]) .. m[2] end
    return "O:" .. #class .. ':"' .. class .. '":' .. #members .. ":{" .. table.concat(parts) .. "}"
end

-- The handlers' declarations of the PHP classes below.
local CARD = [[
local lw = require "luaworker"
return {
    properties = { "tag", "card", "ms", "protected note", "private secret" },
    defaults = { tag = lw.null, card = "visa", ms = 0, note = "n", secret = 7 },
    handle = function(job, command)
        lw.redis("RPUSH", "spec:seen", lw.json.encode({ command.tag, command.card, command.ms,
            command.note, command.secret }))
        lw.redis("RPUSH", "spec:serialized", lw.php.serialize(command))
    end,
}
]]
local RECORD = [[return { properties = { "tag", "args" }, handle = function() end }]]
local PLAIN = [[
return { serializes_models = false, properties = { "tag", "n" },
    defaults = { tag = require("luaworker").null, n = 1 }, handle = function() end }
]]
local WITH_USER = [[return { properties = { "note", "user", "tag" }, defaults = { note = "n" },
    handle = function() end }]]

-- Dispatches from Lua what DISPATCH_PHP dispatches from PHP.
local DISPATCHER = [[
local lw = require "luaworker"
return { handle = function()
    lw.dispatch("App\\Jobs\\RecordJob", { tag = "t", args = {} })
    lw.dispatch("App\\Jobs\\RecordJob", { tag = "u", args = { 1, 2 } }, { queue = "out" })
    lw.dispatch("App\\Jobs\\Card", { tag = "t" })
    lw.dispatch("App\\Jobs\\Card", { tag = "u", card = "amex", ms = 5, note = "x" }, { queue = "out" })
    lw.dispatch("App\\Jobs\\Plain", { tag = "t" })
    lw.dispatch("App\\Jobs\\Plain", { tag = "u", n = 2 }, { queue = "out", delay = 3 })
end }
]]
local DISPATCH_PHP = [[
dispatch(new \App\Jobs\RecordJob('t'));
dispatch((new \App\Jobs\RecordJob('u', [1, 2]))->onQueue('out'));
dispatch(new \App\Jobs\Card('t'));
dispatch((new \App\Jobs\Card('u', 'amex', 5, 'x'))->onQueue('out'));
dispatch(new \App\Jobs\Plain('t'));
$plain = new \App\Jobs\Plain('u');
$plain->n = 2;
dispatch($plain->onQueue('out')->delay(3));
]]

local handlers
local function handler_dir()
    handlers = handlers or H.handlers({
        ["App/Jobs/Card.lua"] = CARD, ["App/Jobs/RecordJob.lua"] = RECORD,
        ["App/Jobs/Plain.lua"] = PLAIN, ["App/Jobs/WithUser.lua"] = WITH_USER,
        ["App/Jobs/Dispatcher.lua"] = DISPATCHER,
    })
    return handlers
end

-- The payloads on queue q (its list, then its delayed set), as pushed.
local function queued(q)
    local list, delayed = H.keys(q)
    local out = H.r("LRANGE", list, 0, -1)
    for _, m in ipairs(H.r("ZRANGE", delayed, 0, -1)) do out[#out + 1] = m end
    return out
end

local function command_of(text) return cjson.decode(text).data.command end

-- The payload with what differs from push to push (uuid, id, createdAt) masked.
local function masked(text)
    return (text:gsub('"uuid":"[^"]*"', '"uuid":"?"'):gsub('"id":"[^"]*"', '"id":"?"')
        :gsub('"createdAt":%d+', '"createdAt":0'))
end

-- Runs the payload text on queue q with luaworker --laravel=version; returns what
-- it pushed onto q.
local function lua_runs(text, q, version)
    H.flush()
    H.push(text, q)
    local r = H.run({ "work", "--once", "--queue=" .. q, "--laravel=" .. version,
        "--handlers=" .. handler_dir() })
    assert.are.equal(0, r.status, r.stderr)
    -- the job ran to its end: 8.83's "Processed:" line, or 9.41+'s "DONE"
    assert.is_truthy(r.stdout:find("Processed:", 1, true) or r.stdout:find(" DONE\n", 1, true), r.stdout)
    H.r("DEL", (H.keys(q)) .. ":notify")
    return queued(q)
end

describe("job objects luaworker pushes", function()
    before_each(function() H.flush() end)

    local app, missing = L12.app()
    if not app then pending(missing) end
    describe("against Laravel 12.67's own", not app and function() end or function()
        local env = {}
        setup(function()
            env.DB_DATABASE = H.tmpdir() .. "/app.sqlite"
            H.sqlite(env.DB_DATABASE, "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT); "
                .. "INSERT INTO users VALUES (5, 'u');")
            local php = [[
    public function __construct(public string $tag, public array $args = []) {}
    public function handle() {}
]]
            L12.job("RecordJob", php)
            L12.job("Card", [[
    public $tag;
    public $card = 'visa';
    public $ms = 0;
    protected $note = 'n';
    private $secret = 7;
    public function __construct($tag, $card = 'visa', $ms = 0, $note = 'n')
    {
        $this->tag = $tag;
        $this->card = $card;
        $this->ms = $ms;
        $this->note = $note;
    }
    public function handle() {}
]])
            L12.job("Plain", [[
    public $tag;
    public $n = 1;
    public function __construct($tag) { $this->tag = $tag; }
    public function handle() {}
]], "Dispatchable, InteractsWithQueue, Queueable")
            L12.job("WithUser", [[
    public $note = 'n';
    public function __construct(public \App\Models\User $user, public string $tag = '') {}
    public function handle() {}
]])
            H.write_file(app .. "/app/Models/User.php", "<?php\nnamespace App\\Models;\n"
                .. "class User extends \\Illuminate\\Database\\Eloquent\\Model { public $timestamps = false; }\n")
        end)

        -- Dispatches with PHP code in the app; returns what it pushed onto q.
        local function dispatched(code, q)
            H.flush()
            L12.php(code, env)
            return queued(q)
        end

        -- Runs the payload text on q with Laravel 12's queue:work; returns what it pushed.
        local function php_runs(text, q)
            H.flush()
            H.push(text, q)
            local r = L12.artisan({ "queue:work", "redis", "--queue=" .. q, "--once" }, env)
            assert.are.equal(0, r.status, r.stdout .. r.stderr)
            assert.matches("DONE", r.stdout, 1, true)
            H.r("DEL", (H.keys(q)) .. ":notify")
            return queued(q)
        end

        -- Runs the chain from its head link by link, Laravel 12 and luaworker each
        -- running the same payload: the next links they push are the same payload
        -- but for uuid, id and createdAt. Returns the commands of the links.
        local function same_links(head, q)
            local commands, text = {}, head
            while true do
                local php = php_runs(text, q)
                local lua = lua_runs(text, q, "12")
                assert.are.equal(#php, #lua)
                if #php == 0 then return commands end
                assert.are.equal(1, #php)
                assert.are.equal(command_of(php[1]), command_of(lua[1]))
                assert.are.equal(masked(php[1]), masked(lua[1]))
                commands[#commands + 1] = command_of(php[1])
                text = php[1]
            end
        end

        it("writes a chain's next links as Laravel 12 does: defaults left out (SerializesModels)", function()
            local head = dispatched([[\Illuminate\Support\Facades\Bus::chain([new \App\Jobs\RecordJob('a'),
                (new \App\Jobs\RecordJob('b'))->delay(1), new \App\Jobs\RecordJob('c')])->dispatch();]],
                "default")
            local links = same_links(head[1], "default")
            assert.are.equal(2, #links)
            local c = object("App\\Jobs\\RecordJob", { { "tag", s("c") }, { "args", "a:0:{}" } })
            assert.are.equal(object("App\\Jobs\\RecordJob", { { "tag", s("b") }, { "args", "a:0:{}" },
                { "delay", "i:1;" }, { "chained", "a:1:{i:0;" .. s(c) .. "}" },
                { "chainCatchCallbacks", "a:0:{}" } }), links[1])
            assert.are.equal(object("App\\Jobs\\RecordJob", { { "tag", s("c") }, { "args", "a:0:{}" },
                { "chainCatchCallbacks", "a:0:{}" } }), links[2])
        end)

        it("keeps properties off their defaults, in place and with their visibility, on a chain's queue", function()
            local head = dispatched([[\Illuminate\Support\Facades\Bus::chain([new \App\Jobs\Card('a'),
                (new \App\Jobs\Card('b', 'amex', 5))->delay(1), new \App\Jobs\Card('c', 'visa', 0, 'x')])
                ->onQueue('work')->dispatch();]], "work")
            local links = same_links(head[1], "work")
            assert.are.equal(2, #links)
            local c = object("App\\Jobs\\Card", { { "tag", s("c") }, { "\0*\0note", s("x") } })
            assert.are.equal(object("App\\Jobs\\Card", { { "tag", s("b") }, { "card", s("amex") },
                { "ms", "i:5;" }, { "queue", s("work") }, { "delay", "i:1;" },
                { "chained", "a:1:{i:0;" .. s(c) .. "}" }, { "chainQueue", s("work") },
                { "chainCatchCallbacks", "a:0:{}" } }), links[1])
            assert.are.equal(object("App\\Jobs\\Card", { { "tag", s("c") }, { "\0*\0note", s("x") },
                { "queue", s("work") }, { "chainQueue", s("work") }, { "chainCatchCallbacks", "a:0:{}" } }),
                links[2])
        end)

        it("writes every property of a class without SerializesModels, as PHP's serialize() does", function()
            local head = dispatched([[\Illuminate\Support\Facades\Bus::chain([new \App\Jobs\Plain('a'),
                (new \App\Jobs\Plain('b'))->delay(1), new \App\Jobs\Plain('c')])->dispatch();]], "default")
            local links = same_links(head[1], "default")
            assert.are.equal(2, #links)
            assert.are.equal(object("App\\Jobs\\Plain", { { "tag", s("c") }, { "n", "i:1;" }, { "job", "N;" },
                { "connection", "N;" }, { "queue", "N;" }, { "messageGroup", "N;" }, { "deduplicator", "N;" },
                { "delay", "N;" }, { "afterCommit", "N;" }, { "middleware", "a:0:{}" }, { "chained", "a:0:{}" },
                { "chainConnection", "N;" }, { "chainQueue", "N;" }, { "chainCatchCallbacks", "a:0:{}" } }),
                links[2])
        end)

        it("carries a model's identifier through the chain as Laravel 12 does", function()
            local head = dispatched([[$u = \App\Models\User::find(5);
                \Illuminate\Support\Facades\Bus::chain([new \App\Jobs\WithUser($u, 'a'),
                new \App\Jobs\WithUser($u, 'b'), new \App\Jobs\WithUser($u, 'c')])->onQueue('work')->dispatch();]],
                "work")
            local links = same_links(head[1], "work")
            assert.are.equal(2, #links)
            assert.matches('^O:17:"App\\Jobs\\WithUser":6:{s:4:"user";O:45:"Illuminate\\Contracts\\Database\\'
                .. 'ModelIdentifier":5:{s:5:"class";s:15:"App\\Models\\User";s:2:"id";i:5;', links[1])
        end)

        it("dispatches from Lua the payloads PHP's dispatch() pushes for the same class and values", function()
            local php = { default = dispatched(DISPATCH_PHP, "default") }
            php.out = queued("out")
            local lua = lua_runs(cjson.encode(H.class_payload("App\\Jobs\\Dispatcher")), "in", "12")
            assert.are.same({}, lua)
            for _, q in ipairs({ "default", "out" }) do
                local pushed = queued(q)
                assert.are.equal(#php[q], #pushed)
                for i = 1, #pushed do
                    assert.are.equal(command_of(php[q][i]), command_of(pushed[i]))
                    assert.are.equal(masked(php[q][i]), masked(pushed[i]))
                end
            end
            assert.are.equal(3, #php.default)
            assert.are.equal(object("App\\Jobs\\RecordJob", { { "tag", s("t") }, { "args", "a:0:{}" } }),
                command_of(php.default[1]))
            assert.are.equal(object("App\\Jobs\\Card", { { "tag", s("t") } }), command_of(php.default[2]))
        end)

        it("hands a Laravel 12 job's properties at their defaults to the handler", function()
            local head = dispatched([[dispatch(new \App\Jobs\Card('a'));]], "default")
            assert.are.equal(object("App\\Jobs\\Card", { { "tag", s("a") } }), command_of(head[1]))
            lua_runs(head[1], "default", "12")
            assert.are.same({ { "a", "visa", 0, "n", 7 } }, H.json_list("spec:seen"))
        end)
    end)

    describe("by version, from Laravel's sources", function()
        local RECORD_CLASS = "App\\Jobs\\RecordJob"
        local function record(tag, more)
            local m = { { "tag", s(tag) }, { "args", "a:0:{}" } }
            for _, x in ipairs(more or {}) do m[#m + 1] = x end
            return object(RECORD_CLASS, m)
        end

        -- The next link luaworker --laravel=version pushes for a Laravel 9.4+ head on
        -- queue work whose chain holds b (delay 1) and c.
        local function next_link(version)
            local c = record("c")
            local b = record("b", { { "delay", "i:1;" } })
            local head = H.class_payload(RECORD_CLASS, {}, { { "tag", s("a") }, { "args", "a:0:{}" },
                { "queue", s("work") }, { "chained", "a:2:{i:0;" .. s(b) .. "i:1;" .. s(c) .. "}" },
                { "chainQueue", s("work") }, { "chainCatchCallbacks", "a:0:{}" } })
            local pushed = lua_runs(cjson.encode(head), "work", version)
            assert.are.equal(1, #pushed)
            return command_of(pushed[1])
        end

        it("puts a chain's next link's Queueable properties in the version's order", function()
            local c = record("c")
            local chained = { "chained", "a:1:{i:0;" .. s(c) .. "}" }
            local before_11_2 = record("b", { { "queue", s("work") }, { "chainQueue", s("work") },
                { "chainCatchCallbacks", "a:0:{}" }, { "delay", "i:1;" }, chained })
            local from_11_2 = record("b", { { "queue", s("work") }, { "delay", "i:1;" }, chained,
                { "chainQueue", s("work") }, { "chainCatchCallbacks", "a:0:{}" } })
            for _, v in ipairs({ "9.4", "10.48", "11.1" }) do assert.are.equal(before_11_2, next_link(v), v) end
            for _, v in ipairs({ "11.2", "12.27", "12.67", "13.24", "13" }) do
                assert.are.equal(from_11_2, next_link(v), v)
            end
        end)

        it("writes a link Laravel 9.3 or older wrote whole, and the chain's properties it lacked", function()
            -- 9.0-9.3's __sleep wrote every property, as 8.83's does: a link it
            -- wrote has them all; the properties dispatchNextJobInChain sets that
            -- this one lacked come in Queueable's order
            assert.are.equal(record("b", { { "connection", "N;" }, { "queue", s("work") }, { "chainConnection", "N;" },
                { "chainQueue", s("work") }, { "chainCatchCallbacks", "a:0:{}" }, { "delay", "i:1;" },
                { "chained", "a:1:{i:0;" .. s(record("c")) .. "}" } }), next_link("9.3"))
        end)

        -- What luaworker.dispatch(class, properties) pushes with --laravel=version
        -- (by a job on queue in, onto the default queue).
        local function dispatched_from_lua(version, class, properties)
            local dir = H.handlers({ ["App/Jobs/Card.lua"] = CARD, ["App/Jobs/Plain.lua"] = PLAIN,
                ["App/Jobs/D.lua"] = string.format([[
local lw = require "luaworker"
return { handle = function() lw.dispatch(%q, %s) end }]], class, properties) })
            H.flush()
            H.push(H.class_payload("App\\Jobs\\D"), "in")
            local r = H.run({ "work", "--once", "--queue=in", "--laravel=" .. version, "--handlers=" .. dir })
            assert.are.equal(0, r.status, r.stderr)
            local pushed = queued("default")
            assert.are.equal(1, #pushed, r.stdout .. r.stderr)
            return command_of(pushed[1])
        end

        it("writes every property of a class without SerializesModels in the version's order", function()
            local own = { { "tag", s("t") }, { "n", "i:1;" } }
            local function plain(traits)
                local m = { own[1], own[2] }
                for name in traits:gmatch("%S+") do
                    local default = ({ middleware = "a:0:{}", chained = "a:0:{}", debounceOwner = 's:0:"";',
                        uniqueLockOwner = 's:0:"";' })[name] or "N;"
                    m[#m + 1] = { name, default }
                end
                return object("App\\Jobs\\Plain", m)
            end
            local old = "job connection queue chainConnection chainQueue chainCatchCallbacks delay afterCommit "
                .. "middleware chained"
            local tail = "delay afterCommit middleware chained chainConnection chainQueue chainCatchCallbacks"
            local expected = {
                ["8.83"] = plain(old), ["9.4"] = plain(old), ["11.1"] = plain(old),
                ["11.2"] = plain("job connection queue " .. tail),
                ["12.27"] = plain("job connection queue group " .. tail),
                ["12.28"] = plain("job connection queue messageGroup " .. tail),
                ["12.32"] = plain("job connection queue messageGroup deduplicator " .. tail),
                ["13.6"] = plain("job connection queue messageGroup deduplicator debounceOwner " .. tail),
                ["13.24"] = plain("job connection queue messageGroup deduplicator debounceOwner "
                    .. "uniqueLockOwner " .. tail),
            }
            for version, bytes in pairs(expected) do
                assert.are.equal(bytes, dispatched_from_lua(version, "App\\Jobs\\Plain", '{ tag = "t" }'), version)
            end
        end)

        it("leaves out what is at its declared default from 9.4, and writes it all before", function()
            local props = '{ tag = "t", ms = 5, secret = 8 }'
            assert.are.equal(object("App\\Jobs\\Card", { { "tag", s("t") }, { "ms", "i:5;" },
                { "\0App\\Jobs\\Card\0secret", "i:8;" } }), dispatched_from_lua("9.4", "App\\Jobs\\Card", props))
            assert.are.equal(object("App\\Jobs\\Card", { { "tag", s("t") }, { "card", s("visa") },
                { "ms", "i:5;" }, { "\0*\0note", s("n") }, { "\0App\\Jobs\\Card\0secret", "i:8;" },
                { "job", "N;" }, { "connection", "N;" }, { "queue", "N;" }, { "chainConnection", "N;" },
                { "chainQueue", "N;" }, { "chainCatchCallbacks", "N;" }, { "delay", "N;" },
                { "afterCommit", "N;" }, { "middleware", "a:0:{}" }, { "chained", "a:0:{}" } }),
                dispatched_from_lua("8.83", "App\\Jobs\\Card", props))
        end)
    end)

    it("pushes with `push` what a SerializesModels class writes from 9.4, the version's order", function()
        local r = H.run({ "push", "App\\Jobs\\Foo", '{"b":[],"a":1,"queue":"q"}', "--delay=5", "--laravel=12" })
        assert.are.equal(0, r.status, r.stderr)
        local _, delayed = H.keys()
        assert.are.equal(object("App\\Jobs\\Foo", { { "b", "a:0:{}" }, { "a", "i:1;" }, { "queue", s("q") },
            { "delay", "i:5;" } }), command_of(H.r("ZRANGE", delayed, 0, -1)[1]))
    end)

    describe("a handler's declaration of its class", function()
        it("fills in the defaults PHP left out before the handler runs, in their declared places", function()
            H.push(H.class_payload("App\\Jobs\\Card", {}, { { "tag", s("a") }, { "ms", "i:3;" },
                { "queue", s("work") } }))
            local r = H.run({ "work", "--once", "--laravel=12", "--handlers=" .. handler_dir() })
            assert.are.equal(0, r.status, r.stderr)
            assert.are.same({ { "a", "visa", 3, "n", 7 } }, H.json_list("spec:seen"))
            assert.are.equal(object("App\\Jobs\\Card", { { "tag", s("a") }, { "card", s("visa") },
                { "ms", "i:3;" }, { "\0*\0note", s("n") }, { "\0App\\Jobs\\Card\0secret", "i:7;" },
                { "queue", s("work") } }), H.r("LRANGE", "spec:serialized", 0, -1)[1])
        end)

        it("is checked when the worker starts, which refuses to with what is wrong and takes no job", function()
            local cases = {
                { 'properties = { "tag", "secret token" }', "properties[2]: expected a property name, "
                    .. "optionally after public, protected or private (\"protected token\"), got 'secret token'" },
                { 'properties = { "tag", "queue" }', "properties[2]: queue is a property of Laravel's job "
                    .. "traits (Queueable, InteractsWithQueue, Batchable), not the class's own" },
                { 'properties = { "tag", "tag" }', "properties[2]: tag is listed twice" },
                { 'properties = { "tag" }, defaults = { card = "visa" }', "defaults.card: card is not in properties" },
                { 'defaults = { card = print }', "defaults.card: not a PHP value: cannot serialize function value" },
                { 'defaults = { delay = 5 }', "defaults.delay: delay is a property of Laravel's job traits "
                    .. "(Queueable, InteractsWithQueue, Batchable): its default is Laravel's" },
                { 'serializes_models = "no"', "serializes_models: expected true or false, got no" },
            }
            for _, case in ipairs(cases) do
                H.flush()
                local dir = H.handlers({ ["App/Jobs/Bad.lua"] = "return { " .. case[1]
                    .. ", handle = function() end }" })
                local p = H.class_payload("App\\Jobs\\Bad")
                H.push(p)
                local r = H.run({ "work", "--once", "--handlers=" .. dir })
                assert.are.equal(2, r.status, r.stderr)
                assert.matches("cannot start: handlers that cannot handle jobs: handler " .. dir
                    .. "/App/Jobs/Bad.lua: " .. case[2], r.stderr, 1, true)
                assert.are.equal(1, H.r("LLEN", (H.keys())))
            end
        end)
    end)
end)
