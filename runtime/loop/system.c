#include "loop/system.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "loop/vm.h"

void system_random(unsigned char *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom(buf + got, n - got, 0);
        if (r > 0)
            got += (size_t)r;
    }
}

void system_random_id(char *out, size_t n)
{
    static const char alphabet[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    unsigned char raw[256];
    for (size_t done = 0; done < n; done += sizeof raw) {
        size_t k = n - done < sizeof raw ? n - done : sizeof raw;
        system_random(raw, k);
        for (size_t i = 0; i < k; i++)
            out[done + i] = alphabet[raw[i] % 62];
    }
}

double system_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double system_wall_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

time_t system_unix_time(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec;
}

/* host.now() -> integer Unix seconds (the host clock, as Laravel's scores use), the
 * second of host.microtime() read at the same time, as PHP's time() is
 * microtime(true)'s. */
static int l_host_now(lua_State *L)
{
    lua_pushnumber(L, (lua_Number)system_unix_time());
    return 1;
}

/* host.clock() -> monotonic seconds, for durations. */
static int l_host_clock(lua_State *L)
{
    lua_pushnumber(L, system_clock());
    return 1;
}

/* host.microtime() -> Unix time with fractions, for timestamps in JSON output. */
static int l_host_microtime(lua_State *L)
{
    lua_pushnumber(L, system_wall_clock());
    return 1;
}

/* host.random_id(n) -> n random characters from [A-Za-z0-9] (Str::random). */
static int l_host_random_id(lua_State *L)
{
    int n = (int)luaL_checkinteger(L, 1);
    luaL_argcheck(L, n > 0 && n <= 256, 1, "expected 1 to 256");
    char out[256];
    system_random_id(out, (size_t)n);
    lua_pushlstring(L, out, (size_t)n);
    return 1;
}

/* host.uuid() -> a random version 4 UUID, lowercase (Str::uuid). */
static int l_host_uuid(lua_State *L)
{
    unsigned char b[16];
    char out[37];
    system_random(b, sizeof b);
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    snprintf(out, sizeof out,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
             b[13], b[14], b[15]);
    lua_pushstring(L, out);
    return 1;
}

/* host.rss_mb() -> resident memory of this process in MB, or nil. Keeps
 * /proc/self/statm open: one pread per call. */
static int l_host_rss_mb(lua_State *L)
{
    static int fd = -1;
    char buf[128];
    long size, resident;
    if (fd < 0)
        fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd < 0 ? -1 : pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) {
        lua_pushnil(L);
        return 1;
    }
    buf[n] = '\0';
    if (sscanf(buf, "%ld %ld", &size, &resident) != 2) {
        lua_pushnil(L);
        return 1;
    }
    lua_pushnumber(L, (lua_Number)resident * (lua_Number)sysconf(_SC_PAGESIZE) / 1048576.0);
    return 1;
}

/* host.file_kind(path) -> "file", "directory", "other" (a FIFO, a device...), or
 * nil when there is nothing there: opening a FIFO would block the worker. */
static int l_host_file_kind(lua_State *L)
{
    struct stat st;
    if (stat(luaL_checkstring(L, 1), &st) != 0)
        return 0;
    lua_pushstring(L, S_ISREG(st.st_mode) ? "file" : S_ISDIR(st.st_mode) ? "directory" : "other");
    return 1;
}

/* host.terminal() -> stdin_tty, stdout_tty, columns: whether the standard input and
 * output are terminals, and the columns the standard input's terminal has (0 when
 * none), what `stty -a` reports on it. */
static int l_host_terminal(lua_State *L)
{
    struct winsize ws;
    lua_pushboolean(L, isatty(STDIN_FILENO));
    lua_pushboolean(L, isatty(STDOUT_FILENO));
    lua_pushinteger(L, ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0 ? ws.ws_col : 0);
    return 3;
}

static const luaL_Reg functions[] = {
    {"terminal", l_host_terminal},
    {"file_kind", l_host_file_kind},
    {"now", l_host_now},
    {"clock", l_host_clock},
    {"microtime", l_host_microtime},
    {"random_id", l_host_random_id},
    {"uuid", l_host_uuid},
    {"rss_mb", l_host_rss_mb},
    {NULL, NULL},
};

void system_register(struct vm *h)
{
    vm_add_functions(h, functions);
}
