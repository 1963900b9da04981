-- luaworker.worker.console_lines: the console lines of Laravel 9.21+'s queue:work (its
-- WorkCommand::writeOutput without --verbose), byte for byte, for the Laravel
-- version luaworker speaks:
--   9.41+      "  <time> <job> ........ RUNNING" when a job starts, then
--              "  <time> <job> .... <run time> DONE" (or FAIL: released after an
--              exception, or failed), the time being the present one each time;
--   9.21-9.40  the second line only, with the time the job started (Laravel writes
--              its start when the job starts and the rest when it ends; here the
--              line is written whole when it ends, so jobs in flight together
--              cannot tear each other's lines);
--   10.13+     a run time over a second for humans (CarbonInterval's short
--              forHumans: "1s", "1m 1s"), before that always milliseconds;
--   12.20+     trailing spaces of the job's name trimmed (WorkCommand's rtrim);
-- the dots fill the terminal's width (luaworker.terminal) less two columns, none
-- when it is too narrow; colours as Symfony writes them when stdout takes them.
-- Also the 13.26 line of a paused or resumed queue and the start-up notice
-- ("INFO  Processing jobs from the [default] queue.").
local settings = require "luaworker.base.settings"
local terminal = require "luaworker.worker.terminal"

local M = {}

-- Symfony's escape sequences (set, unset) for the styles WorkCommand names.
local STYLES = {
    gray = { "\27[90m", "\27[39m" },                   -- <fg=gray>
    blue = { "\27[34m", "\27[39m" },                   -- <fg=blue>
    yellow_bold = { "\27[33;1m", "\27[39;22m" },       -- <fg=yellow;options=bold>
    green_bold = { "\27[32;1m", "\27[39;22m" },        -- <fg=green;options=bold>
    red_bold = { "\27[31;1m", "\27[39;22m" },          -- <fg=red;options=bold>
    bold = { "\27[1m", "\27[22m" },                    -- <options=bold>
    info = { "\27[37;44m", "\27[39;49m" },             -- Termwind's bg-blue text-white
}

local function styled(style, text)
    if not terminal.decorated() then return text end
    local s = STYLES[style]
    return s[1] .. text .. s[2]
end

-- WorkCommand's word for the status a job ended with, and its colour.
local ENDED = {
    success = { "green_bold", "DONE" },
    released_after_exception = { "yellow_bold", "FAIL" },
    failed = { "red_bold", "FAIL" },
}

-- "two_column" (9.41+: a RUNNING line, then the outcome's), "one_line" (9.21 to
-- 9.40: the outcome's line only), or nil (8.x to 9.20: Laravel 8.83's lines).
function M.format()
    if settings.laravel_at_least(9, 41) then return "two_column" end
    if settings.laravel_at_least(9, 21) then return "one_line" end
    return nil
end

-- PHP's mb_strlen of UTF-8 text: its characters (bytes that do not continue one).
local function mb_strlen(s)
    local _, continuations = s:gsub("[\128-\191]", "")
    return #s - continuations
end

-- PHP's round($value, 2) (8.0-8.3, PHP_ROUND_HALF_UP) of a value >= 0: rounded to
-- 15 significant digits first, so 1.005 is 1.01, as PHP has it.
local function php_round2(value)
    if value == 0 or value ~= value or value == math.huge then return value end
    local precision = 14 - math.floor(math.log10(value))
    local t
    if precision > 2 and precision - 15 < 2 then
        t = math.floor(value * 10 ^ precision + 0.5) / 10 ^ (precision - 2)
    else
        t = value * 100
    end
    return math.floor(t + 0.5) / 100
end

-- PHP's number_format($value, 2) of a value >= 0: "1,234.57".
local function number_format2(value)
    local text = string.format("%.2f", php_round2(value))
    local int, frac = text:match("^(%d+)(%.%d+)$")
    int = int:reverse():gsub("(%d%d%d)", "%1,"):reverse():gsub("^,", "")
    return int .. frac
end

-- CarbonInterval's units as cascade() carries them, largest first: seconds in one,
-- and the short English names (singular, plural) forHumans(short: true) gives.
local UNITS = {
    { 12 * 4 * 7 * 86400, "yr", "yrs" },
    { 4 * 7 * 86400, "mo", "mos" },
    { 7 * 86400, "w", "w" },
    { 86400, "d", "d" },
    { 3600, "h", "h" },
    { 60, "m", "m" },
    { 1, "s", "s" },
}

-- WorkCommand's run time of a job that took seconds: number_format(ms, 2)."ms" up
-- to 1000 ms (and always before 10.13); above, from 10.13,
-- CarbonInterval::milliseconds(ms)->cascade()->forHumans(short: true) (whole
-- units down to seconds, the rest dropped: 1.9 s is "1s", 61.5 s "1m 1s").
function M.run_time(seconds)
    local ms = math.max(seconds, 0) * 1000
    if ms <= 1000 or not settings.laravel_at_least(10, 13) then
        return number_format2(ms) .. "ms"
    end
    local left = math.floor(math.floor(ms * 1000) / 1e6)
    local parts = {}
    for _, u in ipairs(UNITS) do
        local n = math.floor(left / u[1])
        if n > 0 then
            parts[#parts + 1] = n .. (n == 1 and u[2] or u[3])
            left = left - n * u[1]
        end
    end
    return table.concat(parts, " ")
end

local function dots(n)
    return string.rep(styled("gray", "."), math.max(n, 0))
end

-- The line WorkCommand writes for a job (name: as printed) with status
-- "starting", "success", "released_after_exception" or "failed"; now: the
-- present time ("Y-m-d H:i:s"), started: the time the job started (nil when this
-- process did not see it start), seconds: how long it ran. nil when this format
-- writes no line for the status.
function M.job_line(status, name, now, started, seconds)
    local format = M.format()
    local width = terminal.width()
    local shown = settings.laravel_at_least(12, 20) and name:gsub(" +$", "") or name
    if status == "starting" then
        if format ~= "two_column" then return nil end
        return table.concat({ "  ", styled("gray", now), " ", shown, " ",
            dots(width - mb_strlen(name) - 33), " ", styled("yellow_bold", "RUNNING"), "\n" })
    end
    local ended = ENDED[status]
    if not ended then return nil end
    local time = format == "one_line" and started or now
    local run_time = M.run_time(seconds)
    return table.concat({ "  ", styled("gray", time), " ", shown, " ",
        dots(width - mb_strlen(name) - #run_time - 31), " ", styled("gray", run_time), " ",
        styled(ended[1], ended[2]), "\n" })
end

-- WorkCommand::writeQueueStatus (13.26+): queue q (as printed) was found paused
-- (status "paused") or no longer paused ("resumed").
function M.queue_line(q, status, now)
    return table.concat({ "  ", styled("gray", now), " Queue ", styled("blue", q), " ",
        status == "paused" and styled("yellow_bold", "PAUSED") or styled("green_bold", "RESUMED"),
        "\n" })
end

-- The notice queue:work writes when it starts (components->info), for the
-- comma-separated queues (as printed); nil where it writes none: before 9.21, and
-- from 9.41 unless `stty` answers (the standard input is a terminal). The
-- terminal's width and colours are found now, as Symfony finds them when the
-- command starts, not while a job runs.
function M.starting(queues)
    local format = M.format()
    if not format then return nil end
    terminal.width()
    terminal.decorated()
    if format == "two_column" and not terminal.has_stty() then return nil end
    local _, commas = queues:gsub(",", "")
    return table.concat({ "\n  ", styled("info", " INFO "), " Processing jobs from the ",
        styled("bold", "[" .. queues .. "]"), commas == 0 and " queue." or " queues.", "  \n\n" })
end

return M
