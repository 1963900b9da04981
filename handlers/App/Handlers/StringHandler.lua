-- Handler for the string job "App\Handlers\StringHandler@handle": Laravel calls
-- handle($job, $data); as in Laravel, a string job deletes itself when done.
return {
    handle = function(job, data)
        print("  string job data: " .. require("cjson").encode(data))
        job:delete()
    end,
}
