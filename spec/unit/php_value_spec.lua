-- Specs for runtime/php_value.c, php_unserialize.c, php_serialize.c: PHP serialize() text <-> Lua values.
-- Runs inside the luaworker binary: require "luaworker.php" is the C module.
-- Expected PHP strings below were produced with php-cli 8.2 (`php -r 'echo
-- serialize(...);'`, serialize_precision = -1) unless stated otherwise; NUL
-- bytes are written as \0.
local php = require "luaworker.php"
local cjson = require "cjson"
local ffi = require "ffi"

local function roundtrip(s)
  local v, err = php.unserialize(s)
  assert.is_nil(err)
  local out, err2 = php.serialize(v)
  assert.is_nil(err2)
  assert.are.equal(s, out)
  return v
end

describe("luaworker.php", function()
  describe("scalars", function()
    it("decodes N; as php.null, which is lightuserdata NULL and equals cjson.null", function()
      assert.are.equal("userdata", type(php.null))
      assert.are.equal(cjson.null, php.null)
      assert.are.equal(php.null, php.unserialize("N;"))
      assert.are.equal("N;", php.serialize(php.null))
    end)

    it("keeps a PHP null member distinct from a missing key", function()
      local t = php.unserialize('a:1:{s:1:"a";N;}')
      assert.are.equal(php.null, t.a)
      assert.is_nil(t.b)
    end)

    it("decodes booleans", function()
      assert.are.equal(true, php.unserialize("b:1;"))
      assert.are.equal(false, php.unserialize("b:0;"))
      assert.are.equal("b:1;", php.serialize(true))
      assert.are.equal("b:0;", php.serialize(false))
    end)

    it("decodes strings by byte length, binary safe", function()
      assert.are.equal("a\0b\"c", php.unserialize('s:5:"a\0b"c";'))
      assert.are.equal("", php.unserialize('s:0:"";'))
      assert.are.equal('s:5:"a\0b"c";', php.serialize("a\0b\"c"))
      -- php -r 'echo serialize("h\u{e9}llo \u{1F600}");'
      roundtrip('s:11:"h\195\169llo \240\159\152\128";')
    end)

    it("decodes integers up to 2^53 as numbers", function()
      assert.are.equal(42, php.unserialize("i:42;"))
      assert.are.equal(-7, php.unserialize("i:-7;"))
      assert.are.equal(9007199254740992, php.unserialize("i:9007199254740992;"))
      assert.are.equal("number", type(php.unserialize("i:-9007199254740992;")))
      assert.are.equal("i:42;", php.serialize(42))
    end)

    it("decodes integers beyond 2^53 as exact int64_t cdata", function()
      local v = php.unserialize("i:9007199254740993;")
      assert.is_true(ffi.istype("int64_t", v))
      assert.are.equal(9007199254740993LL, v)
      assert.are.equal("i:9007199254740993;", php.serialize(v))
      local min = php.unserialize("i:-9223372036854775808;")
      assert.are.equal("-9223372036854775808LL", tostring(min))
      assert.are.equal("i:-9223372036854775808;", php.serialize(min))
      roundtrip("i:9223372036854775807;")
    end)

    it("serializes int64_t and uint64_t cdata exactly", function()
      assert.are.equal("i:-5;", php.serialize(ffi.new("int64_t", -5)))
      assert.are.equal("i:9223372036854775807;", php.serialize(9223372036854775807ULL))
      local s, err = php.serialize(18446744073709551615ULL)
      assert.is_nil(s)
      assert.are.equal("cannot serialize cdata value", err)
    end)

    it("decodes floats including INF, -INF and NAN", function()
      assert.are.equal(1.5, php.unserialize("d:1.5;"))
      assert.are.equal(math.huge, php.unserialize("d:INF;"))
      assert.are.equal(-math.huge, php.unserialize("d:-INF;"))
      local nan = php.unserialize("d:NAN;")
      assert.is_true(nan ~= nan)
      assert.are.equal(1e25, php.unserialize("d:1.0E+25;"))
      assert.are.equal(0.5, php.unserialize("d:.5;"))
      assert.are.equal(-120, php.unserialize("d:-1.2e2;"))
    end)

    it("formats floats exactly like PHP (serialize_precision = -1)", function()
      -- php -r 'foreach ([0.1, 1/3, -1.5, 1e15, 1e17, 1.2345678901234568E+17, 1e25,
      --   0.0001, 1e-5, 123e-7, 5e-324, 1.7976931348623157E+308, 0.1+0.2, -0.0, INF, -INF, NAN]
      --   as $d) echo serialize($d), "\n";'
      local cases = {
        { 0.1, "d:0.1;" }, { 1 / 3, "d:0.3333333333333333;" }, { -1.5, "d:-1.5;" },
        { 1.2345678901234568E+17, "d:1.2345678901234568E+17;" },
        { 0.0001, "d:0.0001;" }, { 1e-5, "d:1.0E-5;" }, { 123e-7, "d:1.23E-5;" },
        { 5e-324, "d:5.0E-324;" }, { 1.7976931348623157E+308, "d:1.7976931348623157E+308;" },
        { 0.1 + 0.2, "d:0.30000000000000004;" }, { -0.0, "d:-0;" },
        { math.huge, "d:INF;" }, { -math.huge, "d:-INF;" }, { 0 / 0, "d:NAN;" },
      }
      for _, c in ipairs(cases) do
        assert.are.equal(c[2], php.serialize(c[1]))
      end
      -- integral floats keep d: inside containers (php: serialize([1.0, 1e15, 1e17, 1e25, 2.0**70]))
      roundtrip("a:5:{i:0;d:1;i:1;d:1000000000000000;i:2;d:1.0E+17;i:3;d:1.0E+25;i:4;d:1.1805916207174113E+21;}")
    end)

    it("serializes integral Lua numbers up to 2^53 as i: and others as d:", function()
      assert.are.equal("i:3;", php.serialize(3.0))
      assert.are.equal("i:-9007199254740992;", php.serialize(-2 ^ 53))
      assert.are.equal("d:1.0E+25;", php.serialize(1e25))
      -- php -r 'echo serialize(2**63), serialize(-2.0**63);'
      assert.are.equal("d:9.223372036854776E+18;", php.serialize(2 ^ 63))
      assert.are.equal("d:-9.223372036854776E+18;", php.serialize(-2 ^ 63))
    end)
  end)

  describe("arrays", function()
    it("decodes keys 0..n-1 in order as a Lua sequence", function()
      local t = php.unserialize('a:3:{i:0;s:1:"a";i:1;s:1:"b";i:2;i:3;}')
      assert.are.same({ "a", "b", 3 }, t)
      assert.is_true(php.is_list(t))
      assert.are.equal('a:3:{i:0;s:1:"a";i:1;s:1:"b";i:2;i:3;}', php.serialize(t))
    end)

    it("decodes an empty array as an empty list", function()
      local t = php.unserialize("a:0:{}")
      assert.are.same({}, t)
      assert.is_true(php.is_list(t))
      assert.are.equal("a:0:{}", php.serialize({}))
    end)

    it("decodes other arrays as maps keyed by the PHP keys, keeping their order", function()
      -- php -r 'echo serialize([5 => "a", "x" => ["y" => null, 0 => true, 1 => false], -3 => "neg", "" => "e"]);'
      local s = 'a:4:{i:5;s:1:"a";s:1:"x";a:3:{s:1:"y";N;i:0;b:1;i:1;b:0;}i:-3;s:3:"neg";s:0:"";s:1:"e";}'
      local t = roundtrip(s)
      assert.are.equal("a", t[5])
      assert.are.equal("neg", t[-3])
      assert.are.equal("e", t[""])
      assert.are.equal(php.null, t.x.y)
      assert.are.equal(true, t.x[0])
      assert.is_false(php.is_list(t))
      assert.are.equal("luaworker.php_array", getmetatable(t).__name)
      local n = 0
      for _ in pairs(t) do n = n + 1 end
      assert.are.equal(4, n) -- metadata is not a visible key
    end)

    it("keeps integer keys of a map unshifted", function()
      local t = roundtrip('a:2:{i:1;s:1:"a";i:2;s:1:"b";}')
      assert.are.equal("a", t[1])
      assert.is_false(php.is_list(t))
    end)

    it("keeps integer keys beyond 2^53 exact", function()
      -- php -r 'echo serialize([PHP_INT_MAX => 1, PHP_INT_MIN => 2, 9007199254740993 => 3]);'
      roundtrip("a:3:{i:9223372036854775807;i:1;i:-9223372036854775808;i:2;i:9007199254740993;i:3;}")
    end)

    it("serializes plain Lua tables: sequences as lists, other tables with sorted keys", function()
      assert.are.equal('a:2:{i:0;s:1:"x";i:1;b:1;}', php.serialize({ "x", true }))
      assert.are.equal('a:4:{i:-1;i:4;i:2;i:3;s:1:"a";i:1;s:1:"b";i:2;}',
        php.serialize({ b = 2, a = 1, [2] = 3, [-1] = 4 }))
      assert.are.equal('a:2:{i:0;s:1:"a";i:1;s:1:"b";}', php.serialize({ [0] = "a", [1] = "b" }))
    end)

    it("serializes members added by Lua after the original ones, sorted", function()
      local t = php.unserialize('a:2:{s:1:"z";i:1;s:1:"m";i:2;}')
      t.b = 3
      t[7] = 4
      t.z = nil
      assert.are.equal('a:3:{s:1:"m";i:2;i:7;i:4;s:1:"b";i:3;}', php.serialize(t))
    end)

    it("marks a table as a map with a key order with php.array", function()
      local t = php.array({ b = 1, a = 2, [1] = "x" }, { "b", 1 })
      assert.are.equal('a:3:{s:1:"b";i:1;i:1;s:1:"x";s:1:"a";i:2;}', php.serialize(t))
      assert.is_false(php.is_list(t))
      assert.are.equal('a:1:{i:1;s:1:"x";}', php.serialize(php.array({ "x" })))
    end)

    it("reports whether a value is a list", function()
      assert.is_true(php.is_list({ 1, 2 }))
      assert.is_false(php.is_list({ 1, nil, 3 }))
      assert.is_false(php.is_list({ a = 1 }))
      assert.is_false(php.is_list("x"))
      assert.is_false(php.is_list(php.object("A", {})))
    end)

    it("rejects keys PHP arrays cannot have and cyclic plain tables", function()
      assert.are.same({ nil, "invalid array key (boolean)" }, { php.serialize({ [true] = 1 }) })
      assert.are.same({ nil, "invalid array key (non-integer number)" }, { php.serialize({ [1.5] = 1 }) })
      local t = {}
      t[1] = t
      assert.are.same({ nil, "cyclic table" }, { php.serialize(t) })
      assert.are.same({ nil, "cannot serialize function value" }, { php.serialize({ print }) })
    end)
  end)

  describe("objects", function()
    -- php -r 'class P { private $a=1; protected $b=2; public $c=3; } class C extends P { private $a=4; public $d; }
    --   echo serialize(new C);'
    local mangled = 'O:1:"C":5:{s:4:"\0P\0a";i:1;s:4:"\0*\0b";i:2;s:1:"c";i:3;s:4:"\0C\0a";i:4;s:1:"d";N;}'

    it("exposes properties by bare name whatever their visibility", function()
      local o = roundtrip(mangled)
      assert.are.equal("C", php.class(o))
      assert.are.equal(1, o.a)
      assert.are.equal(2, o.b)
      assert.are.equal(3, o.c)
      assert.are.equal(php.null, o.d)
      assert.are.equal("luaworker.php_object", getmetatable(o).__name)
    end)

    it("keeps the mangled name as key for a later property sharing a bare name", function()
      local o = php.unserialize(mangled)
      assert.are.equal(4, o["\0C\0a"])
    end)

    it("gives a public property its bare name even after a non-public one of the same name", function()
      local s = 'O:1:"C":2:{s:4:"\0P\0a";i:1;s:1:"a";i:2;}'
      local o = roundtrip(s)
      assert.are.equal(2, o.a)
      assert.are.equal(1, o["\0P\0a"])
    end)

    it("serializes modified properties in place and new ones as public at the end", function()
      local o = php.unserialize(mangled)
      o.b = "x"
      o.zz = true
      o.c = nil
      assert.are.equal('O:1:"C":5:{s:4:"\0P\0a";i:1;s:4:"\0*\0b";s:1:"x";s:4:"\0C\0a";i:4;s:1:"d";N;s:2:"zz";b:1;}',
        php.serialize(o))
    end)

    it("builds objects with php.object", function()
      local o = php.object("App\\Jobs\\Hello", { name = "x", ["\0*\0id"] = 5, age = 2.5 }, { "\0*\0id", "name" })
      assert.are.equal("App\\Jobs\\Hello", php.class(o))
      assert.are.equal('O:14:"App\\Jobs\\Hello":3:{s:5:"\0*\0id";i:5;s:4:"name";s:1:"x";s:3:"age";d:2.5;}',
        php.serialize(o))
      assert.is_nil(php.class({}))
      assert.is_nil(php.class("x"))
    end)

    it("raises on invalid php.object / php.array arguments", function()
      assert.has_error(function() php.object("bad-name", {}) end)
      assert.has_error(function() php.object("A", "x") end)
      assert.has_error(function() php.object("A", {}, { true }) end)
      assert.has_error(function() php.array("x") end)
      assert.has_error(function() php.unserialize({}) end)
    end)

    it("keeps integer keys of __serialize data", function()
      -- php -r 'echo serialize(new ArrayObject([1,2]));'
      local o = roundtrip('O:11:"ArrayObject":4:{i:0;i:0;i:1;a:2:{i:0;i:1;i:1;i:2;}i:2;a:0:{}i:3;N;}')
      assert.are.same({ 1, 2 }, o[1])
    end)

    it("round-trips floats in properties (php: class Money, see spec source)", function()
      -- class Money { public $amount = 10.0; protected $rate = 0.25; private $big = PHP_INT_MAX;
      --   public $neg = PHP_INT_MIN; public $tags = ['a' => 1.5, 'b' => [2.0, 3]]; }
      local o = roundtrip('O:5:"Money":5:{s:6:"amount";d:10;s:7:"\0*\0rate";d:0.25;s:10:"\0Money\0big";'
        .. 'i:9223372036854775807;s:3:"neg";i:-9223372036854775808;s:4:"tags";a:2:{s:1:"a";d:1.5;s:1:"b";'
        .. 'a:2:{i:0;d:2;i:1;i:3;}}}')
      assert.are.equal(10, o.amount)
      assert.are.equal(2, o.tags.b[1])
    end)

    it("round-trips a Carbon date (php: class Carbon extends DateTime)", function()
      local o = roundtrip('O:6:"Carbon":3:{s:4:"date";s:26:"2024-01-02 03:04:05.000000";'
        .. 's:13:"timezone_type";i:3;s:8:"timezone";s:3:"UTC";}')
      assert.are.equal("UTC", o.timezone)
    end)
  end)

  describe("enums and custom serialization", function()
    it("decodes enums as {class, case} and repeats as r:", function()
      -- php -r 'enum Suit: string { case Hearts = "H"; case Spades = "S"; }
      --   class WithEnum { public $suit = Suit::Hearts; public $other; public $list; ... }'
      local s = 'O:8:"WithEnum":3:{s:4:"suit";E:11:"Suit:Hearts";s:5:"other";r:2;s:4:"list";'
        .. 'a:2:{i:0;E:11:"Suit:Spades";i:1;r:2;}}'
      local o = roundtrip(s)
      assert.are.equal("Suit", o.suit.class)
      assert.are.equal("Hearts", o.suit.case)
      assert.are.equal("Suit", php.class(o.suit))
      assert.are.equal(o.suit, o.other)
      assert.are.equal("luaworker.php_enum", getmetatable(o.suit).__name)
    end)

    it("builds enums with php.enum, repeating the same case as r: like PHP", function()
      -- php -r 'enum Suit { case Hearts; } echo serialize([Suit::Hearts, Suit::Hearts]);'
      assert.are.equal('a:2:{i:0;E:11:"Suit:Hearts";i:1;r:2;}',
        php.serialize({ php.enum("Suit", "Hearts"), php.enum("Suit", "Hearts") }))
    end)

    it("keeps C: payloads opaque and numbers the values inside them like PHP", function()
      -- class Cu implements Serializable { ... serialize() { return serialize($this->v); } }
      -- $o = new stdClass; $c = new Cu([$o, 1]); echo serialize([$c, $o, $c]);
      local s = 'a:3:{i:0;C:2:"Cu":37:{a:2:{i:0;O:8:"stdClass":0:{}i:1;i:1;}}i:1;r:4;i:2;r:2;}'
      local t = roundtrip(s)
      assert.are.equal("Cu", php.class(t[1]))
      assert.are.equal('a:2:{i:0;O:8:"stdClass":0:{}i:1;i:1;}', t[1].data)
      assert.are.equal(t[1], t[3])
      roundtrip('C:3:"Foo":5:{xy;}z}')
    end)
  end)

  describe("references", function()
    it("resolves R: and r: to shared values and re-emits them", function()
      -- php -r '$a=[1]; $o=new stdClass; $o->x=&$a; $o->y=&$a; $o->z=$o; echo serialize($o);'
      local o = roundtrip('O:8:"stdClass":3:{s:1:"x";a:1:{i:0;i:1;}s:1:"y";R:2;s:1:"z";r:1;}')
      assert.are.equal(o.x, o.y)
      assert.are.equal(o, o.z)
    end)

    it("numbers every value, including scalars and r:, but not keys or R:", function()
      -- php -r '$x=1; $a=[&$x, &$x, 2, &$x]; echo serialize($a);'
      roundtrip("a:4:{i:0;i:1;i:1;R:2;i:2;i:2;i:3;R:2;}")
      -- php -r '$b=[]; $b[0]=&$b; echo serialize($b);'
      roundtrip("a:1:{i:0;a:1:{i:0;R:2;}}")
      -- php -r '$o=new stdClass; echo serialize([$o,$o,"k"=>[$o]]);'
      roundtrip('a:3:{i:0;O:8:"stdClass":0:{}i:1;r:2;s:1:"k";a:1:{i:0;r:2;}}')
    end)

    it("round-trips an object graph with back-references (php: class Node)", function()
      -- $root->children = [$child, $child]; $child->parent = $root;
      local s = 'O:4:"Node":3:{s:4:"name";s:4:"root";s:6:"parent";N;s:8:"children";a:2:{i:0;O:4:"Node":3:'
        .. '{s:4:"name";s:5:"child";s:6:"parent";r:1;s:8:"children";a:0:{}}i:1;r:5;}}'
      local root = roundtrip(s)
      assert.are.equal(root, root.children[1].parent)
      assert.are.equal(root.children[1], root.children[2])
    end)

    it("emits r: for an object met twice in Lua-built values", function()
      local o = php.object("stdClass", {})
      assert.are.equal('a:2:{i:0;O:8:"stdClass":0:{}i:1;r:2;}', php.serialize({ o, o }))
      o.self = o
      assert.are.equal('O:8:"stdClass":1:{s:4:"self";r:1;}', php.serialize(o))
    end)
  end)

  describe("Laravel payloads", function()
    it("round-trips a queued job with public, protected and private properties", function()
      local s = 'O:23:"App\\Jobs\\ProcessPodcast":17:{s:5:"tries";i:3;s:13:"maxExceptions";i:2;s:7:"timeout";i:30;'
        .. 's:7:"backoff";a:3:{i:0;i:1;i:1;i:5;i:2;i:10;}s:4:"user";O:45:"Illuminate\\Contracts\\Database\\ModelIdentifier":4:'
        .. '{s:5:"class";s:15:"App\\Models\\User";s:2:"id";i:1;s:9:"relations";a:0:{}s:10:"connection";s:6:"sqlite";}'
        .. 's:7:"\0*\0note";s:11:"hello/\195\188n\195\175";s:31:"\0App\\Jobs\\ProcessPodcast\0secret";i:42;s:3:"job";N;'
        .. 's:10:"connection";N;s:5:"queue";N;s:15:"chainConnection";N;s:10:"chainQueue";N;s:19:"chainCatchCallbacks";N;'
        .. 's:5:"delay";N;s:11:"afterCommit";N;s:10:"middleware";a:0:{}s:7:"chained";a:0:{}}'
      local job = roundtrip(s)
      assert.are.equal("App\\Jobs\\ProcessPodcast", php.class(job))
      assert.are.equal(3, job.tries)
      assert.are.same({ 1, 5, 10 }, job.backoff)
      assert.are.equal("App\\Models\\User", job.user.class)
      assert.are.equal("Illuminate\\Contracts\\Database\\ModelIdentifier", php.class(job.user))
      assert.are.equal("hello/\195\188n\195\175", job.note)
      assert.are.equal(42, job.secret)
      assert.are.equal(php.null, job.queue)
      assert.are.equal(cjson.null, job.delay)
    end)

    it("round-trips a queued notification with a Carbon delay and a serialized chain", function()
      -- produced by /tmp laravel.php: classes mimicking Illuminate\Notifications\SendQueuedNotifications,
      -- ModelIdentifier, Illuminate\Support\Carbon (extends DateTime) and Collection, serialized by php 8.2
      local s = "O:48:\"Illuminate\\Notifications\\SendQueuedNotifications\":16:{s:11:\"notifiables\";O:45:\"Illuminate\\Contracts\\Database\\ModelIdentifier\":5:{s:5:\"class\";s:15:\"App\\Models\\User\";s:2:\"id\";a:3:{i:0;i:1;i:1;i:2;i:2;i:3;}s:9:\"relations\";a:2:{i:0;s:5:\"posts\";i:1;s:14:\"posts.comments\";}s:10:\"connection\";s:5:\"mysql\";s:15:\"collectionClass\";s:39:\"Illuminate\\Database\\Eloquent\\Collection\";}s:12:\"notification\";O:29:\"App\\Notifications\\InvoicePaid\":12:{s:2:\"id\";s:36:\"6b7c1e1e-1111-2222-3333-444455556666\";s:9:\"\000*\000amount\";d:1234.5;s:36:\"\000App\\Notifications\\InvoicePaid\000lines\";a:3:{s:5:\"Total\";d:1234.5;s:3:\"Tax\";d:0;s:5:\"Items\";a:3:{i:0;i:1;i:1;d:2.5;i:2;s:1:\"x\";}}s:10:\"connection\";N;s:5:\"queue\";N;s:15:\"chainConnection\";N;s:10:\"chainQueue\";N;s:19:\"chainCatchCallbacks\";N;s:5:\"delay\";O:25:\"Illuminate\\Support\\Carbon\":3:{s:4:\"date\";s:26:\"2024-03-04 05:06:07.123456\";s:13:\"timezone_type\";i:3;s:8:\"timezone\";s:16:\"Europe/Amsterdam\";}s:11:\"afterCommit\";N;s:10:\"middleware\";a:0:{}s:7:\"chained\";a:1:{i:0;s:118:\"O:29:\"Illuminate\\Support\\Collection\":2:{s:8:\"\000*\000items\";a:2:{i:0;i:1;i:1;i:2;}s:28:\"\000*\000escapeWhenCastingToString\";b:0;}\";}}s:8:\"channels\";a:2:{i:0;s:4:\"mail\";i:1;s:8:\"database\";}s:5:\"tries\";N;s:7:\"timeout\";N;s:13:\"maxExceptions\";N;s:17:\"shouldBeEncrypted\";b:0;s:10:\"connection\";N;s:5:\"queue\";N;s:15:\"chainConnection\";N;s:10:\"chainQueue\";N;s:19:\"chainCatchCallbacks\";N;s:5:\"delay\";N;s:11:\"afterCommit\";N;s:10:\"middleware\";a:0:{}s:7:\"chained\";a:0:{}}"
      local job = roundtrip(s)
      assert.are.equal(0, job.notification.lines.Tax)
      assert.are.equal("Europe/Amsterdam", job.notification.delay.timezone)
      local chained = php.unserialize(job.notification.chained[1])
      assert.are.same({ 1, 2 }, chained.items)
      assert.are.equal(job.notification.chained[1], php.serialize(chained))
    end)
  end)

  describe("malformed input", function()
    local cases = {
      { "", "unexpected end of input at offset 0" },
      { "x", "unknown type 'x' at offset 0" },
      { "\0", "unknown type at offset 0" },
      { "S:1:\"a\";", "unknown type 'S' at offset 0" },
      { "N:", "expected ';' at offset 1" },
      { "i:", "unexpected end of input at offset 2" },
      { "i:;", "invalid integer at offset 2" },
      { "i:1x;", "expected ';' at offset 3" },
      { "i:9223372036854775808;", "integer out of range at offset 2" },
      { "i:-9223372036854775809;", "integer out of range at offset 2" },
      { "b:2;", "invalid boolean at offset 2" },
      { "d:1.2.3;", "invalid float at offset 2" },
      { "d:inf;", "invalid float at offset 2" },
      { "d:0x10;", "invalid float at offset 2" },
      { "d:1", "unexpected end of input at offset 3" },
      { 's:5:"abc";', "unexpected end of input at offset 10" },
      { 's:9:"abc";', "length exceeds input at offset 2" },
      { 's:3:"abc\';', "expected '\"' at offset 8" },
      { 's:-1:"";', "invalid string length at offset 2" },
      { "a:1:{i:0;N;", "unexpected end of input at offset 11" },
      { "a:2:{i:0;N;}", "element count exceeds input at offset 2" },
      { "a:1000000:{}", "element count exceeds input at offset 2" },
      { "a:99999999999999999999:{}", "invalid element count at offset 2" },
      { "a:1:{d:1;N;}", "invalid key at offset 5" },
      { "a:1:{i:0;N;}x", "trailing data at offset 12" },
      { "N;N;", "trailing data at offset 2" },
      { "r:1;", "reference out of range at offset 0" },
      { "a:1:{i:0;R:5;}", "reference out of range at offset 9" },
      { "a:1:{i:0;r:0;}", "reference out of range at offset 9" },
      { 'O:3:"A-B":0:{}', "invalid class name at offset 2" },
      { 'O:1:"A":1:{s:1:"a";}', "unknown type '}' at offset 19" },
      { 'E:3:"Foo";', "invalid enum name at offset 0" },
      { 'C:1:"A":5:{ab}', "length exceeds input at offset 8" },
    }
    for _, c in ipairs(cases) do
      it(("rejects %q with %q"):format(c[1], c[2]), function()
        local v, err = php.unserialize(c[1])
        assert.is_nil(v)
        assert.are.equal(c[2], err)
      end)
    end

    it("accepts nesting up to 512 levels and rejects deeper input", function()
      local ok = string.rep("a:1:{i:0;", 512) .. "N;" .. string.rep("}", 512)
      assert.are.equal(ok, php.serialize(php.unserialize(ok)))
      local deep = string.rep("a:1:{i:0;", 100000) .. "N;" .. string.rep("}", 100000)
      assert.are.same({ nil, "nesting too deep at offset 4608" }, { php.unserialize(deep) })
    end)

    it("rejects serializing tables nested deeper than 512 levels", function()
      local t = {}
      for _ = 1, 600 do t = { t } end
      assert.are.same({ nil, "nesting too deep" }, { php.serialize(t) })
    end)
  end)

  describe("float_string", function()
    -- each as PHP 8.2's (string) cast prints it (precision 14), checked with php -r
    local cases = {
      { 0.1, "0.1" }, { 1 / 3, "0.33333333333333" }, { 1e25, "1.0E+25" }, { 1e15, "1.0E+15" },
      { 1e14, "1.0E+14" }, { 0.00001, "1.0E-5" }, { 0.0001, "0.0001" }, { -1.5e-7, "-1.5E-7" },
      { 123456789012345.678, "1.2345678901235E+14" }, { 1.5, "1.5" }, { 100, "100" },
      { -0.0, "-0" }, { 0 / 0, "NAN" }, { 1 / 0, "INF" }, { -1 / 0, "-INF" }, { 1e-300, "1.0E-300" },
      { 0.1 + 0.2, "0.3" }, { 99999999999999.99, "1.0E+14" }, { 0.5, "0.5" },
    }
    for _, c in ipairs(cases) do
      it("gives " .. c[2], function()
        assert.are.equal(c[2], php.float_string(c[1]))
      end)
    end
  end)
end)
