-- luaworker.db.listener: PostgreSQL's LISTEN on a connection of its own (never one
-- of luaworker.db's pool, whose connections go from job to job): wait(seconds)
-- gives the payloads of the NOTIFYs of a channel as they come. A notification sent
-- while no connection listens (before the first wait, or while the connection was
-- being made again after it failed) is not seen: the first wait on each new
-- connection returns at once, so that the caller looks for what it may have missed.
local host = require "luaworker.host"
local drivers = require "luaworker.db.drivers"

local M = {}

local Listener = {}
Listener.__index = Listener

-- A listener of channel (an identifier: letters, digits, _) on db (a luaworker.db
-- connection of the pgsql driver). Raises for another driver or channel.
function M.new(db, channel)
    if db.driver_name ~= "pgsql" then
        error("LISTEN is PostgreSQL's: the connection " .. db.name .. " is " .. db.driver_name, 2)
    end
    if type(channel) ~= "string" or not channel:match("^[%a_][%w_]*$") or #channel > 63 then
        error("a channel name: expected an identifier of at most 63 letters, digits or _, got "
            .. tostring(channel), 2)
    end
    return setmetatable({ db = db, channel = channel, conn = nil }, Listener)
end

local function message_of(err)
    if drivers.is_error(err) then return err.text end
    return tostring(type(err) == "table" and err.message or err)
end

-- The payloads that came, oldest first: once one came within seconds; an empty list
-- when seconds passed, a signal (stop, CONT, HUP) ended the wait, or the
-- connection is new (see above). nil and a message when the connection could not
-- be made or failed (the next wait makes a new one).
function Listener:wait(seconds)
    local driver = self.db.driver
    if not self.conn then
        local ok, conn = pcall(driver.connect, self.db)
        if not ok then return nil, message_of(conn) end
        local listened, err = pcall(driver.query, conn, 'listen "' .. self.channel .. '"', {}, 0)
        if not listened then
            driver.close(conn)
            return nil, message_of(err)
        end
        self.conn = conn
        return {}
    end
    local got, message = host.pg_notified(self.conn, seconds)
    if not got then
        self.conn = nil
        return nil, message
    end
    return got
end

-- Ends the listener's connection (the next wait makes a new one).
function Listener:close()
    if self.conn then self.db.driver.close(self.conn) end
    self.conn = nil
end

return M
