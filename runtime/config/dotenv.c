#include "config/dotenv.h"
#include "lib/buffer.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct parser {
    const char *p, *end, *path;
    int line;
    dotenv_lookup_fn *lookup;
    void *data;
    char *err;
    size_t errlen;
};

static int fail(struct parser *ps, const char *what)
{
    snprintf(ps->err, ps->errlen, "%s:%d: %s", ps->path, ps->line, what);
    return -1;
}

static int is_name_char(int c)
{
    return isalnum(c) || c == '_' || c == '.';
}

/* Expands ${NAME} at ps->p (just past '$') into out. Returns 0 or -1. */
static int expand(struct parser *ps, struct buffer *out)
{
    if (ps->p >= ps->end || *ps->p != '{')
        return buffer_add(out, "$", 1) ? fail(ps, "out of memory") : 0;
    const char *start = ++ps->p;
    while (ps->p < ps->end && is_name_char((unsigned char)*ps->p))
        ps->p++;
    if (ps->p >= ps->end || *ps->p != '}' || ps->p == start)
        return fail(ps, "expected ${NAME} with a closing '}'");
    char name[256];
    size_t n = (size_t)(ps->p - start);
    if (n >= sizeof name)
        return fail(ps, "variable name in ${...} is too long");
    memcpy(name, start, n);
    name[n] = '\0';
    ps->p++;
    const char *value = ps->lookup ? ps->lookup(name, ps->data) : NULL;
    if (value && buffer_add(out, value, strlen(value)))
        return fail(ps, "out of memory");
    return 0;
}

static int parse_double_quoted(struct parser *ps, struct buffer *out)
{
    int start_line = ps->line;
    for (;;) {
        if (ps->p >= ps->end) {
            ps->line = start_line;
            return fail(ps, "expected a closing '\"'");
        }
        char c = *ps->p++;
        if (c == '"')
            return 0;
        if (c == '\n')
            ps->line++;
        if (c == '$') {
            if (expand(ps, out))
                return -1;
            continue;
        }
        if (c == '\\' && ps->p < ps->end) {
            char e = *ps->p++;
            switch (e) {
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            case '"': case '\\': case '$': c = e; break;
            default:
                if (buffer_add(out, "\\", 1))
                    return fail(ps, "out of memory");
                c = e;
            }
        }
        if (buffer_add(out, &c, 1))
            return fail(ps, "out of memory");
    }
}

static int parse_single_quoted(struct parser *ps, struct buffer *out)
{
    const char *start = ps->p;
    int start_line = ps->line;
    while (ps->p < ps->end && *ps->p != '\'') {
        if (*ps->p == '\n')
            ps->line++;
        ps->p++;
    }
    if (ps->p >= ps->end) {
        ps->line = start_line;
        return fail(ps, "expected a closing \"'\"");
    }
    if (buffer_add(out, start, (size_t)(ps->p - start)))
        return fail(ps, "out of memory");
    ps->p++;
    return 0;
}

/* Unquoted: up to end of line or a '#' preceded by white space; trimmed. */
static int parse_unquoted(struct parser *ps, struct buffer *out)
{
    while (ps->p < ps->end && *ps->p != '\n') {
        char c = *ps->p;
        if (c == '#' && (out->len == 0 || isspace((unsigned char)out->data[out->len - 1])))
            break;
        ps->p++;
        if (c == '$') {
            if (expand(ps, out))
                return -1;
            continue;
        }
        if (c == '"' || c == '\'')
            return fail(ps, "unexpected quote inside an unquoted value");
        if (buffer_add(out, &c, 1))
            return fail(ps, "out of memory");
    }
    while (out->len && isspace((unsigned char)out->data[out->len - 1]))
        out->data[--out->len] = '\0';
    return 0;
}

static void skip_blanks(struct parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\r'))
        ps->p++;
}

/* After a value: only blanks and an optional comment may remain on the line. */
static int finish_line(struct parser *ps)
{
    skip_blanks(ps);
    if (ps->p < ps->end && *ps->p == '#')
        while (ps->p < ps->end && *ps->p != '\n')
            ps->p++;
    if (ps->p < ps->end && *ps->p != '\n')
        return fail(ps, "unexpected text after the value");
    return 0;
}

int dotenv_parse(const char *text, size_t len, const char *path,
                 dotenv_assign_fn *assign, dotenv_lookup_fn *lookup, void *data,
                 char *err, size_t errlen)
{
    struct parser ps = {text, text + len, path, 1, lookup, data, err, errlen};
    struct buffer key = {0}, value = {0};
    int rc = -1;

    while (ps.p < ps.end) {
        skip_blanks(&ps);
        if (ps.p >= ps.end)
            break;
        if (*ps.p == '\n' || *ps.p == '#') {
            while (ps.p < ps.end && *ps.p != '\n')
                ps.p++;
            if (ps.p < ps.end) {
                ps.p++;
                ps.line++;
            }
            continue;
        }
        if ((size_t)(ps.end - ps.p) > 7 && memcmp(ps.p, "export", 6) == 0 &&
            (ps.p[6] == ' ' || ps.p[6] == '\t')) {
            ps.p += 7;
            skip_blanks(&ps);
        }
        key.len = value.len = 0;
        const char *start = ps.p;
        while (ps.p < ps.end && is_name_char((unsigned char)*ps.p))
            ps.p++;
        if (ps.p == start) {
            fail(&ps, "expected a variable name (letters, digits, '_' or '.')");
            goto out;
        }
        if (buffer_add(&key, start, (size_t)(ps.p - start)) || buffer_add(&value, "", 0)) {
            fail(&ps, "out of memory");
            goto out;
        }
        skip_blanks(&ps);
        if (ps.p >= ps.end || *ps.p != '=') {
            fail(&ps, "expected '=' after the variable name");
            goto out;
        }
        ps.p++;
        skip_blanks(&ps);
        int r;
        if (ps.p < ps.end && *ps.p == '"') {
            ps.p++;
            r = parse_double_quoted(&ps, &value);
        } else if (ps.p < ps.end && *ps.p == '\'') {
            ps.p++;
            r = parse_single_quoted(&ps, &value);
        } else {
            r = parse_unquoted(&ps, &value);
        }
        if (r || finish_line(&ps))
            goto out;
        assign(key.data, value.data, data);
        if (ps.p < ps.end) {
            ps.p++;
            ps.line++;
        }
    }
    rc = 0;
out:
    buffer_free(&key);
    buffer_free(&value);
    return rc;
}
