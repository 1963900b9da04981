/* signals: the signals every luaworker process handles, as queue:work does: TERM,
 * INT and QUIT stop after the current job, USR2 pauses and CONT resumes taking jobs,
 * HUP reloads (the worker ends after the jobs in flight and a fresh one starts). The
 * supervisor forwards them to its workers. A worker starts with them blocked and
 * unblocks them once its handlers are in place, so that one sent meanwhile waits
 * for them instead of being lost or killing it, and blocks them again when it
 * removes its handlers on the way out. Uses nothing else. */
#ifndef LUAWORKER_LOOP_SIGNALS_H
#define LUAWORKER_LOOP_SIGNALS_H

#include <signal.h>

#define SIGNALS_COUNT 6

static const int signals_handled[SIGNALS_COUNT] = {SIGTERM, SIGINT, SIGQUIT, SIGUSR2, SIGCONT,
                                                   SIGHUP};

/* Fills set with the handled signals. */
static inline void signals_fill(sigset_t *set)
{
    sigemptyset(set);
    for (int i = 0; i < SIGNALS_COUNT; i++)
        sigaddset(set, signals_handled[i]);
}

#endif
