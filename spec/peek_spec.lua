-- luaworker peek on Redis: a queue's jobs and their commands, taking none.
local H = require "spec.helpers"
local cjson = H.json

local function peek(args)
    local full = { "peek" }
    for _, a in ipairs(args or {}) do full[#full + 1] = a end
    local r = H.run(full)
    assert.are.equal(0, r.status, r.stderr)
    return r.stdout
end

describe("luaworker peek", function()
    before_each(function() H.flush() end)

    it("shows the waiting jobs oldest first, then the delayed, then the reserved, with their commands, taking none", function()
        local list, delayed, reserved = H.keys()
        H.push(H.class_payload("App\\Jobs\\First", { uuid = "u-1", attempts = 0 },
            { { "big", "i:12345678901234567;" }, { "note", "N;" } }))
        H.push("not json")
        H.r("ZADD", delayed, 1893456000, cjson.encode(H.class_payload("App\\Jobs\\Later", { uuid = "u-2" })))
        H.r("ZADD", reserved, 1893456060, cjson.encode(H.class_payload("App\\Jobs\\Held",
            { uuid = "u-3", attempts = 2 })))
        local before = { H.r("LRANGE", list, 0, -1), H.r("ZRANGE", delayed, 0, -1), H.r("ZRANGE", reserved, 0, -1) }
        local out = peek()
        assert.are.equal(table.concat({
            "pending  u-1  App\\Jobs\\First  attempts 0",
            "App\\Jobs\\First {",
            "    big = 12345678901234567,",
            "    note = null,",
            "}",
            "",
            "pending  ?  (no class)",
            "(the payload is not a JSON object)",
            "not json",
            "",
            "delayed  u-2  App\\Jobs\\Later  attempts 0  due " .. os.date("%Y-%m-%d %H:%M:%S", 1893456000),
            "App\\Jobs\\Later {}",
            "",
            "reserved  u-3  App\\Jobs\\Held  attempts 2  reserved until " .. os.date("%Y-%m-%d %H:%M:%S", 1893456060),
            "App\\Jobs\\Held {}",
            "", "" }, "\n"), out)
        -- nothing taken or changed
        assert.are.same(before, { H.r("LRANGE", list, 0, -1), H.r("ZRANGE", delayed, 0, -1),
            H.r("ZRANGE", reserved, 0, -1) })
    end)

    it("keeps to --limit and --class, and writes one JSON object a job with --json, int64 exact", function()
        for i = 1, 150 do
            H.push(H.class_payload(i % 50 == 0 and "App\\Jobs\\Rare" or "App\\Jobs\\Common", { uuid = "u" .. i },
                { { "n", string.format("i:90071992547409%02d;", i % 100) } }))
        end
        local lines = {}
        for line in peek({ "--class=App\\Jobs\\Rare", "--json", "--limit=2" }):gmatch("[^\n]+") do
            lines[#lines + 1] = line
        end
        assert.are.equal(2, #lines)
        assert.matches('"n":9007199254740950[,}]', lines[1])
        local first = cjson.decode(lines[1])
        assert.are.same({ "pending", "u50", "App\\Jobs\\Rare", 0 }, { first.state, first.id, first.class, first.attempts })
        -- the payload as the queue holds it, for `luaworker run -`
        assert.are.equal("App\\Jobs\\Rare", cjson.decode(first.payload).displayName)
        assert.are.equal("u100", cjson.decode(lines[2]).id)
        local _, shown = peek({ "--limit=3" }):gsub("\npending  ", "")
        assert.are.equal(2, shown)  -- and the first line's
        assert.are.equal("No jobs of App\\Jobs\\None in the [default] queue\n", peek({ "--class=App\\Jobs\\None" }))
    end)
end)
