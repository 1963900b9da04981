/* version: `luaworker --version` (and -V): what this binary is, the Laravel
 * versions it speaks, and the libraries it was built with and loads. */
#ifndef LUAWORKER_VERSION_H
#define LUAWORKER_VERSION_H

#include <stdio.h>

/* Writes the version text to f. */
void version_print(FILE *f);

#endif
