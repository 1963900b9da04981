-- luaworker.settings: the worker's options and configuration, filled once by
-- luaworker.worker when it starts and read by the worker's other modules.
return {
    options = {},             -- `luaworker work`'s options (runtime/config/cli.c), plus
                              -- queue_list (the queues, as given) and effective_backoff
    config = {},              -- the configuration (runtime/host/lua_host.c, push_config)
    queues = {},              -- the queue names, in --queue order
    connection_name = "redis",
    cache_prefix = "",        -- the full prefix of the cache store's keys
}
