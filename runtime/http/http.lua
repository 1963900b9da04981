-- luaworker.http: HTTP requests from handlers that wait without holding up the
-- worker (host.http_request: libcurl's multi interface on the worker's loop); the
-- other jobs in flight run meanwhile.
--   request{method=, url=, headers=, body=, timeout=, verify=, follow=, redirects=,
--           max_size=} -> {status=, headers= (lower-case names), body=}
--   get(url, opts), post(url, body, opts)
-- Redirects are followed as Laravel's client (Guzzle's RedirectMiddleware) follows
-- them (see http_client.h). max_size: the most bytes of body taken (0: none); not
-- given, no limit. A header name or value with a byte that would end or cut its
-- line (CR, LF, NUL), or a url with a NUL, is refused.
-- A network error, a timeout or a response over max_size raises an
-- Illuminate\Http\Client\ConnectionException (as Laravel's Http client) whose
-- message names the URL without its credentials, query or fragment. Any status is
-- a response (4xx and 5xx too), as with Laravel's client.
local host = require "luaworker.host"
local values = require "luaworker.base.values"
local settings = require "luaworker.base.settings"

local M = {}

local CONNECTION_EXCEPTION = "Illuminate\\Http\\Client\\ConnectionException"

-- The default seconds a request may take (Laravel's client: 30).
M.TIMEOUT = 30

-- url for messages: scheme, host, port and path, without user information, query
-- or fragment (where tokens and passwords go).
function M.redact(url)
    local scheme, rest = tostring(url):match("^(%a[%w+.-]*://)(.*)$")
    if not scheme then return (tostring(url):gsub("[?#].*$", "")) end
    local authority, path = rest:match("^([^/?#]*)(.*)$")
    authority = authority:gsub("^.*@", "")
    return scheme .. authority .. path:gsub("[?#].*$", "")
end

-- s for a message: its control bytes as Lua escapes ("\0").
local function shown(s)
    return (tostring(s):gsub("%c", function(c) return "\\" .. c:byte() end))
end

local function fail(message, url)
    error(values.exception(CONNECTION_EXCEPTION,
        message .. " for " .. M.redact(url)), 3)
end

-- Header lines from headers: a table of name = value (a value may be a list of
-- values: one line each).
local function header_lines(headers)
    local lines = {}
    for name, value in pairs(headers or {}) do
        if type(name) == "string" and name:find("%z") then
            error("luaworker.http: header name " .. shown(name) .. " has a NUL byte", 4)
        end
        if type(name) ~= "string" or name:find("[%c:]") then
            error("luaworker.http: header name " .. shown(name) .. " is not a header name", 4)
        end
        local values = type(value) == "table" and value or { value }
        for _, v in ipairs(values) do
            v = tostring(v)
            if v:find("[\r\n]") then
                error("luaworker.http: the value of header " .. name .. " has a line break", 4)
            end
            if v:find("%z") then
                error("luaworker.http: the value of header " .. name .. " has a NUL byte", 4)
            end
            lines[#lines + 1] = name .. ": " .. v
        end
    end
    return lines
end

-- The response's header block as name (lower case) -> value; a name given more
-- than once gets its values joined with ", ".
local function parse_headers(block)
    local headers = {}
    for line in block:gmatch("[^\r\n]+") do
        local name, value = line:match("^([^:%s]+):%s*(.-)%s*$")
        if name then
            name = name:lower()
            headers[name] = headers[name] and headers[name] .. ", " .. value or value
        end
    end
    return headers
end

local function check(opts)
    if type(opts) ~= "table" then
        error("luaworker.http.request(options): expected a table", 3)
    end
    if type(opts.url) ~= "string" or not opts.url:match("^[hH][tT][tT][pP][sS]?://") then
        error("luaworker.http.request: url must be an http:// or https:// URL, got "
            .. (type(opts.url) == "string" and shown(M.redact(opts.url)) or type(opts.url)), 3)
    end
    if opts.url:find("%z") then
        error("luaworker.http.request: url must have no NUL byte, got "
            .. shown(M.redact(opts.url)), 3)
    end
    local method = opts.method or "GET"
    if type(method) ~= "string" or not method:match("^%u+$") then
        error("luaworker.http.request: method must be an upper-case name such as GET, got "
            .. tostring(method), 3)
    end
    if opts.body ~= nil and type(opts.body) ~= "string" then
        error("luaworker.http.request: body must be a string, got " .. type(opts.body), 3)
    end
    -- bounds the C side can hold (curl takes whole milliseconds and a long)
    for name, most in pairs({ timeout = 86400, max_size = 2 ^ 53, redirects = 1000 }) do
        local v = opts[name]
        if v ~= nil and (type(v) ~= "number" or not (v >= 0 and v <= most)) then
            error(string.format("luaworker.http.request: %s must be a number from 0 to %.0f, got %s",
                name, most, tostring(v)), 3)
        end
    end
    return method
end

-- The most bytes of body a request without max_size takes: --memory-limit's, so
-- that a body too big for the Lua heap (a stream without end, a gzip bomb) is not
-- read whole into the worker's memory first; nil when there is no limit.
local function memory_cap()
    local mb = settings.options and tonumber(settings.options.memory_limit)
    if not mb or mb <= 0 then return nil end
    return mb * 1048576, mb
end

local faked  -- the responder of fake(), or nil

-- Requests go to responder({method=, url=, headers=, body=, timeout=}), which
-- returns the response ({status=, headers=, body=}) or raises, instead of the
-- network; nil sends them again.
function M.fake(responder)
    faked = responder
end

function M.request(opts)
    local method = check(opts)
    if faked then
        header_lines(opts.headers)
        return faked({ method = method, url = opts.url, headers = opts.headers or {},
            body = opts.body, timeout = opts.timeout or M.TIMEOUT })
    end
    local redirects = opts.redirects
    if redirects == nil then redirects = opts.follow and 5 or 0 end
    local max_size, limit_mb = opts.max_size, nil
    if max_size == nil then max_size, limit_mb = memory_cap() end
    local ok, status, block, body = host.http_request({
        method = method,
        url = opts.url,
        headers = header_lines(opts.headers),
        body = opts.body,
        timeout = opts.timeout or M.TIMEOUT,
        verify = opts.verify ~= false,
        redirects = redirects,
        max_size = max_size,
    })
    if not ok then
        -- false, message, kind (vm_push_error's shape): "size" is over max_size
        local kind = block
        if limit_mb and kind == "size" then
            status = string.format("a response body of more than %.1f MB does not fit under "
                .. "--memory-limit=%d (MB; it was not read further)", max_size / 1048576, limit_mb)
        end
        fail(status, opts.url)
    end
    return { status = status, headers = parse_headers(block), body = body }
end

local function with(opts, fields)
    local t = {}
    for k, v in pairs(opts or {}) do t[k] = v end
    for k, v in pairs(fields) do t[k] = v end
    return t
end

function M.get(url, opts)
    return M.request(with(opts, { method = "GET", url = url }))
end

function M.post(url, body, opts)
    return M.request(with(opts, { method = "POST", url = url, body = body }))
end

return M
