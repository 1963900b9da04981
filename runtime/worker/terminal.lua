-- luaworker.worker.terminal: the terminal as Laravel's console sees it (Symfony Console 7.2,
-- Laravel 12's), for the console lines that depend on it: its width (Terminal::
-- getWidth), whether `stty` answers (Terminal::hasSttyAvailable) and whether stdout
-- takes colours (StreamOutput::hasColorSupport). Each is found once, when first
-- asked, as Symfony finds it once per command. Symfony asks `stty` and `stty -a`
-- on the standard input and PHP's stream_isatty(STDOUT); luaworker asks the same of
-- the system (host.terminal: isatty, the terminal's window size) without a shell.
local host = require "luaworker.host"

local M = {}

-- The widest terminal there can be: struct winsize's ws_col is 16 bits. A wider
-- COLUMNS is taken as this (PHP would build the line, or run out of memory).
local WIDEST = 65535

-- PHP's trim() then (int) cast of a string: an optional sign, digits with an
-- optional fraction and exponent, read as far as they go ("100x" is 100, "1e2" is
-- 100, "0x10" is 0); an integer beyond the 64-bit range saturates, a float that
-- overflows to infinity is 0; here the result is bounded to +-WIDEST.
local function php_int(s)
    s = s:gsub("^[ \t\n\r%z\11]+", "")
    local sign, int, frac = s:match("^([+-]?)(%d*)(%.?%d*)")
    if int == "" and #frac < 2 then return 0 end
    local exp = s:sub(#sign + #int + #frac + 1):match("^[eE][+-]?%d+") or ""
    local n = tonumber("0" .. int .. (#frac > 1 and frac or "") .. exp)
    if n == math.huge then return 0 end
    n = math.min(math.floor(n), WIDEST)
    return sign == "-" and -n or n
end

local stty, width, decorated

-- Terminal::hasSttyAvailable: `stty` (on the standard input) prints its settings,
-- as it does when the standard input is a terminal.
function M.has_stty()
    if stty == nil then stty = (host.terminal()) end
    return stty
end

-- Terminal::getWidth as Application::run fixes it when the command starts: COLUMNS
-- when it is set (PHP's (int), so "" is 0 and a negative width is kept), else the
-- columns `stty -a` reports for the standard input, else (none, or 0) 80.
function M.width()
    if width then return width end
    local columns = os.getenv("COLUMNS")
    if columns then
        width = php_int(columns)
    else
        width = math.min(select(3, host.terminal()), WIDEST)
        if width == 0 then width = 80 end
    end
    return width
end

local function set(name)
    return os.getenv(name) ~= nil
end

local function non_empty(name)
    local v = os.getenv(name)
    return v ~= nil and v ~= ""
end

-- PHP's stream_isatty(STDOUT).
local function stdout_is_tty()
    return (select(2, host.terminal()))
end

-- The TERMs Symfony takes for colour terminals:
-- /^((screen|xterm|vt100|vt220|putty|rxvt|ansi|cygwin|linux).*)|(.*-256(color)?(-bce)?)$/
local COLOUR_TERM_PREFIXES = { "screen", "xterm", "vt100", "vt220", "putty", "rxvt", "ansi",
    "cygwin", "linux" }
local COLOUR_TERM_SUFFIXES = { "-256", "-256color", "-256-bce", "-256color-bce" }

local function colour_term(term)
    for _, p in ipairs(COLOUR_TERM_PREFIXES) do
        if term:sub(1, #p) == p then return true end
    end
    for _, s in ipairs(COLOUR_TERM_SUFFIXES) do
        if term:sub(-#s) == s then return true end
    end
    return false
end

-- StreamOutput::hasColorSupport for stdout: NO_COLOR (not empty) says no,
-- FORCE_COLOR (not empty) yes; then stdout must be a terminal (or MSYSTEM name
-- MinGW); then yes for TERM_PROGRAM=Hyper, COLORTERM or ANSICON set, ConEmuANSI=ON;
-- no for TERM=dumb; else yes for the TERMs Symfony takes for colour terminals.
function M.decorated()
    if decorated ~= nil then return decorated end
    local msystem = (os.getenv("MSYSTEM") or ""):upper()
    local term = os.getenv("TERM") or ""
    if non_empty("NO_COLOR") then
        decorated = false
    elseif non_empty("FORCE_COLOR") then
        decorated = true
    elseif msystem ~= "MINGW32" and msystem ~= "MINGW64" and not stdout_is_tty() then
        decorated = false
    elseif os.getenv("TERM_PROGRAM") == "Hyper" or set("COLORTERM") or set("ANSICON")
        or os.getenv("ConEmuANSI") == "ON" then
        decorated = true
    else
        decorated = term ~= "dumb" and colour_term(term)
    end
    return decorated
end

return M
