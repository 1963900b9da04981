-- Specs for runtime/encrypter.c: Laravel's encrypted payloads (ShouldBeEncrypted jobs).
-- Runs inside the luaworker binary: require "luaworker.encrypter" is the C module.
--
-- The LARAVEL vectors were made by the real Illuminate\Encryption\Encrypter of
-- Debian's php-laravel-framework 8.83.26 (php-cli 8.2), key = bytes 0..31 (the
-- example app's APP_KEY; the 128-bit ciphers use its first 16 bytes):
--   php -r 'require "/usr/share/php/Illuminate/autoload.php";
--           $e = new Illuminate\Encryption\Encrypter($key, $cipher);
--           echo $e->encrypt("hello", false);   // "plain"
--           echo $e->encrypt("hello");          // "serialized": s:5:"hello";'
-- job: $e->encrypt(serialize(new Secret)) with
--   class Secret { public $user_id = 7; protected $token = "t0k/én"; private $n = 42; }
-- escaped: a Laravel payload re-encoded with plain json_encode (slashes as \/),
-- which PHP's Encrypter decrypts to "slashes".
--
-- The LUAWORKER vectors were made by enc.encrypt(php.serialize("made by
-- luaworker/é"), key, cipher) and checked by hand against real PHP: for each,
-- (new Encrypter($key, $cipher))->decrypt($payload) returned the string
-- "made by luaworker/é", and base64_decode($payload) had the same shape as
-- PHP's own: {"iv":"…","value":"…","mac":"<64 hex>|","tag":"|<b64>"}.
local enc = require "luaworker.encrypter"
local php = require "luaworker.php"

local KEY32 = {}
for i = 0, 31 do KEY32[#KEY32 + 1] = string.char(i) end
KEY32 = table.concat(KEY32)
local KEY16 = KEY32:sub(1, 16)
local APP_KEY = "base64:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
local CIPHERS = { "AES-128-CBC", "AES-256-CBC", "AES-128-GCM", "AES-256-GCM" }
local function key_for(cipher) return cipher:find("128") and KEY16 or KEY32 end

local LARAVEL = {
  ["AES-128-CBC"] = {
    plain = "eyJpdiI6IlJSU2VlU3FDOTJPUWs2bUUrd0Jlc2c9PSIsInZhbHVlIjoibHlrbVlOaUZjalFZY3IrVGxpOWtwZz09IiwibWFjIjoiNWI0NzliOWE4NjVkY2EyYzFlNTdkOGIwYmZjMjVhYTRmNzExZGM0OWQ0NjNhYzliMTkxMmQwYTE3MDIzNDc4YyIsInRhZyI6IiJ9",
    serialized = "eyJpdiI6IjV3empFSGJZNk5hdGoza093N0gvNlE9PSIsInZhbHVlIjoidllaREtRcXhuUHYrRE9XUmlzVk9OUT09IiwibWFjIjoiZGFhYjhhMTFmMjIzOGYxNGJlZWIwNjJkZTY4MzI2YTdiMjA4MzFlNTc1NjM2MzViZmM1MjVlZjkwYTU0YjMxZiIsInRhZyI6IiJ9",
  },
  ["AES-256-CBC"] = {
    plain = "eyJpdiI6IkdIcTA5YUhwOWt5c3JUTkxRempMWUE9PSIsInZhbHVlIjoiYlVGS3V6N2FSV2dRNGVXYTIrUGF1Zz09IiwibWFjIjoiZDg4ZDA2NmQwODE4YjEzNDJlNzZmNGE2Y2M0NTdmYzkzYjI4MDJkYjJjZjk0MDNmNzE1YTg3ZDIyZmQ4MDc4NyIsInRhZyI6IiJ9",
    serialized = "eyJpdiI6ImxpSVFQeTAxb3laUDZzd25jZGhad2c9PSIsInZhbHVlIjoibHdYQjE1YzV6bFI4SjFyNmpDRHpqUT09IiwibWFjIjoiNDhkMTMxMDBmNTExM2JhNmIwMTQwYzg4YmE4YWUxYzFlZmRkN2NlODNmMGZjZjhlODJjNDEyNTY4Nzc0ZGVkMCIsInRhZyI6IiJ9",
  },
  ["AES-128-GCM"] = {
    plain = "eyJpdiI6InJKWFI1Yms5V0VybFd1Z3giLCJ2YWx1ZSI6InRBU0ErNnc9IiwibWFjIjoiIiwidGFnIjoiajN0STI3MWxvcEM3NS9NRUVNZUxRUT09In0=",
    serialized = "eyJpdiI6IlhhOUdpWW5VMVJSRGVwMjYiLCJ2YWx1ZSI6IkpGRGgvWmJmVURWWXp5WWYiLCJtYWMiOiIiLCJ0YWciOiJKL1M0aEtRelBNMGQ1Qmd6SlY0ZCt3PT0ifQ==",
  },
  ["AES-256-GCM"] = {
    plain = "eyJpdiI6IjdTQlRvUVhNYlhwenpzQk4iLCJ2YWx1ZSI6Ikh5cWJpaUE9IiwibWFjIjoiIiwidGFnIjoicmZTTjQ0Q0lLRTFhRFlycEpFbk5lQT09In0=",
    serialized = "eyJpdiI6ImV4MWJZYkhNTVA4RXVoSjUiLCJ2YWx1ZSI6ImE0U0QyM2U5K2JjcVNXZW4iLCJtYWMiOiIiLCJ0YWciOiJ5Mzl6QlJ5bkFvdGlUK295cHlxdUtBPT0ifQ==",
  },
  job = "eyJpdiI6Ilk5b1dsM0ZkSUpwTFErQmhOM3hWeEE9PSIsInZhbHVlIjoiM2dzeFNocm5sanhraDVEdkRRYit3OERvcFhuK3lXS2ljbmZLOXRDa2VTRkFrL1BvSG42SnlYMXJ0MUZmZHZHTEJaU29IL1ZuMHErL3ZydFQvV1J2am1sYjQ0dFlnaE5kczhmbFFPRXdEb3JJdTUya29kVG43UmlrcVpQS1dDNmsiLCJtYWMiOiI0NzE3NmY5YjdjOWU1NGYzNzM2N2M4MzYzMTBmNDg1ZTU2NjAwMTdmMjI5MWI5NWVmMjhlMGZkZDQ1YWYxYjUxIiwidGFnIjoiIn0=",
  escaped = "eyJpdiI6IkFvd3VWXC8rR1pTRURFcWlOZnNQbGVBPT0iLCJ2YWx1ZSI6IkpaNXdqeHhYZFgyUVN0XC9nU01wUTdBPT0iLCJtYWMiOiJkNDg4NGYzODk2YWE3MDg5OTZlMTg3NDM1YjA0YWRkZjQ1Y2RkZTE4MDUwYjMzN2I1ZTE4NDNmN2Y0YWYxOWJmIiwidGFnIjoiIn0=",
}

local LUAWORKER = {
  ["AES-128-CBC"] = "eyJpdiI6IjB1a0pXV3pLcGdmaGN3TXduQlNZVWc9PSIsInZhbHVlIjoiZmZYYmx1NTdCQ1hWNnA2Zlp5akwzL3E3ZVljdmtXR1FsQXArZ1ErdzEvWT0iLCJtYWMiOiI0YWI5OTExYjE0OGFkNWQ1M2Q4YjhiYTlmMmZlNGZlNjE1MjJlNmVlNDE4NzJmZjAyMzJkNWQ3YTFhZTk1MDA2IiwidGFnIjoiIn0=",
  ["AES-256-CBC"] = "eyJpdiI6Im1NejdlaGEzckFjZVBIeTc4MEpzVWc9PSIsInZhbHVlIjoiQ0RhbG1oVGdBc0VNSThQZG4xTEc5OXBobEM5b3JyWkxma3dFb2RIVGpTUT0iLCJtYWMiOiI0YWQyMzQwMWQ2YWQ1MjhiYzVlMDFhMDkxMGY0MWEzZDExN2I5Y2VkOWE2N2Y4MWNhN2FmMWYxZGViOWVkYzcxIiwidGFnIjoiIn0=",
  ["AES-128-GCM"] = "eyJpdiI6IjJud3g3eHF3RExKSmVxTU4iLCJ2YWx1ZSI6InVCUG1MZWxqZkJZMjREOVQ3QlgyT0F0YWVyUnA0SC90aXk1RVp3PT0iLCJtYWMiOiIiLCJ0YWciOiJKTnQ5clRiUUxuS1dZSGUzcURsV2pBPT0ifQ==",
  ["AES-256-GCM"] = "eyJpdiI6InQyM2dyK3FFNmR1Nm5idm0iLCJ2YWx1ZSI6IjlCNGdLOTFiU1RtdDEwRWVERUMrZmZNWnJkKzRxOFZ1ZnJrbTJRPT0iLCJtYWMiOiIiLCJ0YWciOiJmaDBBazIzMkozR0lpTlNlenV2QXd3PT0ifQ==",
}

-- Plain-Lua base64, to build hostile envelopes.
local B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
local function b64(s)
  return ((s:gsub(".", function(c)
    local byte, bits = c:byte(), {}
    for i = 8, 1, -1 do bits[#bits + 1] = math.floor(byte / 2 ^ (i - 1)) % 2 end
    return table.concat(bits)
  end) .. "0000"):gsub("%d%d%d?%d?%d?%d?", function(bits)
    if #bits < 6 then return "" end
    return B64:sub(tonumber(bits, 2) + 1, tonumber(bits, 2) + 1)
  end) .. ({ "", "==", "=" })[#s % 3 + 1])
end
local function unb64(s)
  s = s:gsub("=", "")
  return (s:gsub(".", function(c)
    local v, bits = B64:find(c, 1, true) - 1, {}
    for i = 6, 1, -1 do bits[#bits + 1] = math.floor(v / 2 ^ (i - 1)) % 2 end
    return table.concat(bits)
  end):gsub("%d%d%d?%d?%d?%d?%d?%d?", function(bits)
    if #bits < 8 then return "" end
    return string.char(tonumber(bits, 2))
  end))
end
-- The envelope JSON of a payload, edited by f(json) -> json, re-encoded.
local function edit(payload, f) return b64(f(unb64(payload))) end

local function fails(message, ...)
  local v, err = enc.decrypt(...)
  assert.is_nil(v)
  assert.are.equal(message, err)
end

describe("luaworker.encrypter", function()
  describe("key", function()
    it("decodes a base64: APP_KEY to the raw key bytes", function()
      assert.are.equal(KEY32, enc.key(APP_KEY))
      assert.are.equal(KEY32, enc.key(APP_KEY, "AES-256-GCM"))
      assert.are.equal(KEY16, enc.key("base64:AAECAwQFBgcICQoLDA0ODw==", "AES-128-CBC"))
    end)

    it("takes an APP_KEY without the prefix as the key bytes themselves", function()
      local raw = string.rep("k", 32)
      assert.are.equal(raw, enc.key(raw))
      assert.are.equal("0123456789abcdef", enc.key("0123456789abcdef", "aes-128-gcm"))
    end)

    it("checks the key length against the cipher", function()
      local v, err = enc.key(APP_KEY, "AES-128-CBC")
      assert.is_nil(v)
      assert.are.equal("Incorrect key length for AES-128-CBC: 32 bytes, expected 16.", err)
      assert.are.same({ nil, "Incorrect key length for AES-256-CBC: 5 bytes, expected 32." },
        { enc.key("short") })
    end)

    it("rejects an empty key, bad base64 and unknown ciphers with Laravel-like messages", function()
      assert.are.same({ nil, "No application encryption key has been specified." }, { enc.key("") })
      assert.are.same({ nil, 'The application key is not valid base64 after "base64:".' },
        { enc.key("base64:AAEC*wQF") })
      assert.are.same({ nil, 'Unsupported cipher "DES-CBC": expected AES-128-CBC, AES-256-CBC, '
        .. "AES-128-GCM or AES-256-GCM." }, { enc.key(APP_KEY, "DES-CBC") })
      assert.are.same({ nil, 'Unsupported cipher "AES-256-CBC": expected AES-128-CBC, AES-256-CBC, '
        .. "AES-128-GCM or AES-256-GCM." }, { enc.key(APP_KEY, "AES-256-CBC\0x") })
    end)

    it("raises on arguments of the wrong type", function()
      assert.has_error(function() enc.key(nil) end)
      assert.has_error(function() enc.key(APP_KEY, {}) end)
    end)
  end)

  describe("decrypt", function()
    for _, cipher in ipairs(CIPHERS) do
      it("decrypts Laravel's " .. cipher .. " payloads to the raw plaintext", function()
        local key = key_for(cipher)
        assert.are.equal("hello", enc.decrypt(LARAVEL[cipher].plain, key, cipher))
        local s = enc.decrypt(LARAVEL[cipher].serialized, key, cipher:lower())
        assert.are.equal('s:5:"hello";', s)
        assert.are.equal("hello", php.unserialize(s))
      end)

      it("decrypts a payload enc.encrypt made with " .. cipher .. " (PHP decrypts it too)", function()
        local s = enc.decrypt(LUAWORKER[cipher], key_for(cipher), cipher)
        assert.are.equal("made by luaworker/é", php.unserialize(s))
      end)
    end

    it("uses AES-256-CBC when no cipher is given", function()
      assert.are.equal("hello", enc.decrypt(LARAVEL["AES-256-CBC"].plain, KEY32))
    end)

    it("gives a queued job's command: a serialized string holding the serialized object", function()
      local s = enc.decrypt(LARAVEL.job, KEY32)
      assert.are.equal('s:85:"O:6:"Secret":3:{s:7:"user_id";i:7;s:8:"\0*\0token";s:7:"t0k/én";'
        .. 's:9:"\0Secret\0n";i:42;}";', s)
      local job = php.unserialize(php.unserialize(s))
      assert.are.equal("Secret", php.class(job))
      assert.are.equal(7, job.user_id)
    end)

    it("reads envelopes whose JSON escapes slashes", function()
      assert.are.equal("slashes", enc.decrypt(LARAVEL.escaped, KEY32))
    end)

    it("refuses a wrong MAC, a wrong key and a tampered value before decrypting", function()
      local p = LARAVEL["AES-256-CBC"].plain
      fails("The MAC is invalid.", edit(p, function(j) return (j:gsub('"mac":"d', '"mac":"e')) end), KEY32)
      fails("The MAC is invalid.", edit(p, function(j) return (j:gsub('"mac":"d', '"mac":"D')) end), KEY32)
      fails("The MAC is invalid.", edit(p, function(j) return (j:gsub('"mac":"d8', '"mac":"d')) end), KEY32)
      fails("The MAC is invalid.", edit(p, function(j) return (j:gsub('"value":"b', '"value":"c')) end), KEY32)
      fails("The MAC is invalid.", p, string.rep("\0", 32))
    end)

    it("refuses a tampered GCM value or tag", function()
      local p = LARAVEL["AES-256-GCM"].plain
      fails("Could not decrypt the data.", edit(p, function(j) return (j:gsub('"value":"H', '"value":"I')) end), KEY32, "AES-256-GCM")
      fails("Could not decrypt the data.", edit(p, function(j) return (j:gsub('"tag":"r', '"tag":"s')) end), KEY32, "AES-256-GCM")
      fails('Could not decrypt the data: "tag" is not base64 of 16 bytes.',
        edit(p, function(j) return (j:gsub('"tag":"[^"]*"', '"tag":"AAAA"')) end), KEY32, "AES-256-GCM")
      fails('Could not decrypt the data: "tag" is not base64 of 16 bytes.',
        edit(p, function(j) return (j:gsub('"tag":"[^"]*"', '"tag":""')) end), KEY32, "AES-256-GCM")
      fails('The payload is invalid: "value" is not base64.',
        edit(p, function(j) return (j:gsub('"value":"[^"]*"', '"value":"Hy*b"')) end), KEY32, "AES-256-GCM")
    end)

    it("refuses a tag with a CBC cipher, as Laravel does", function()
      local p = LARAVEL["AES-256-CBC"].plain
      fails("Unable to use tag because the cipher algorithm does not support AEAD.",
        edit(p, function(j) return (j:gsub('"tag":""', '"tag":"AAAAAAAAAAAAAAAAAAAAAA=="')) end), KEY32)
    end)

    it("names what is wrong with a malformed payload", function()
      local p = LARAVEL["AES-256-CBC"].plain
      fails("The payload is invalid: not base64.", p:sub(1, -4), KEY32)
      fails("The payload is invalid: not base64.", p:sub(1, -3) .. "=", KEY32)
      fails("The payload is invalid: not base64.", "!!!!", KEY32)
      fails("The payload is invalid: not base64.", p:sub(1, 20) .. "\n" .. p:sub(21), KEY32)
      fails("The payload is invalid: not a JSON object.", "", KEY32)
      fails("The payload is invalid: not a JSON object.", b64("not json"), KEY32)
      fails("The payload is invalid: not a JSON object.", b64('["iv"]'), KEY32)
      fails("The payload is invalid: not valid JSON.", p:sub(1, -2), KEY32)
      fails("The payload is invalid: not valid JSON.", p:sub(1, 40), KEY32)
      fails("The payload is invalid: not valid JSON.", b64(unb64(p) .. "x"), KEY32)
      fails("The payload is invalid: not valid JSON.", b64('{"iv":"\\ud800"}'), KEY32)
      fails("The payload is invalid: not valid JSON.", b64('{"x":' .. string.rep("[", 100) .. string.rep("]", 100) .. "}"), KEY32)
      fails('The payload is invalid: "iv" is missing or not a string.', b64("{}"), KEY32)
      fails('The payload is invalid: "mac" is missing or not a string.',
        edit(p, function(j) return (j:gsub('"mac":"[^"]*"', '"mac":null')) end), KEY32)
      fails('The payload is invalid: "value" is missing or not a string.',
        edit(p, function(j) return (j:gsub('"value":"[^"]*"', '"value":[1,2]')) end), KEY32)
      fails('The payload is invalid: "tag" is not a string.',
        edit(p, function(j) return (j:gsub('"tag":""', '"tag":{"a":1}')) end), KEY32)
      fails('The payload is invalid: "iv" is not base64 of 16 bytes.',
        edit(p, function(j) return (j:gsub('"iv":"[^"]*"', '"iv":"AAAA"')) end), KEY32)
      fails('The payload is invalid: "iv" is not base64 of 12 bytes.', LARAVEL["AES-256-CBC"].plain, KEY32, "AES-256-GCM")
    end)

    it("accepts unknown keys, whitespace and a null tag like json_decode", function()
      local p = LARAVEL["AES-256-CBC"].plain
      assert.are.equal("hello", enc.decrypt(edit(p, function(j)
        return " \n" .. j:gsub('"tag":""', '"tag" : null, "x":{"y":[1.5e3,-0,true,false,null,"\\u00e9\\n"]}') .. "\t"
      end), KEY32))
    end)

    it("refuses wrong key lengths and unknown ciphers", function()
      local p = LARAVEL["AES-256-CBC"].plain
      fails("Incorrect key length for AES-256-CBC: 16 bytes, expected 32.", p, KEY16)
      fails("Incorrect key length for AES-256-CBC: 51 bytes, expected 32.", p, APP_KEY)
      fails('Unsupported cipher "AES-256-CTR": expected AES-128-CBC, AES-256-CBC, AES-128-GCM or AES-256-GCM.',
        p, KEY32, "AES-256-CTR")
    end)

    it("refuses payloads over 64 MiB without reading them", function()
      fails("The payload is invalid: larger than 64 MiB.", string.rep("A", 64 * 1024 * 1024 + 4), KEY32)
    end)

    it("survives random corruption of a payload and its JSON", function()
      math.randomseed(42)
      for _, cipher in ipairs(CIPHERS) do
        local p, key = LARAVEL[cipher].serialized, key_for(cipher)
        local json = unb64(p)
        for _ = 1, 300 do
          local i = math.random(#p)
          local v, err = enc.decrypt(p:sub(1, i - 1) .. string.char(math.random(0, 255)) .. p:sub(i + 1), key, cipher)
          assert.is_true(type(v) == "string" or type(err) == "string")
          i = math.random(#json)
          local cut = json:sub(1, i - 1) .. string.char(math.random(0, 255)) .. json:sub(i + 1, math.random(i, #json))
          v, err = enc.decrypt(b64(cut), key, cipher)
          assert.is_true(type(v) == "string" or type(err) == "string")
        end
      end
    end)

    it("raises on arguments of the wrong type", function()
      assert.has_error(function() enc.decrypt(nil, KEY32) end)
      assert.has_error(function() enc.decrypt(LARAVEL.job, nil) end)
    end)
  end)

  describe("encrypt", function()
    local binary = {}
    for i = 0, 255 do binary[#binary + 1] = string.char(i) end
    binary = table.concat(binary)

    for _, cipher in ipairs(CIPHERS) do
      it("round-trips through decrypt with " .. cipher, function()
        local key = key_for(cipher)
        for _, s in ipairs({ "", "hello", binary, string.rep("0123456789abcdef", 4096) .. "x" }) do
          assert.are.equal(s, enc.decrypt(assert(enc.encrypt(s, key, cipher)), key, cipher))
        end
      end)
    end

    it("writes Laravel's envelope: iv, value, mac, tag in that order, slashes unescaped", function()
      local cbc = unb64(enc.encrypt("hello", KEY32))
      assert.is_truthy(cbc:match('^{"iv":"[%w+/]+==","value":"[%w+/]+=*","mac":"%x+","tag":""}$'), cbc)
      assert.are.equal(24, #cbc:match('"iv":"([^"]*)"'))
      assert.are.equal(64, #cbc:match('"mac":"([%da-f]*)"'))
      local gcm = unb64(enc.encrypt("hello", KEY32, "AES-256-GCM"))
      assert.is_truthy(gcm:match('^{"iv":"[%w+/]+","value":"[%w+/]+=*","mac":"","tag":"[%w+/]+=="}$'), gcm)
      assert.are.equal(16, #gcm:match('"iv":"([^"]*)"'))
      assert.are.equal(24, #gcm:match('"tag":"([^"]*)"'))
    end)

    it("uses a fresh IV each time", function()
      assert.are_not.equal(enc.encrypt("hello", KEY32), enc.encrypt("hello", KEY32))
    end)

    it("refuses wrong key lengths, unknown ciphers and oversized plaintexts", function()
      assert.are.same({ nil, "Incorrect key length for AES-128-GCM: 32 bytes, expected 16." },
        { enc.encrypt("x", KEY32, "AES-128-GCM") })
      assert.are.same({ nil, 'Unsupported cipher "rot13": expected AES-128-CBC, AES-256-CBC, '
        .. "AES-128-GCM or AES-256-GCM." }, { enc.encrypt("x", KEY32, "rot13") })
      assert.are.same({ nil, "Could not encrypt the data: larger than 32 MiB." },
        { enc.encrypt(string.rep("x", 32 * 1024 * 1024 + 1), KEY32) })
    end)

    it("raises on arguments of the wrong type", function()
      assert.has_error(function() enc.encrypt({}, KEY32) end)
      assert.has_error(function() enc.encrypt("x", false) end)
    end)
  end)
end)
