#include "supervisor/child_exec.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "loop/signals.h"

extern char **environ;

pid_t child_exec(int exe_fd, char **argv, int death_signal, int orphan_status,
                 child_exec_prepare_fn *prepare, void *data, const char *what)
{
    fflush(stdout);
    fflush(stderr);
    sigset_t handled, before;
    signals_fill(&handled);
    sigprocmask(SIG_BLOCK, &handled, &before);
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, death_signal);
        if (getppid() != parent)
            _exit(orphan_status);
        if (prepare)
            prepare(data);
        sigprocmask(SIG_SETMASK, &handled, NULL);
        fexecve(exe_fd, argv, environ);
        fprintf(stderr, "luaworker: cannot start %s: %s\n", what, strerror(errno));
        _exit(70);
    }
    int fork_errno = errno;
    sigprocmask(SIG_SETMASK, &before, NULL);
    errno = fork_errno;
    return pid;
}
