#include "loop/signal_arrival.h"

#include <signal.h>
#include <string.h>

#include <ev.h>

#include "loop/signals.h"

static volatile sig_atomic_t stop_arrived, paused_arrived, reload_arrived;

/* ev_feed_signal may be called from a signal handler (libev's own handler does). */
static void on_arrival(int signum)
{
    switch (signum) {
    case SIGUSR2:
        paused_arrived = 1;
        break;
    case SIGCONT:
        paused_arrived = 0;
        break;
    case SIGHUP:
        reload_arrived = 1;
        break;
    default:
        stop_arrived = signum;
    }
    ev_feed_signal(signum);
}

void signal_arrival_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_arrival;
    sigfillset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (int i = 0; i < SIGNALS_COUNT; i++)
        sigaction(signals_handled[i], &sa, NULL);
}

void signal_arrival_read(int *quit, int *paused, int *reload)
{
    *quit = stop_arrived;
    *paused = paused_arrived;
    *reload = reload_arrived;
}
