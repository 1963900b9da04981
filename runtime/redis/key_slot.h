/* key_slot: where a key lives in a Redis Cluster, by the cluster specification: its
 * hash slot (CRC16 of the key, or of its hash tag, modulo 16384) and which argument
 * of a command is its first key. Pure functions; no I/O. */
#ifndef LUAWORKER_KEY_SLOT_H
#define LUAWORKER_KEY_SLOT_H

#include <stddef.h>

enum { REDIS_SLOTS = 16384 };

/* The hash slot of key[0..len): of the part between the first '{' and the first
 * '}' after it when that part is not empty (the hash tag), else of the whole key. */
int key_slot(const char *key, size_t len);

/* The index in argv of the first key of the command argv[0..argc) (argv[0] its
 * name, any case), or -1 for a command that names no key (PING, CLIENT, SCRIPT,
 * CLUSTER, ... and EVAL/EVALSHA/FCALL with no keys). Commands not listed take their
 * first argument as a key, as most do; a wrong guess costs one MOVED redirection. */
int key_slot_command_key(int argc, const char **argv, const size_t *argvlen);

#endif
