#include "loop/signal_arrival.h"

#include <signal.h>
#include <string.h>

#include <ev.h>

static volatile sig_atomic_t stop_arrived, reload_arrived;

/* ev_feed_signal may be called from a signal handler (libev's own handler does). */
static void on_arrival(int signum)
{
    if (signum == SIGHUP)
        reload_arrived = 1;
    else
        stop_arrived = signum;
    ev_feed_signal(signum);
}

void signal_arrival_install(void)
{
    static const int noted[] = {SIGTERM, SIGINT, SIGQUIT, SIGHUP};
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_arrival;
    sigfillset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    for (size_t i = 0; i < sizeof noted / sizeof noted[0]; i++)
        sigaction(noted[i], &sa, NULL);
}

void signal_arrival_read(int *quit, int *reload)
{
    *quit = stop_arrived;
    *reload = reload_arrived;
}
