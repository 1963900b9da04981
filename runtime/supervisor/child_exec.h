/* child_exec: this binary started again as a child of the supervisor (a worker, the
 * check of the handlers before a reload). The handled signals (signals.h) stay
 * blocked from before the fork until the child has its own handlers: one sent to
 * the child before its exec would run the supervisor's handler there and be lost.
 * The child gets death_signal when the supervisor dies, and exits orphan_status at
 * once when the supervisor died before it could ask for that. fexecve, not
 * execv("/proc/self/exe"): the same binary even when the file was replaced since,
 * and the one valgrind --trace-children follows. Uses signals.h. */
#ifndef LUAWORKER_CHILD_EXEC_H
#define LUAWORKER_CHILD_EXEC_H

#include <sys/types.h>

/* Called in the child before its exec (to set its environment). */
typedef void child_exec_prepare_fn(void *data);

/* Starts exe_fd's binary with argv as a child; prepare(data) runs in the child
 * first; what names the child in the message of a failed exec ("a worker").
 * Returns its pid, or -1 with errno set when it could not fork. */
pid_t child_exec(int exe_fd, char **argv, int death_signal, int orphan_status,
                 child_exec_prepare_fn *prepare, void *data, const char *what);

#endif
