#include "redis/key_slot.h"

#include <stdlib.h>
#include <strings.h>

/* CRC16 as the cluster specification defines it: CCITT/XMODEM, polynomial 0x1021,
 * initial value 0, bits not reflected. */
static unsigned crc16(const unsigned char *p, size_t len)
{
    unsigned crc = 0;
    for (size_t i = 0; i < len; i++) {
        crc ^= (unsigned)p[i] << 8;
        for (int bit = 0; bit < 8; bit++)
            crc = (crc & 0x8000) ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    }
    return crc;
}

int key_slot(const char *key, size_t len)
{
    const unsigned char *k = (const unsigned char *)key;
    size_t open = 0;
    while (open < len && k[open] != '{')
        open++;
    if (open < len) {
        size_t close = open + 1;
        while (close < len && k[close] != '}')
            close++;
        if (close < len && close > open + 1)
            return (int)(crc16(k + open + 1, close - open - 1) & (REDIS_SLOTS - 1));
    }
    return (int)(crc16(k, len) & (REDIS_SLOTS - 1));
}

/* Commands that name no key: sent to any node. */
static const char *const keyless[] = {
    "PING", "ECHO", "INFO", "TIME", "CLIENT", "SCRIPT", "CLUSTER", "COMMAND", "CONFIG",
    "DBSIZE", "AUTH", "HELLO", "SELECT", "ROLE", "LASTSAVE", "WAIT", "ASKING", "READONLY",
    "READWRITE", "FUNCTION", "LATENCY", "SLOWLOG", "ACL", "MULTI", "EXEC", "DISCARD",
    "UNWATCH", "PUBLISH", "SUBSCRIBE", "PSUBSCRIBE", "UNSUBSCRIBE", "PUNSUBSCRIBE", "RANDOMKEY",
    "SCAN", "KEYS", "FLUSHDB", "FLUSHALL", "SAVE", "BGSAVE", "DEBUG", "SWAPDB", "RESET",
    "QUIT", "MONITOR", "PUBSUB", "MEMORY", "OBJECT", "XINFO", NULL,
};

/* Commands whose keys follow a key count: (name, index of the count). */
static const struct {
    const char *name;
    int count_at;
} counted[] = {
    {"EVAL", 2}, {"EVALSHA", 2}, {"EVAL_RO", 2}, {"EVALSHA_RO", 2}, {"FCALL", 2},
    {"FCALL_RO", 2}, {NULL, 0},
};

int key_slot_command_key(int argc, const char **argv, const size_t *argvlen)
{
    (void)argvlen;
    if (argc < 1)
        return -1;
    const char *name = argv[0];
    for (int i = 0; counted[i].name; i++) {
        if (strcasecmp(name, counted[i].name) == 0) {
            if (argc <= counted[i].count_at + 1)
                return -1;
            return atoi(argv[counted[i].count_at]) > 0 ? counted[i].count_at + 1 : -1;
        }
    }
    for (int i = 0; keyless[i]; i++)
        if (strcasecmp(name, keyless[i]) == 0)
            return argc > 2 && (strcasecmp(name, "MEMORY") == 0 || strcasecmp(name, "OBJECT") == 0 ||
                                strcasecmp(name, "XINFO") == 0)
                       ? 2  /* MEMORY USAGE key, OBJECT ENCODING key, XINFO STREAM key */
                       : -1;
    return argc > 1 ? 1 : -1;
}
