/*
 * An array of entries named by their index (a handle), grown as needed, whose
 * unused entries are kept on a free list: a handle taken stays valid until it is
 * given back, and given-back ones are used again first. The entries are the
 * caller's (any struct, `size` bytes each, zeroed when the array grows); the list
 * is kept beside them. Starts zeroed: `struct handles h = {0};`; handles_free ends
 * it. Not locked: a caller shared by threads holds its own lock. The one table of
 * handles of the C side (the leases of lease_keeper and database_lease_keeper).
 */
#ifndef LUAWORKER_HANDLES_H
#define LUAWORKER_HANDLES_H

#include <stddef.h>

struct handles {
    void *items;        /* cap entries of `size` bytes */
    int *next_free;     /* for each unused entry, the next one, or -1 */
    int cap;
    int free_head;      /* the first unused entry, or -1 (meaningless while cap is 0) */
};

/* Takes an unused entry of h (growing items, whose entries are `size` bytes); the
 * caller fills it. Returns its handle, or -1 when out of memory. */
int handles_take(struct handles *h, size_t size);

/* Gives back the entry of handle, taken before. */
void handles_give(struct handles *h, int handle);

/* Frees the array; h is then empty, as zeroed. */
void handles_free(struct handles *h);

#endif
