/* signals: the signals every luaworker process handles, as queue:work does: TERM,
 * INT and QUIT stop after the current job, USR2 pauses and CONT resumes taking jobs,
 * HUP reloads (the worker ends after its current job and a fresh one starts). The
 * supervisor forwards them to its workers. Uses nothing else. */
#ifndef LUAWORKER_SIGNALS_H
#define LUAWORKER_SIGNALS_H

#include <signal.h>

#define SIGNALS_COUNT 6

static const int signals_handled[SIGNALS_COUNT] = {SIGTERM, SIGINT, SIGQUIT, SIGUSR2, SIGCONT,
                                                   SIGHUP};

#endif
