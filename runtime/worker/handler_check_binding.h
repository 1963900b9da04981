/* handler_check_binding: host.uncompilable_handlers(dir), the worker's start-up check
 * of the handler files, by the compile check the supervisor's watch makes before a
 * reload (handler_watch_check): one walk of the directory, one rule for which files
 * are handlers. Uses vm and handler_watch. */
#ifndef LUAWORKER_WORKER_HANDLER_CHECK_BINDING_H
#define LUAWORKER_WORKER_HANDLER_CHECK_BINDING_H

struct vm;

/* Adds the function to h's "luaworker.host". */
void handler_check_binding_register(struct vm *h);

#endif
