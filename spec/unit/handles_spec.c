/* handles (runtime/lib/handles.c): entries taken and given back by handle, the
 * array growing past its first 16 with the entries already taken kept, given-back
 * handles used again first, new entries zeroed. Prints TAP; exits 1 when a check
 * failed. */
#include <stdio.h>

#include "lib/handles.h"

static int checks, failures;

static void check(int ok, const char *what)
{
    checks++;
    if (!ok)
        failures++;
    printf("%sok %d - handles: %s\n", ok ? "" : "not ", checks, what);
}

struct entry {
    int used;
    long value;
};

static struct entry *at(struct handles *h, int i)
{
    return (struct entry *)h->items + i;
}

int main(void)
{
    struct handles h = {0};
    int taken[40], distinct = 1, zeroed = 1;
    for (int i = 0; i < 40; i++) {
        taken[i] = handles_take(&h, sizeof(struct entry));
        zeroed = zeroed && taken[i] >= 0 && at(&h, taken[i])->used == 0 && at(&h, taken[i])->value == 0;
        for (int k = 0; k < i; k++)
            distinct = distinct && taken[k] != taken[i];
        at(&h, taken[i])->used = 1;
        at(&h, taken[i])->value = 1000 + i;
    }
    check(distinct, "40 handles taken, each its own");
    check(zeroed, "an entry is zeroed when the array grows to hold it");
    check(h.cap >= 40, "the array grew past its first 16");
    int kept = 1;
    for (int i = 0; i < 40; i++)
        kept = kept && at(&h, taken[i])->value == 1000 + i;
    check(kept, "the entries taken keep their contents as the array grows");
    at(&h, taken[7])->used = 0;
    handles_give(&h, taken[7]);
    at(&h, taken[21])->used = 0;
    handles_give(&h, taken[21]);
    int again = handles_take(&h, sizeof(struct entry));
    int again2 = handles_take(&h, sizeof(struct entry));
    check(again == taken[21] && again2 == taken[7], "the handles given back are used again, the last first");
    int cap = h.cap, used = 40;
    while (used < cap)
        at(&h, handles_take(&h, sizeof(struct entry)))->used = ++used;
    handles_give(&h, taken[3]);
    check(handles_take(&h, sizeof(struct entry)) == taken[3] && h.cap == cap,
          "a full array gives a handle given back rather than grow");
    handles_free(&h);
    check(h.items == NULL && h.cap == 0, "handles_free leaves it empty");
    check(handles_take(&h, sizeof(struct entry)) == 0, "an emptied table starts again at handle 0");
    handles_free(&h);
    printf("1..%d\n", checks);
    return failures ? 1 : 0;
}
