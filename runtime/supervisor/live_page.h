/* live_page: the page the supervisor serves at / (runtime/supervisor/live_page.html,
 * built into the binary by the Makefile: one self-contained file that reads
 * /fleet.json every 2 seconds). */
#ifndef LUAWORKER_LIVE_PAGE_H
#define LUAWORKER_LIVE_PAGE_H

/* The page's bytes, NUL-terminated. */
extern const unsigned char live_page_html[];

#endif
