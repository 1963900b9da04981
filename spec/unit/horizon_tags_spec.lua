-- Specs for runtime/queue/horizon.lua's tags_for: Horizon's Tags::for of a job
-- luaworker pushes, by its handler's `tags` (standing for the class's tags()) or by
-- the models its properties name; and its silenced (JobPayload::shouldBeSilenced).
-- Runs inside the luaworker binary.
local horizon = require "luaworker.queue.horizon"
local php = require "luaworker.php"
local settings = require "luaworker.base.settings"

local function command(props)
    return php.object("App\\Jobs\\Render", props)
end

describe("luaworker.queue.horizon.tags_for", function()
    it("takes the handler's tags in order, each once, strings and numbers", function()
        local tags = horizon.tags_for(command({ video = 5 }), function(c)
            return { "render", "video:" .. c.video, 7, "render", 7 }
        end, "App\\Jobs\\Render")
        assert.are.same({ "render", "video:5", 7 }, tags)
    end)

    it("takes the models' tags when the handler has none, or gives an empty list", function()
        local user = php.object("Illuminate\\Contracts\\Database\\ModelIdentifier",
            { class = "App\\Models\\User", id = 3 })
        assert.are.same({ "App\\Models\\User:3" }, horizon.tags_for(command({ user = user }), nil, "X"))
        assert.are.same({ "App\\Models\\User:3" },
            horizon.tags_for(command({ user = user }), function() return {} end, "X"))
    end)

    it("refuses, naming the class, tags that are not a list of strings or numbers", function()
        local ok, err = pcall(horizon.tags_for, command({}), function() return "render" end, "App\\Jobs\\Render")
        assert.is_false(ok)
        assert.matches("the tags of App\\Jobs\\Render %(its handler's tags%(command%)%): expected a list, got string",
            err)
        ok, err = pcall(horizon.tags_for, command({}), function() return { "a", {} } end, "App\\Jobs\\Render")
        assert.is_false(ok)
        assert.matches("expected strings or numbers, got table at 2", err)
    end)
end)

describe("luaworker.queue.horizon.silenced", function()
    after_each(function() settings.env_overrides.HORIZON_SILENCED = nil end)

    it("silences a class its handler declares Silenced, or one HORIZON_SILENCED names, and no other", function()
        assert.is_true(horizon.silenced("App\\Jobs\\Render", true))
        assert.is_false(horizon.silenced("App\\Jobs\\Render", nil))
        settings.env_overrides.HORIZON_SILENCED = "App\\Jobs\\Mail, \\App\\Jobs\\Render"
        assert.is_true(horizon.silenced("App\\Jobs\\Render"))
        assert.is_true(horizon.silenced("App\\Jobs\\Mail"))
        assert.is_false(horizon.silenced("App\\Jobs\\Rend"))
        assert.is_false(horizon.silenced("App\\Jobs\\Render\\Sub"))
    end)
end)
