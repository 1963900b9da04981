-- A string job (Queue::push('App\Handlers\StringJob@fire', $data)): deletes itself.
return {
    fire = function(job, data)
        job:delete()
    end,
}
