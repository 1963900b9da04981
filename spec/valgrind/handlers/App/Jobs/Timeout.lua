-- Runs past its payload timeout (1 s): the supervisor SIGKILLs the worker and the
-- replacement fails the job (its last attempt), handed over on the socket pair.
return {
    handle = function()
        local x = 0
        while true do x = x + 1 end
    end,
}
