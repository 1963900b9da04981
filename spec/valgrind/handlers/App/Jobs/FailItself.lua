-- Fails itself without raising (job:fail), as $this->fail() does.
return {
    handle = function(job)
        job:fail("failed by the handler")
    end,
}
