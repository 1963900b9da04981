-- App\Jobs\NoOp: does nothing (the queue machinery alone).
return {
    handle = function() end,
}
