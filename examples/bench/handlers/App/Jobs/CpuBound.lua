-- App\Jobs\CpuBound: the same computation as the PHP class, the sum of
-- i*i mod 7 for i = 1..200000 (= 685714), kept in an upvalue so that the
-- loop cannot be optimised away.
local N = 200000
local last = 0

return {
    handle = function()
        local s = 0
        for i = 1, N do
            s = s + (i * i) % 7
        end
        last = s
    end,
    last = function() return last end,
}
