-- Specs for luaworker.dump (runtime/base/dump.lua) and luaworker.json's encode
-- (runtime/base/json.lua): what a handler's author prints of a command, and the JSON
-- of any value a command can hold. Runs inside the luaworker binary.
local luaworker = require "luaworker"
local cjson = require "cjson"

-- A command as Laravel serializes one: an int64 beyond 2^53, a model's identifier
-- with a list of ids, an enum, null, a float, a string with a quote and a newline.
local COMMAND = 'O:20:"App\\Jobs\\SendInvoice":6:{s:1:"b";i:12345678901234567;s:4:"user";'
    .. 'O:45:"Illuminate\\Contracts\\Database\\ModelIdentifier":2:{s:5:"class";s:15:"App\\Models\\User";'
    .. 's:2:"id";a:2:{i:0;i:1;i:1;i:2;}}s:1:"e";E:17:"App\\Status:Active";s:1:"n";N;s:1:"f";d:0.1;'
    .. 's:4:"text";s:6:"a"b\ncd";}'

describe("luaworker.dump", function()
    it("prints a command as Lua sees it: classes, PHP's member order, int64 exact, null, enums", function()
        assert.are.equal([[
App\Jobs\SendInvoice {
    b = 12345678901234567,
    user = Illuminate\Contracts\Database\ModelIdentifier {
        class = "App\\Models\\User",
        id = {
            1,
            2,
        },
    },
    e = App\Status::Active,
    n = null,
    f = 0.1,
    text = "a\"b\ncd",
}]], luaworker.dump(luaworker.php.unserialize(COMMAND)))
    end)

    it("never raises: cycles, deep nesting, bytes, keys of any kind, values of any type", function()
        local t = { 1 }
        t.self = t
        assert.are.equal("{\n    [1] = 1,\n    self = <cycle>,\n}", luaworker.dump(t))
        local deep = {}
        local at = deep
        for _ = 1, 100 do at.next = {}; at = at.next end
        assert.matches("{ ... }", luaworker.dump(deep), 1, true)
        assert.are.equal('"\\0\\255"', luaworker.dump("\0\255"))
        assert.are.equal("{\n    [2.5] = false,\n    [\"a b\"] = true,\n}",
            luaworker.dump({ ["a b"] = true, [2.5] = false }))
        assert.are.equal("-9223372036854775808", luaworker.dump(-9223372036854775807LL - 1))
        assert.are.equal("18446744073709551615", luaworker.dump(18446744073709551615ULL))
        assert.are.equal("{}", luaworker.dump({}))
        assert.are.equal("nan", luaworker.dump(0 / 0))
        assert.matches("^function", luaworker.dump(print))
    end)
end)

describe("luaworker.json.encode", function()
    it("writes an int64 exactly, as a value and as a key, where cjson raises", function()
        local command = luaworker.php.unserialize(COMMAND)
        assert.has_error(function() cjson.encode(command) end)
        local decoded = luaworker.json.decode(luaworker.json.encode(command))
        assert.are.same({ class = "App\\Status", case = "Active" }, decoded.e)
        assert.are.equal(luaworker.null, decoded.n)
        assert.matches('"b":12345678901234567[,}]', luaworker.json.encode(command))
        assert.are.equal('{"9007199254740993":1}', luaworker.json.encode({ [9007199254740993LL] = 1 }))
        assert.are.equal("[1,-9223372036854775808]",
            luaworker.json.encode({ 1, -9223372036854775807LL - 1 }))
    end)

    it("writes a number as PHP's json_encode does, where cjson's 14 digits would change it", function()
        assert.has_error(function() assert(cjson.encode({ 0.1 + 0.2 }) == "[0.30000000000000004]") end)
        assert.are.equal("[0.30000000000000004,9007199254740950,123456789012345,0.5,1e+300]",
            luaworker.json.encode({ 0.1 + 0.2, 9007199254740950, 123456789012345, 0.5, 1e300 }))
    end)

    it("is cjson for everything else: decode, null, and what cjson refuses", function()
        assert.are.equal(cjson.null, luaworker.json.null)
        assert.are.same({ a = 1 }, luaworker.json.decode('{"a":1}'))
        assert.are.equal(cjson.encode({ x = "y" }), luaworker.json.encode({ x = "y" }))
        assert.has_error(function() luaworker.json.encode({ f = print }) end)
        local t = {}
        t.self = t
        assert.has_error(function() luaworker.json.encode(t) end)
    end)
end)
