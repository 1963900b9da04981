/* waiter: the waits of a vm's tasks (declared in loop/vm.h): tickets taken and
 * given back for reuse, the list of waits that can be cancelled, and a deadline
 * for a wait that is not a timer. Uses libev. */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "loop/vm.h"

struct vm_waiter *vm_waiter_take(struct vm *h)
{
    struct vm_waiter *w = LIST_FIRST(&h->spare);
    double ticket;
    if (w) {
        LIST_REMOVE(w, link);
        ticket = w->ticket;
    } else if ((w = malloc(sizeof *w))) {
        ticket = VM_FIRST_WAITER_TICKET + h->waiters++;
    } else {
        return NULL;
    }
    memset(w, 0, sizeof *w);
    w->h = h;
    w->ticket = ticket;
    return w;
}

void vm_waiter_link(struct vm_waiter *w)
{
    LIST_INSERT_HEAD(&w->h->waits, w, link);
}

void vm_waiter_unlink(struct vm_waiter *w)
{
    if (w->link.le_prev)  /* in h->waits */
        LIST_REMOVE(w, link);
    w->link.le_prev = NULL;
    w->link.le_next = NULL;
}

struct vm_waiter *vm_waiter_start(lua_State *L, struct vm *h, void *data,
                                  void (*cancel)(struct vm_waiter *w))
{
    struct vm_waiter *w = vm_waiter_take(h);
    if (!w)
        luaL_error(L, "out of memory");
    w->data = data;
    w->cancel = cancel;
    vm_waiter_link(w);
    return w;
}

static void on_deadline(struct ev_loop *loop, ev_timer *t, int revents)
{
    (void)loop;
    (void)revents;
    struct vm_waiter *w = t->data;
    void (*expire)(struct vm_waiter *) = w->expire;
    w->expire = NULL;
    expire(w);
}

void vm_waiter_deadline(struct vm_waiter *w, double seconds, void (*expire)(struct vm_waiter *w))
{
    w->expire = expire;
    ev_timer_init(&w->timer, on_deadline, seconds, 0.);
    w->timer.data = w;
    vm_timer_start(w->h, &w->timer);
}

void vm_waiter_expire(struct vm_waiter *w)
{
    void (*expire)(struct vm_waiter *) = w->expire;
    ev_timer_stop(w->h->loop, &w->timer);
    w->expire = NULL;
    expire(w);
}

void vm_waiter_drop(struct vm_waiter *w)
{
    if (w->expire) {
        ev_timer_stop(w->h->loop, &w->timer);
        w->expire = NULL;
    }
    vm_waiter_unlink(w);
    vm_waiter_give(w);
}

void vm_waiter_give(struct vm_waiter *w)
{
    w->cancel = NULL;
    LIST_INSERT_HEAD(&w->h->spare, w, link);
}
