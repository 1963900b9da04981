#include "lib/handles.h"

#include <stdlib.h>
#include <string.h>

int handles_take(struct handles *h, size_t size)
{
    if (h->cap == 0)
        h->free_head = -1;
    if (h->free_head < 0) {
        int cap = h->cap ? h->cap * 2 : 16;
        char *items = realloc(h->items, (size_t)cap * size);
        if (!items)
            return -1;
        h->items = items;
        int *next = realloc(h->next_free, (size_t)cap * sizeof *next);
        if (!next)
            return -1;  /* (items grown: kept, the next call grows the list) */
        h->next_free = next;
        memset(items + (size_t)h->cap * size, 0, (size_t)(cap - h->cap) * size);
        for (int i = cap - 1; i >= h->cap; i--) {
            next[i] = h->free_head;
            h->free_head = i;
        }
        h->cap = cap;
    }
    int handle = h->free_head;
    h->free_head = h->next_free[handle];
    return handle;
}

void handles_give(struct handles *h, int handle)
{
    h->next_free[handle] = h->free_head;
    h->free_head = handle;
}

void handles_free(struct handles *h)
{
    free(h->items);
    free(h->next_free);
    memset(h, 0, sizeof *h);
}
