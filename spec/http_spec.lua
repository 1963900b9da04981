-- luaworker.http against real servers: a local HTTP server (spec/fixtures/http/
-- server.lua, every connection at once), and two HTTPS servers (openssl s_server):
-- one with a certificate of a test CA the client is told to trust, one with a
-- self-signed certificate it must refuse.
local H = require "spec.helpers"
local cjson = H.json

local port, tls_port, untrusted_port, dir
local pids = {}

-- Starts cmd in the background in directory cwd; returns its pid.
local function background(cwd, cmd)
    local f = io.popen(string.format("cd %s && ( %s >/dev/null 2>&1 & echo $! )", H.quote(cwd), cmd))
    local pid = tonumber(f:read("*l"))
    f:close()
    pids[#pids + 1] = pid
    return pid
end

local free_port = H.free_port

local function up(p)
    local conn = require("socket").connect("127.0.0.1", p)
    if conn then conn:close() end
    return conn ~= nil
end

local function openssl(args)
    assert(os.execute(string.format("cd %s && openssl %s >/dev/null 2>&1", H.quote(dir), args)))
end

local function start_servers()
    dir = H.tmpdir()
    port = free_port()
    background(H.root, string.format("exec lua5.2 spec/fixtures/http/server.lua %d", port))
    -- a test CA, a certificate it signs for 127.0.0.1, and a self-signed one
    openssl("req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 -subj /CN=spec-ca")
    openssl("req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1")
    H.write_file(dir .. "/ext.cnf", "subjectAltName=IP:127.0.0.1\n")
    openssl("x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem "
        .. "-days 2 -extfile ext.cnf")
    openssl("req -x509 -newkey rsa:2048 -nodes -keyout self.key -out self.pem -days 2 "
        .. "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1")
    H.write_file(dir .. "/hello.txt", "hello over tls")
    tls_port, untrusted_port = free_port(), free_port()
    background(dir, string.format("exec openssl s_server -quiet -accept %d -cert server.pem "
        .. "-key server.key -WWW", tls_port))
    background(dir, string.format("exec openssl s_server -quiet -accept %d -cert self.pem "
        .. "-key self.key -WWW", untrusted_port))
    for _, p in ipairs({ port, tls_port, untrusted_port }) do
        H.wait_until(function() return up(p) end, 10, "a server on port " .. p)
    end
end

-- Runs a Lua script inside luaworker (luaworker lua) with the test CA trusted;
-- PORT, TLS_PORT and UNTRUSTED_PORT in it are replaced. Returns what it printed.
local function run_lua(source)
    local file = H.tmpdir() .. "/script.lua"
    source = source:gsub("UNTRUSTED_PORT", tostring(untrusted_port)):gsub("TLS_PORT", tostring(tls_port))
        :gsub("PORT", tostring(port))
    H.write_file(file, source)
    local r = H.run({ "lua", file }, { env = { CURL_CA_BUNDLE = dir .. "/ca.pem" } })
    assert.are.equal(0, r.status, r.stdout .. r.stderr)
    return r.stdout
end

local function stats()
    local out = run_lua([[print(require("luaworker").http.get("http://127.0.0.1:PORT/stats").body)]])
    return cjson.decode(out)
end

describe("luaworker.http", function()
    setup(start_servers)
    teardown(function()
        for _, pid in ipairs(pids) do os.execute("kill " .. pid .. " 2>/dev/null") end
    end)

    it("gets a response: status, headers by lower-case name (repeated ones joined), body", function()
        local out = run_lua([[
local r = require("luaworker").http.get("http://127.0.0.1:PORT/headers")
print(r.status, r.headers["x-multi"], r.headers["content-type"], r.body)
]])
        assert.are.equal("200\tone, two\ttext/plain\tok\n", out)
    end)

    it("sends the method, headers and body given", function()
        local out = run_lua([[
local http = require("luaworker").http
local r = http.post("http://127.0.0.1:PORT/echo?x=1", '{"a":1}',
    { headers = { ["Content-Type"] = "application/json", ["X-Token"] = "t" } })
print(r.body)
r = http.request({ method = "PUT", url = "http://127.0.0.1:PORT/echo", body = "put body" })
print(r.body)
r = http.request({ method = "DELETE", url = "http://127.0.0.1:PORT/echo" })
print(r.body)
]])
        local lines = {}
        for line in out:gmatch("[^\n]+") do lines[#lines + 1] = cjson.decode(line) end
        assert.are.same({ "POST", "x=1", '{"a":1}', "application/json", "t" }, { lines[1].method,
            lines[1].query, lines[1].body, lines[1].headers["content-type"], lines[1].headers["x-token"] })
        assert.are.same({ "PUT", "put body" }, { lines[2].method, lines[2].body })
        assert.are.same({ "DELETE", "" }, { lines[3].method, lines[3].body })
    end)

    it("returns 4xx and 5xx as responses, and follows redirects only when asked", function()
        local out = run_lua([[
local http = require("luaworker").http
print(http.get("http://127.0.0.1:PORT/status?code=503").status)
print(http.get("http://127.0.0.1:PORT/nowhere").status)
local r = http.get("http://127.0.0.1:PORT/redirect?to=/echo")
print(r.status, r.headers.location)
r = http.get("http://127.0.0.1:PORT/redirect?to=/echo", { follow = true })
print(r.status, require("cjson").decode(r.body).path)
]])
        assert.are.equal("503\n404\n302\t/echo\n200\t/echo\n", out)
    end)

    -- The script's redirect(code, to): the path of a /redirect answering code with
    -- Location: to; and print_hops(r): r's status, then each request the server saw
    -- on the way, as JSON (the server's log of them is emptied first).
    local REDIRECT = [[
local http = require("luaworker").http
http.get("http://127.0.0.1:PORT/hops")
local function redirect(code, to)
    return "/redirect?code=" .. code .. "&to=" .. to:gsub("[?&=%%]", function(c)
        return string.format("%%%02X", c:byte()) end)
end
local function print_hops(r)
    print(r.status .. "\t" .. http.get("http://127.0.0.1:PORT/hops").body)
end
]]

    -- Each line of out: status, then the hops (method, path, body and the headers the
    -- server logs).
    local function hops_of(out)
        local lines = {}
        for status, hops in out:gmatch("(%d+)\t([^\n]*)\n") do
            lines[#lines + 1] = { status = tonumber(status), hops = cjson.decode(hops) }
        end
        return lines
    end

    -- A hop as the server logs it: body (nil: none) and its Content-Type and
    -- Content-Length, X-Token: t on every hop; typed: a Content-Type without a body
    -- (kept from a request made a GET, as Guzzle keeps it).
    local function hop(method, path, body, typed)
        return { method = method, path = path, body = body or "", ["x-token"] = "t",
            ["content-type"] = (body or typed) and "text/plain", ["content-length"] = body and tostring(#body) }
    end

    it("follows a redirect as Laravel's client does: after a 303, or a 300 to 302, a method other "
        .. "than GET, HEAD and OPTIONS goes on as GET, the body and its length dropped; "
        .. "307 and 308 keep the method and the body", function()
        local cases = {
            { "DELETE", 303, nil, { hop("DELETE", "/redirect"), hop("GET", "/echo") } },
            { "PUT", 302, "put", { hop("PUT", "/redirect", "put"), hop("GET", "/echo", nil, true) } },
            { "POST", 301, "post", { hop("POST", "/redirect", "post"), hop("GET", "/echo", nil, true) } },
            { "POST", 303, "post", { hop("POST", "/redirect", "post"), hop("GET", "/echo", nil, true) } },
            { "PATCH", 300, "patch", { hop("PATCH", "/redirect", "patch"), hop("GET", "/echo", nil, true) } },
            { "HEAD", 303, nil, { hop("HEAD", "/redirect"), hop("HEAD", "/echo") } },
            { "OPTIONS", 302, "opt", { hop("OPTIONS", "/redirect", "opt"), hop("OPTIONS", "/echo", nil, true) } },
            { "GET", 301, nil, { hop("GET", "/redirect"), hop("GET", "/echo") } },
            { "PUT", 307, "put", { hop("PUT", "/redirect", "put"), hop("PUT", "/echo", "put") } },
            { "POST", 308, "post", { hop("POST", "/redirect", "post"), hop("POST", "/echo", "post") } },
            { "DELETE", 307, nil, { hop("DELETE", "/redirect"), hop("DELETE", "/echo") } },
            -- each hop by its own status: kept by the 307, made a GET by the 303
            { "PUT", "307,303", "put", { hop("PUT", "/redirect", "put"), hop("PUT", "/redirect", "put"),
                hop("GET", "/echo", nil, true) } },
        }
        local script = { REDIRECT }
        for _, case in ipairs(cases) do
            local to = [["/echo"]]
            local codes = {}
            for code in tostring(case[2]):gmatch("%d+") do codes[#codes + 1] = code end
            for i = #codes, 1, -1 do to = string.format("redirect(%s, %s)", codes[i], to) end
            script[#script + 1] = string.format([[
print_hops(http.request({ method = %q, url = "http://127.0.0.1:PORT" .. %s, body = %s,
    headers = { ["Content-Type"] = %s, ["X-Token"] = "t" }, follow = true }))
]], case[1], to, case[3] and string.format("%q", case[3]) or "nil",
                case[3] and [["text/plain"]] or "nil")
        end
        local lines = hops_of(run_lua(table.concat(script)))
        assert.are.equal(#cases, #lines)
        for i, case in ipairs(cases) do
            assert.are.same({ case[1] .. " " .. case[2], 200, case[4] },
                { case[1] .. " " .. case[2], lines[i].status, lines[i].hops })
        end
    end)

    it("sends Authorization and Cookie to the origin given only: after a redirect to another "
        .. "host, port or scheme they are gone, also from the later hops", function()
        local lines = hops_of(run_lua(REDIRECT .. [[
print_hops(http.get("http://127.0.0.1:PORT" .. redirect(302, redirect(302, "http://localhost:PORT"
    .. redirect(302, "http://127.0.0.1:PORT/echo"))), { follow = true,
    headers = { Authorization = "Bearer secret", Cookie = "session=s", ["X-Token"] = "t" } }))
print_hops(http.get("http://user:pass@127.0.0.1:PORT" .. redirect(302, redirect(302,
    "http://localhost:PORT/echo")), { follow = true, headers = { ["X-Token"] = "t" } }))
]]))
        local function with(h, fields)
            for k, v in pairs(fields) do h[k] = v end
            return h
        end
        local creds = { authorization = "Bearer secret", cookie = "session=s" }
        assert.are.same({ with(hop("GET", "/redirect"), creds), with(hop("GET", "/redirect"), creds),
            hop("GET", "/redirect"), hop("GET", "/echo") }, lines[1].hops)
        local basic = { authorization = "Basic dXNlcjpwYXNz" }
        assert.are.same({ with(hop("GET", "/redirect"), basic), with(hop("GET", "/redirect"), basic),
            hop("GET", "/echo") }, lines[2].hops)
    end)

    it("refuses a redirect to a scheme other than http and https, and one past the limit", function()
        local out = run_lua(REDIRECT .. [[
for _, case in ipairs({
    { redirect(302, "file:///etc/passwd"), { follow = true } },
    { redirect(301, redirect(302, "/echo")), { redirects = 1 } },
    { redirect(307, redirect(308, "/echo")), { redirects = 2 } },
}) do
    local ok, r = pcall(http.get, "http://127.0.0.1:PORT" .. case[1], case[2])
    print(ok, ok and r.status or r.message)
end
]])
        assert.are.equal("false\tcURL error 1: Protocol \"file\" not supported or disabled in libcurl for "
            .. "http://127.0.0.1:" .. port .. "/redirect\n"
            .. "false\tcURL error 47: Maximum (1) redirects followed for http://127.0.0.1:" .. port
            .. "/redirect\ntrue\t200\n", out)
    end)

    it("reuses a connection per host", function()
        local before = stats().connections
        run_lua([[
local http = require("luaworker").http
for i = 1, 10 do assert(http.get("http://127.0.0.1:PORT/echo").status == 200) end
]])
        -- the ten requests, and the look at the stats: two processes, two connections
        assert.are.equal(before + 2, stats().connections)
    end)

    it("raises a ConnectionException naming the URL without credentials, query or fragment", function()
        local out = run_lua([[
local http = require("luaworker").http
for _, url in ipairs({ "http://user:secret@127.0.0.1:PORT/delay?ms=3000&token=abc#frag",
        "http://127.0.0.1:1/closed?key=k" }) do
    local ok, err = pcall(http.get, url, { timeout = 0.3 })
    print(ok, err.class, err.message)
end
]])
        assert.matches("false\tIlluminate\\Http\\Client\\ConnectionException\tcURL error 28: [^\n]* for "
            .. "http://127%.0%.0%.1:" .. port .. "/delay\n", out)
        assert.matches("false\tIlluminate\\Http\\Client\\ConnectionException\tcURL error 7: [^\n]* for "
            .. "http://127%.0%.0%.1:1/closed\n", out)
        assert.is_nil(out:find("secret", 1, true))
        assert.is_nil(out:find("token", 1, true))
        assert.is_nil(out:find("key=", 1, true))
    end)

    it("refuses a response over max_size", function()
        local out = run_lua([[
local http = require("luaworker").http
print(#http.get("http://127.0.0.1:PORT/big?bytes=1000", { max_size = 1000 }).body)
local ok, err = pcall(http.get, "http://127.0.0.1:PORT/big?bytes=100000", { max_size = 1000 })
print(ok, err.message)
]])
        assert.are.equal("1000\nfalse\tthe response is larger than the limit of 1000 bytes for "
            .. "http://127.0.0.1:" .. port .. "/big\n", out)
    end)

    it("takes max_size = 0 as no byte of body, 1 as one byte, no max_size as no limit, and "
        .. "counts the body of the response returned only, not those of the redirects", function()
        local out = run_lua([[
local http = require("luaworker").http
for _, case in ipairs({
    { "/big?bytes=0", { max_size = 0 } },
    { "/big?bytes=1", { max_size = 0 } },
    { "/big?bytes=1", { max_size = 1 } },
    { "/big?bytes=2", { max_size = 1 } },
    { "/big?bytes=3000000", {} },
    { "/redirect?to=%2Fbig%3Fbytes%3D10&bytes=1000", { max_size = 10, follow = true } },
}) do
    local ok, r = pcall(http.get, "http://127.0.0.1:PORT" .. case[1], case[2])
    print(ok, ok and #r.body or r.message)
end
]])
        local big = "http://127.0.0.1:" .. port .. "/big"
        assert.are.equal("true\t0\nfalse\tthe response is larger than the limit of 0 bytes for " .. big
            .. "\ntrue\t1\nfalse\tthe response is larger than the limit of 1 byte for " .. big
            .. "\ntrue\t3000000\ntrue\t10\n", out)
    end)

    it("verifies https against the CA bundle named by CURL_CA_BUNDLE, refuses an untrusted "
        .. "certificate, and takes it with verify = false", function()
        local out = run_lua([[
local http = require("luaworker").http
print(http.get("https://127.0.0.1:TLS_PORT/hello.txt").body)
local ok, err = pcall(http.get, "https://127.0.0.1:UNTRUSTED_PORT/hello.txt")
print(ok, err.message)
print(http.get("https://127.0.0.1:UNTRUSTED_PORT/hello.txt", { verify = false }).body)
]])
        local lines = {}
        for line in out:gmatch("[^\n]+") do lines[#lines + 1] = line end
        assert.are.equal("hello over tls", lines[1])
        assert.matches("^false\tcURL error 60: ", lines[2])
        assert.are.equal("hello over tls", lines[3])
    end)

    it("rejects bad options with an error naming them", function()
        local out = run_lua([[
local http = require("luaworker").http
for _, opts in ipairs({
    { url = "ftp://127.0.0.1/x" },
    { url = "http://127.0.0.1:PORT/", method = "get" },
    { url = "http://127.0.0.1:PORT/", body = 5 },
    { url = "http://127.0.0.1:PORT/", timeout = -1 },
    { url = "http://127.0.0.1:PORT/", headers = { ["X-A"] = "a\r\nX-Injected: 1" } },
    { url = "http://127.0.0.1:PORT/", headers = { ["X-A"] = { "a", "b\0c" } } },
    { url = "http://127.0.0.1:PORT/", headers = { ["X\0A"] = "a" } },
    { url = "http://127.0.0.1:PORT/a\0b" },
    { url = "http://127.0.0.1:PORT/", timeout = 1e300 },
    { url = "http://127.0.0.1:PORT/", redirects = 1e300 },
}) do
    local ok, err = pcall(http.request, opts)
    print(ok, err)
end
]])
        local lines = {}
        for line in out:gmatch("[^\n]+") do lines[#lines + 1] = line end
        assert.matches("url must be an http:// or https:// URL, got ftp://127.0.0.1/x", lines[1], 1, true)
        assert.matches("method must be an upper-case name such as GET, got get", lines[2], 1, true)
        assert.matches("body must be a string, got number", lines[3], 1, true)
        assert.matches("timeout must be a number from 0 to 86400, got -1", lines[4], 1, true)
        assert.matches("the value of header X-A has a line break", lines[5], 1, true)
        assert.matches("the value of header X-A has a NUL byte", lines[6], 1, true)
        assert.matches("header name X\\0A has a NUL byte", lines[7], 1, true)
        assert.matches("url must have no NUL byte, got http://127.0.0.1:" .. port .. "/a\\0b", lines[8],
            1, true)
        assert.matches("timeout must be a number from 0 to 86400, got 1e+300", lines[9], 1, true)
        assert.matches("redirects must be a number from 0 to 1000, got 1e+300", lines[10], 1, true)
        assert.are.equal(10, #lines)
    end)

    describe("in a worker with jobs in flight", function()
        local HANDLER = [[
local luaworker = require "luaworker"
return { handle = function(job, command)
    if command.bytes then
        local ok, err = pcall(luaworker.http.get, "http://127.0.0.1:PORT/big?bytes=" .. command.bytes)
        luaworker.redis("RPUSH", "spec:big", tostring(ok), tostring(err))
        error(err)
    end
    local r = luaworker.http.get("http://127.0.0.1:PORT/delay?ms=" .. command.ms)
    luaworker.redis("RPUSH", "spec:done", r.body)
end }
]]
        local function http_job(ms, fields)
            return H.class_payload("App\\Jobs\\Fetch", fields, { { "ms", string.format("i:%d;", ms) } })
        end
        local workers = H.worker_set()
        after_each(workers.stop_all)
        before_each(function() H.flush() end)

        local function start(args)
            local handlers = H.handlers({ ["App/Jobs/Fetch.lua"] = (HANDLER:gsub("PORT", tostring(port))) })
            local full = { "work", "--handlers=" .. handlers, "--sleep=0.05" }
            for _, a in ipairs(args) do full[#full + 1] = a end
            return workers.spawn(full)
        end

        it("waits on 50 requests at once in one process", function()
            -- each answered after 4 s: on a loaded machine the 50 pops may take over a
            -- second, and the first requests must still be waiting when the last starts
            for _ = 1, 50 do H.push(http_job(4000)) end
            local w = start({ "--concurrency=50" })
            H.wait_until(function() return H.r("LLEN", "spec:done") == 50 end, 30, "the 50 jobs")
            -- the server had all 50 waiting at once
            assert.is_true(stats().most_delaying >= 50)
            assert.are.equal(1, #H.children(w.pid))
            w:kill("TERM")
            assert.are.equal(0, w:wait())
        end)

        it("fails only the job whose response does not fit under --memory-limit: the jobs "
            .. "beside it finish in the same process", function()
            for _ = 1, 3 do H.push(http_job(1500)) end
            H.push(H.class_payload("App\\Jobs\\Fetch", nil, { { "bytes", "i:100000000;" } }))
            -- --memory=0: under AddressSanitizer (its quarantine keeps the freed body) the
            -- process can pass --memory's 128 MB after the job and be recycled, as it
            -- should; what is checked here is that the error killed no process
            local w = start({ "--concurrency=4", "--memory-limit=64", "--memory=0" })
            H.wait_until(function() return H.r("LLEN", "spec:done") == 3 end, 30, "the 3 jobs")
            -- the handler caught the error: an exception naming the size and the limit
            local big = H.r("LRANGE", "spec:big", 0, -1)
            assert.are.equal("false", big[1])
            -- not read past the limit: the body would not fit in the Lua heap
            assert.matches("^Illuminate\\Http\\Client\\ConnectionException: a response body of more than "
                .. "64%.0 MB does not fit under %-%-memory%-limit=64 %(MB; it was not read further%) for "
                .. "http://127.0.0.1:%d+/big$", big[2])
            H.wait_until(function() return H.r("ZCARD", H.prefix .. "luaworker:failed_jobs") == 1 end, 10,
                "the job's failed record")
            local pids = H.children(w.pid)
            assert.are.equal(1, #pids)
            assert.is_nil(w:stderr():find("internal error", 1, true))
            assert.is_nil(w:stderr():find("worker 1 (pid", 1, true))
            w:kill("TERM")
            assert.are.equal(0, w:wait())
        end)

        it("cancels the request of a job stopped for its timeout, and goes on", function()
            H.push(http_job(30000, { timeout = 1, failOnTimeout = true }))
            H.push(http_job(10))
            local w = start({ "--concurrency=2" })
            H.wait_until(function() return H.r("LLEN", "spec:done") == 1 end, 10, "the quick job")
            local abandoned = stats().abandoned
            H.wait_until(function() return w:stderr():match("ran past its timeout of 1s; it was "
                .. "stopped where it waited; failed") end, 10, "the timeout")
            -- its connection was closed: the server saw it go while it waited
            H.wait_until(function() return stats().abandoned == abandoned + 1 end, 5,
                "the server to see the request go")
            assert.are.equal(1, #H.children(w.pid))
            w:kill("TERM")
            assert.are.equal(0, w:wait())
        end)
    end)
end)
