#include "host/host_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>

/* Makes the directories of path's parent, as PHP's mkdir(dir, 0777, true). Returns
 * 0, or -1 with errno. */
static int make_parents(const char *path)
{
    char dir[4096];
    size_t n = strlen(path);
    if (n >= sizeof dir) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(dir, path, n + 1);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir)
        return 0;
    *slash = '\0';
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(dir, 0777) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

static int write_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, s, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        s += w;
        n -= (size_t)w;
    }
    return 0;
}

/* host.cache_add(path, expiration, value) -> true when added, false when the item
 * is there and not expired (or another process holds the file's flock), or nil,
 * message. FileStore::add: the file (its directories made) opened for reading and
 * writing, flock'ed without waiting; its first 10 bytes are the Unix second it
 * expires at; when it has none (or not a number) or that second has come, it is
 * rewritten as the expiration, zero-padded to 10 digits, then value. */
static int l_host_cache_add(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    lua_Integer expiration = luaL_checkinteger(L, 2);
    size_t vlen;
    const char *value = luaL_checklstring(L, 3, &vlen);
    luaL_argcheck(L, expiration >= 0 && expiration <= 9999999999LL, 2, "expected 0 to 9999999999");
    if (make_parents(path) != 0) {
        lua_pushnil(L);
        lua_pushfstring(L, "cannot make the directories of %s: %s", path, strerror(errno));
        return 2;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0) {
        lua_pushnil(L);
        lua_pushfstring(L, "cannot open %s: %s", path, strerror(errno));
        return 2;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        close(fd);
        lua_pushboolean(L, 0);
        return 1;
    }
    char head[11];
    ssize_t got = pread(fd, head, 10, 0);
    head[got > 0 ? got : 0] = '\0';
    char *end;
    long long expires = strtoll(head, &end, 10);
    int taken = got == 10 && end == head + 10 && (long long)time(NULL) < expires;
    if (!taken) {
        char stamp[11];
        snprintf(stamp, sizeof stamp, "%010lld", (long long)expiration);
        if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0 || write_all(fd, stamp, 10) != 0 ||
            write_all(fd, value, vlen) != 0) {
            int e = errno;
            close(fd);
            lua_pushnil(L);
            lua_pushfstring(L, "cannot write %s: %s", path, strerror(e));
            return 2;
        }
    }
    close(fd);
    lua_pushboolean(L, !taken);
    return 1;
}

/* host.sha1(s) -> s's SHA-1 as 40 lowercase hex digits (PHP's sha1). */
static int l_host_sha1(lua_State *L)
{
    size_t n;
    const char *s = luaL_checklstring(L, 1, &n);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (!EVP_Digest(s, n, md, &len, EVP_sha1(), NULL))
        return luaL_error(L, "sha1 failed");
    char hex[2 * EVP_MAX_MD_SIZE + 1];
    for (unsigned int i = 0; i < len; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    lua_pushlstring(L, hex, 2 * (size_t)len);
    return 1;
}

/* host.write_file(path, content) -> true, or nil, message. The file is replaced
 * whole (written beside it, then renamed over it): a reader never sees half of
 * it, a crash never leaves half of it. Its directories are made. */
static int l_host_write_file(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    size_t n;
    const char *content = luaL_checklstring(L, 2, &n);
    char tmp[4200];
    if (snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid()) >= (int)sizeof tmp) {
        lua_pushnil(L);
        lua_pushfstring(L, "path too long: %s", path);
        return 2;
    }
    int fd = make_parents(path) == 0 ? open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666) : -1;
    int failed = fd < 0 || write_all(fd, content, n) != 0 || fsync(fd) != 0;
    int e = errno;
    if (fd >= 0 && close(fd) != 0 && !failed) {
        failed = 1;
        e = errno;
    }
    if (!failed && rename(tmp, path) != 0) {
        failed = 1;
        e = errno;
    }
    if (failed) {
        if (fd >= 0)
            unlink(tmp);
        lua_pushnil(L);
        lua_pushfstring(L, "cannot write %s: %s", path, strerror(e));
        return 2;
    }
    lua_pushboolean(L, 1);
    return 1;
}

const luaL_Reg host_file_functions[] = {
    {"cache_add", l_host_cache_add},
    {"sha1", l_host_sha1},
    {"write_file", l_host_write_file},
    {NULL, NULL},
};
