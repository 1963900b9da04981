/* file_store_binding: the functions of "luaworker.host" for files the worker shares with the app's PHP:
 * Laravel's file cache store's add (the lock its file failed-job store takes),
 * sha1 (the store's file names), writing a file whole and checking at start that
 * it can be; and PHP's mb_scrub, for the text a failed-job store the app reads is
 * given. Failures name errno (EACCES...), so that a lasting one is told from a
 * passing one. Uses vm. */
#ifndef LUAWORKER_QUEUE_FILE_STORE_BINDING_H
#define LUAWORKER_QUEUE_FILE_STORE_BINDING_H

struct vm;

/* Adds the functions to h's "luaworker.host". */
void file_store_binding_register(struct vm *h);

#endif
