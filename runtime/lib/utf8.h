/* utf8: where text is valid UTF-8, for what must be (Prometheus's label values,
 * JSON strings). Uses nothing else. */
#ifndef LUAWORKER_UTF8_H
#define LUAWORKER_UTF8_H

#include <stddef.h>

/* The length of the UTF-8 sequence that starts s (at most n bytes: 1 to 4), or 0
 * when the bytes there are not one (a stray continuation byte, an overlong lead,
 * a sequence cut short). */
size_t utf8_sequence_length(const unsigned char *s, size_t n);

#endif
