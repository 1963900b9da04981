-- Dispatches an encrypted Succeed job (ShouldBeEncrypted, with APP_KEY), so
-- encryption and the worker's decryption both run.
local luaworker = require "luaworker"

return {
    handle = function(job, command)
        luaworker.dispatch("App\\Jobs\\Succeed", { n = command.n, tags = { "encrypted" } },
            { encrypt = true })
    end,
}
