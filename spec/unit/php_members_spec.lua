-- Specs for php.members and php.select (runtime/php/php_value.c): a PHP value's
-- members in the order PHP writes them, and an object copied with some of its
-- members in a given order, as runtime/queue/serialized_job.lua needs them.
-- Runs inside the luaworker binary. NUL bytes are written as \0.
local php = require "luaworker.php"

-- class C { public $a = 1.0; protected $b = 2; private $c; public $d = []; }
local C = 'O:1:"C":4:{s:1:"a";d:1;s:4:"\0*\0b";i:2;s:4:"\0C\0c";N;s:1:"d";a:0:{}}'

describe("luaworker.php", function()
  describe("members", function()
    it("lists an object's keys in PHP's order with their PHP names, those Lua added after, sorted", function()
      local o = php.unserialize(C)
      o.z, o.y = 1, 2
      local keys, names, recorded = php.members(o)
      assert.are.same({ "a", "b", "c", "d", "y", "z" }, keys)
      assert.are.same({ "a", "\0*\0b", "\0C\0c", "d", "y", "z" }, names)
      assert.are.equal(4, recorded)
    end)

    it("leaves out what Lua removed, and counts the keys given to php.object as recorded", function()
      local o = php.unserialize(C)
      o.b = nil
      local keys, _, recorded = php.members(o)
      assert.are.same({ "a", "c", "d" }, keys)
      assert.are.equal(3, recorded)
      keys, _, recorded = php.members(php.object("X", { m = 1, n = 2, l = 3 }, { "n", "m" }))
      assert.are.same({ "n", "m", "l" }, keys)
      assert.are.equal(2, recorded)
    end)

    it("lists a sequence in its order and a plain map sorted", function()
      local keys, names, recorded = php.members({ "x", "y" })
      assert.are.same({ 1, 2 }, keys)
      assert.are.same({ 1, 2 }, names)
      assert.are.equal(2, recorded)
      keys, _, recorded = php.members({ b = 1, a = 2, [3] = 0 })
      assert.are.same({ 3, "a", "b" }, keys)
      assert.are.equal(0, recorded)
    end)

    it("raises on what is not a table", function()
      assert.has_error(function() php.members("x") end)
    end)
  end)

  describe("select", function()
    it("copies the members named, in that order, with their names and float marks", function()
      local o = php.unserialize(C)
      local copy = php.select(o, { "d", "c", "missing", "a", "d" })
      assert.are.equal('O:1:"C":3:{s:1:"d";a:0:{}s:4:"\0C\0c";N;s:1:"a";d:1;}', php.serialize(copy))
      assert.are.equal(C, php.serialize(o))
      assert.are.equal(o.d, copy.d)
    end)

    it("gives members without a PHP name of their own the name given for them", function()
      local o = php.unserialize(C)
      o.e = 5
      local copy = php.select(o, { "e", "b" }, { e = "\0*\0e", b = "b" })
      assert.are.equal('O:1:"C":2:{s:4:"\0*\0e";i:5;s:4:"\0*\0b";i:2;}', php.serialize(copy))
      assert.are.same({ { "e", "b" }, 2 }, { php.members(copy), select(3, php.members(copy)) })
    end)

    it("raises on what is not an object, and on keys that are not strings or numbers", function()
      assert.has_error(function() php.select({}, {}) end)
      assert.has_error(function() php.select(php.object("A", {}), { true }) end)
      assert.has_error(function() php.select(php.object("A", {}), {}, "names") end)
    end)
  end)
end)
