-- luaworker.queue.database_notifications: a new job wakes an idle worker of the
-- database queue on PostgreSQL (LISTEN/NOTIFY) instead of waiting for its next look
-- (--sleep). Nothing is added to the app's schema unless an operator asks for it
-- (luaworker notify install); then, for the jobs table T:
--   function luaworker_notify_T(): NOTIFY channel luaworker_T, the new row's queue
--     as the payload;
--   trigger luaworker_notify on T: AFTER INSERT, FOR EACH ROW, runs that function.
-- A notification is sent when the inserting transaction commits, so a worker woken
-- by it finds the row. Workers look every --sleep seconds all the same (delayed jobs
-- and expired reservations notify nobody); luaworker notify remove drops both.
local listener = require "luaworker.db.listener"

local M = {}

local TRIGGER = "luaworker_notify"

-- The names for the queue's table: its function (as SQL names it, and as said) and
-- its channel, the table's name with each character but a letter, a digit or _ as
-- _. Raises when they would be longer than PostgreSQL's identifiers (63 bytes).
local function names(queue)
    local base = queue.table:gsub("[^%w_]", "_")
    local fn, channel = "luaworker_notify_" .. base, "luaworker_" .. base
    if #fn > 63 then
        error("the jobs table " .. queue.table .. ": its name is too long for the notify function "
            .. fn .. " (PostgreSQL's names are at most 63 bytes)", 0)
    end
    return queue.db:wrap(fn), channel, fn
end

-- Raises unless the queue's connection is PostgreSQL's.
local function check_pgsql(queue)
    local d = queue.db
    if d.driver_name ~= "pgsql" then
        error("LISTEN/NOTIFY is PostgreSQL's: the database queue's connection " .. d.name
            .. " is " .. d.driver_name .. " (its workers look for jobs every --sleep seconds)", 0)
    end
end

-- Whether the trigger is on the queue's table (a database queue: database_queue.new).
function M.installed(queue)
    if queue.db.driver_name ~= "pgsql" then return false end
    local rows = queue.db:select("select 1 as found from pg_trigger where tgname = ? and tgrelid = ?::regclass",
        { TRIGGER, queue.quoted_table })
    return #rows > 0
end

-- Adds the function and the trigger (again is harmless: both are replaced). Returns
-- the lines that say what was added.
function M.install(queue)
    check_pgsql(queue)
    local fn_sql, channel, fn = names(queue)
    queue.db:transaction(function(d)
        d:statement("create or replace function " .. fn_sql .. "() returns trigger language plpgsql as "
            .. "$luaworker$ begin perform pg_notify('" .. channel .. "', new.queue); return null; end "
            .. "$luaworker$")
        d:statement("drop trigger if exists " .. TRIGGER .. " on " .. queue.quoted_table)
        -- EXECUTE PROCEDURE: the spelling every version since 9.5 reads
        d:statement("create trigger " .. TRIGGER .. " after insert on " .. queue.quoted_table
            .. " for each row execute procedure " .. fn_sql .. "()")
    end)
    return {
        "Added to the database of the connection " .. queue.db.name .. ":",
        "  function " .. fn .. "(): NOTIFY " .. channel .. ", the new job's queue as the payload",
        "  trigger " .. TRIGGER .. " on " .. queue.table .. ": after insert, for each row, runs " .. fn .. "()",
        "Workers started from now on start a new job as it is pushed; "
            .. "luaworker notify remove takes both away.",
    }
end

-- Drops the trigger and the function (again is harmless). Returns the lines that say
-- what was removed.
function M.remove(queue)
    check_pgsql(queue)
    local fn_sql, _, fn = names(queue)
    queue.db:transaction(function(d)
        d:statement("drop trigger if exists " .. TRIGGER .. " on " .. queue.quoted_table)
        d:statement("drop function if exists " .. fn_sql .. "()")
    end)
    return {
        "Removed from the database of the connection " .. queue.db.name .. ": trigger " .. TRIGGER
            .. " on " .. queue.table .. " and function " .. fn .. "()",
        "Workers look for new jobs every --sleep seconds.",
    }
end

-- A listener of the queue's channel (luaworker.db.listener), whose wait gives the
-- queues of the jobs pushed.
function M.listener(queue)
    local _, channel = names(queue)
    return listener.new(queue.db, channel)
end

return M
