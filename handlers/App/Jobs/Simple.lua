-- Handler for App\Jobs\Simple: one public property, n.
return {
    handle = function(job, command)
        print("  simple job n = " .. tostring(command.n))
    end,
}
