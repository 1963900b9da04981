#include "queue/file_store_binding.h"

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

#include "loop/system.h"
#include "loop/vm.h"

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

/* The name of errno e, as the failed-job stores tell a lasting error (EACCES,
 * ENOTDIR...) from a passing one (ENOSPC, EIO...); "errno <n>" for the rest,
 * written in buf. Returns a static string or buf. */
static const char *errno_name(int e, char *buf, size_t size)
{
    switch (e) {
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case ENOENT: return "ENOENT";
    case ENOTDIR: return "ENOTDIR";
    case EISDIR: return "EISDIR";
    case EROFS: return "EROFS";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case ELOOP: return "ELOOP";
    case EEXIST: return "EEXIST";
    case ENOSPC: return "ENOSPC";
    case EDQUOT: return "EDQUOT";
    case EIO: return "EIO";
    case EMFILE: return "EMFILE";
    case ENFILE: return "ENFILE";
    case EINTR: return "EINTR";
    case EAGAIN: return "EAGAIN";
    case EBUSY: return "EBUSY";
    default:
        snprintf(buf, size, "errno %d", e);
        return buf;
    }
}

/* Pushes nil, "<what> <path>: <strerror(e)>", errno_name(e); returns 3. */
static int push_failure(lua_State *L, const char *what, const char *path, int e)
{
    char buf[32];
    lua_pushnil(L);
    lua_pushfstring(L, "%s %s: %s", what, path, strerror(e));
    lua_pushstring(L, errno_name(e, buf, sizeof buf));
    return 3;
}

/* host.cache_add(path, expiration, value) -> true when added, false when the item
 * is there and not expired (or another process holds the file's flock), or nil,
 * message, errno's name (as errno_name). FileStore::add: the file (its
 * directories made) opened for reading and writing, flock'ed without waiting; its
 * first 10 bytes are the Unix second it expires at; when it has none (or not a
 * number) or that second has come, it is rewritten as the expiration, zero-padded
 * to 10 digits, then value. */
static int l_host_cache_add(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    lua_Integer expiration = luaL_checkinteger(L, 2);
    size_t vlen;
    const char *value = luaL_checklstring(L, 3, &vlen);
    luaL_argcheck(L, expiration >= 0 && expiration <= 9999999999LL, 2, "expected 0 to 9999999999");
    if (make_parents(path) != 0)
        return push_failure(L, "cannot make the directories of", path, errno);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd < 0)
        return push_failure(L, "cannot open", path, errno);
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
    int taken = got == 10 && end == head + 10 && (long long)system_unix_time() < expires;
    if (!taken) {
        char stamp[11];
        snprintf(stamp, sizeof stamp, "%010lld", (long long)expiration);
        if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0 || write_all(fd, stamp, 10) != 0 ||
            write_all(fd, value, vlen) != 0) {
            int e = errno;
            close(fd);
            return push_failure(L, "cannot write", path, e);
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

/* host.write_file(path, content) -> true, or nil, message, errno's name (as
 * errno_name). The file is replaced whole (written beside it, then renamed over
 * it): a reader never sees half of it, a crash never leaves half of it. Its
 * directories are made. */
static int l_host_write_file(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    size_t n;
    const char *content = luaL_checklstring(L, 2, &n);
    char tmp[4200];
    if (snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid()) >= (int)sizeof tmp)
        return push_failure(L, "cannot write", path, ENAMETOOLONG);
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
        return push_failure(L, "cannot write", path, e);
    }
    lua_pushboolean(L, 1);
    return 1;
}

/* host.prepare_file(path) -> true, or nil, message, errno's name (as errno_name).
 * What a worker checks at start of a file it will write whole (host.write_file)
 * or lock (host.cache_add) later: path's directories made (they stay), a file
 * made and removed beside it (a file is replaced by a rename: its directory must
 * take one), and path, when it is there, not a directory and opened for reading
 * (not changed). */
static int l_host_prepare_file(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    char probe[4200];
    if (snprintf(probe, sizeof probe, "%s.%ld.check", path, (long)getpid()) >= (int)sizeof probe)
        return push_failure(L, "cannot write", path, ENAMETOOLONG);
    if (make_parents(path) != 0)
        return push_failure(L, "cannot make the directories of", path, errno);
    int fd = open(probe, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0)
        return push_failure(L, "cannot make a file beside", path, errno);
    close(fd);
    unlink(probe);
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return push_failure(L, "cannot write", path, EISDIR);
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0)
            return push_failure(L, "cannot open", path, errno);
        close(fd);
    } else if (errno != ENOENT) {
        return push_failure(L, "cannot open", path, errno);
    }
    lua_pushboolean(L, 1);
    return 1;
}

/* Length of the well-formed UTF-8 sequence at s[0..n), or 0 when it is not one; in
 * *sub the length of its maximal subpart (the longest start of a well-formed
 * sequence, at least 1): what one replacement stands for (Unicode's recommended
 * practice, as PHP 8.1+'s mbstring replaces). */
static size_t utf8_sequence(const unsigned char *s, size_t n, size_t *sub)
{
    unsigned char c = s[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;  /* the second byte's range */
    *sub = 1;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF)
        len = 3;
    else if (c >= 0xF0 && c <= 0xF4)
        len = 4;
    else
        return 0;
    if (c == 0xE0)
        lo = 0xA0;
    else if (c == 0xED)
        hi = 0x9F;
    else if (c == 0xF0)
        lo = 0x90;
    else if (c == 0xF4)
        hi = 0x8F;
    for (size_t i = 1; i < len; i++) {
        if (i >= n)
            return 0;
        unsigned char b = s[i];
        if (i == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF))
            return 0;
        *sub = i + 1;
    }
    return len;
}

/* host.mb_scrub(s) -> s as valid UTF-8, the number of replacements: PHP's
 * mb_scrub(s) (8.1+; what Laravel's failed-job providers' mb_convert_encoding($e,
 * 'UTF-8') gives), each ill-formed sequence (a maximal subpart: a truncated
 * sequence counts once, any other bad byte alone) replaced by '?'. s itself when
 * it is valid. */
static int l_host_mb_scrub(lua_State *L)
{
    size_t n;
    const unsigned char *s = (const unsigned char *)luaL_checklstring(L, 1, &n);
    size_t i = 0, sub, len;
    while (i < n && (len = utf8_sequence(s + i, n - i, &sub)) > 0)
        i += len;
    if (i == n) {
        lua_settop(L, 1);
        lua_pushinteger(L, 0);
        return 2;
    }
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    luaL_addlstring(&b, (const char *)s, i);
    lua_Integer replaced = 0;
    while (i < n) {
        len = utf8_sequence(s + i, n - i, &sub);
        if (len > 0) {
            luaL_addlstring(&b, (const char *)s + i, len);
            i += len;
        } else {
            luaL_addchar(&b, '?');
            replaced++;
            i += sub;
        }
    }
    luaL_pushresult(&b);
    lua_pushinteger(L, replaced);
    return 2;
}

static const luaL_Reg functions[] = {
    {"cache_add", l_host_cache_add},
    {"mb_scrub", l_host_mb_scrub},
    {"prepare_file", l_host_prepare_file},
    {"sha1", l_host_sha1},
    {"write_file", l_host_write_file},
    {NULL, NULL},
};

void file_store_binding_register(struct vm *h)
{
    vm_add_functions(h, functions);
}
