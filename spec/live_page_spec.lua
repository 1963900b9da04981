-- The live page at / of --metrics's address: one self-contained page (nothing from
-- the network) that reads /fleet.json every 2 seconds, loaded in a real browser
-- (Debian's chromium, headless), whose numbers change as jobs run.
local H = require "spec.helpers"
local cjson = H.json

-- What cmd writes on standard output (its standard error dropped: chromium's notes).
local function sh(cmd)
    return select(2, H.sh(cmd, true))
end

local HANDLER = [[
return { handle = function(job, command)
    if command.fail then error("the API said 503\nsecond line") end
end }
]]

-- The page's DOM after chromium ran its script for a few seconds of virtual time.
local function rendered(port)
    return sh("timeout 60 chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage "
        .. "--virtual-time-budget=3000 --dump-dom http://127.0.0.1:" .. port .. "/")
end

-- The cells of the table id's rows in dom: { {cell, ...}, ... }.
local function rows(dom, id)
    local body = dom:match('<table id="' .. id .. '">.-<tbody>(.-)</tbody>')
    assert(body, "no table " .. id .. " in:\n" .. dom)
    local list = {}
    for tr in body:gmatch("<tr>(.-)</tr>") do
        local cells = {}
        for td in tr:gmatch("<td[^>]*>(.-)</td>") do cells[#cells + 1] = td end
        list[#list + 1] = cells
    end
    return list
end

describe("the live page", function()
    local w

    before_each(function() H.flush() end)
    after_each(function()
        if w then w:kill("TERM"); pcall(w.wait, w, 20) end
    end)

    it("is one file that loads nothing from the network", function()
        local port = H.free_port()
        w = H.spawn({ "work", "--handlers=" .. H.handlers({ ["App/Jobs/Live.lua"] = HANDLER }),
            "--metrics=127.0.0.1:" .. port })
        local page
        H.wait_until(function()
            page = sh("curl -s http://127.0.0.1:" .. port .. "/")
            return page:match("^<!doctype html>")
        end, 10, "the page")
        assert.is_nil(page:find("https?://"), "a URL in the page")
        assert.is_nil(page:find("src=", 1, true))
        assert.is_nil(page:find("href=", 1, true))
        assert.is_nil(page:find("@import", 1, true))
        local fleet = cjson.decode(sh("curl -s http://127.0.0.1:" .. port .. "/fleet.json"))
        assert.are.equal(1, #fleet.workers)
    end)

    it("shows in a real browser the queues, jobs, failures and workers, and the numbers change as jobs run", function()
        if not H.installed("chromium") then
            return pending("chromium is not installed (Debian's chromium): the page is not loaded in a browser")
        end
        local port = H.free_port()
        w = H.spawn({ "work", "--handlers=" .. H.handlers({ ["App/Jobs/Live.lua"] = HANDLER }),
            "--metrics=127.0.0.1:" .. port, "--processes=2", "--sleep=0.1" })
        for _ = 1, 3 do
            assert.are.equal(0, H.run({ "push", "App\\Jobs\\Live", "{}", "--delay=300" }).status)
        end
        H.wait_until(function() return sh("curl -s http://127.0.0.1:" .. port .. "/fleet.json"):match('"delayed":3') end,
            10, "the delayed jobs in /fleet.json")
        local dom = rendered(port)
        assert.are.same({ { "default", "0", "3", "0", "0.0", "–" } }, rows(dom, "queues"))
        assert.are.equal(2, #rows(dom, "workers"))
        assert.are.same({}, rows(dom, "jobs"))

        for _ = 1, 4 do assert.are.equal(0, H.run({ "push", "App\\Jobs\\Live", "{}" }).status) end
        assert.are.equal(0, H.run({ "push", "App\\Jobs\\Live", '{"fail":true}' }).status)
        H.wait_until(function() return sh("curl -s http://127.0.0.1:" .. port .. "/fleet.json"):match('"processed":4,"failed":1') end,
            10, "the jobs done")
        dom = rendered(port)
        assert.are.same({ { "default", "App\\Jobs\\Live", "4", "1", "0" } },
            (function()
                local list = rows(dom, "jobs")
                for _, r in ipairs(list) do r[2] = r[2]:gsub("&amp;", "&") end
                return list
            end)())
        local failures = rows(dom, "failures")
        assert.are.equal(1, #failures)
        assert.matches("^LuaError: .*the API said 503$", failures[1][4])
        assert.matches('<span id="failed">1</span>', dom)
    end)
end)
