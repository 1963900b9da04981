/* key_slot (runtime/redis/key_slot.c): the hash slots of keys, with and without hash
 * tags, as a real redis-server's CLUSTER KEYSLOT gave them (Redis 7.0), and the
 * first key of the commands luaworker and handlers send. Prints TAP; exits 1 when a
 * check failed. */
#include <stdio.h>
#include <string.h>

#include "redis/key_slot.h"

static int checks, failures;

static void check(int ok, const char *what)
{
    checks++;
    if (!ok)
        failures++;
    printf("%sok %d - key_slot: %s\n", ok ? "" : "not ", checks, what);
}

static const struct {
    const char *key;
    int slot;
} slots[] = {
    {"123456789", 12739}, {"foo", 12182}, {"bar", 5061},
    {"{user1000}.following", 3443}, {"{user1000}.followers", 3443},
    {"foo{}{bar}", 8363}, {"foo{{bar}}zap", 4015}, {"foo{bar}{zap}", 5061},
    {"", 0}, {"{}", 15257}, {"queues:{default}", 5718},
    {"laravel_database_queues:{default}:reserved", 5718}, {"a{b", 13340}, {"}{x}", 16287},
};

static int key_of(int argc, const char **argv)
{
    size_t lens[8];
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    return key_slot_command_key(argc, argv, lens);
}

int main(void)
{
    char what[160];
    for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++) {
        snprintf(what, sizeof what, "slot of '%s' is %d", slots[i].key, slots[i].slot);
        check(key_slot(slots[i].key, strlen(slots[i].key)) == slots[i].slot, what);
    }
    const char *get[] = {"GET", "k"};
    check(key_of(2, get) == 1, "GET's key is its first argument");
    const char *blpop[] = {"BLPOP", "a", "b", "0"};
    check(key_of(4, blpop) == 1, "BLPOP's first key is its first argument");
    const char *eval[] = {"evalsha", "abc", "2", "k1", "k2", "x"};
    check(key_of(6, eval) == 3, "EVALSHA's first key follows its key count (any case)");
    const char *eval0[] = {"EVAL", "return 1", "0", "x"};
    check(key_of(4, eval0) == -1, "EVAL with no keys names no key");
    const char *client[] = {"CLIENT", "ID"};
    check(key_of(2, client) == -1, "CLIENT names no key");
    const char *memory[] = {"MEMORY", "USAGE", "k"};
    check(key_of(3, memory) == 2, "MEMORY USAGE's key is its second argument");
    const char *ping[] = {"PING"};
    check(key_of(1, ping) == -1, "PING names no key");
    printf("1..%d\n", checks);
    return failures ? 1 : 0;
}
