/* encrypter: Laravel's encrypted payloads (see encrypter.h).
 *
 * Decryption checks, in this order, and fails with the first message:
 *   payload too large or not base64     The payload is invalid: <detail>.
 *   not one JSON object                 The payload is invalid: <detail>.
 *   iv, value or mac missing or not a string, tag neither absent, null nor
 *   a string, iv not base64 of the cipher's IV length
 *                                       The payload is invalid: <detail>.
 *   CBC: mac is not the lowercase hex HMAC-SHA256 of iv . value (the two
 *   base64 texts) under the key, compared in constant time
 *                                       The MAC is invalid.
 *   GCM: tag not base64 of 16 bytes     Could not decrypt the data: <detail>.
 *   CBC: tag not empty                  Unable to use tag because the cipher
 *                                       algorithm does not support AEAD.
 *   value not base64                    The payload is invalid: <detail>.
 *   padding or GCM tag wrong            Could not decrypt the data.
 * Nothing is decrypted before the MAC (CBC) or tag (GCM) is checked.
 * Base64 is the standard alphabet, '=' padding optional, nothing else
 * accepted (no whitespace).  The envelope is read with cjson (an object, at
 * most ENCRYPTER_JSON_DEPTH deep; with duplicate keys the last wins).
 */
#include "php/encrypter.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <lauxlib.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>

/* Payloads above this many bytes are refused; plaintexts are bounded so
 * that their payload stays below it. */
#define ENCRYPTER_MAX_PAYLOAD (64u << 20)
#define ENCRYPTER_MAX_PLAINTEXT (32u << 20)
#define ENCRYPTER_JSON_DEPTH 32
#define ENCRYPTER_TAG_LEN 16
#define ENCRYPTER_MAX_IV 16
#define ENCRYPTER_DEFAULT_CIPHER "AES-256-CBC"

/* Bytes base64 text of n bytes takes, and at most decodes to. */
#define ENCRYPTER_B64_LEN(n) (((n) + 2) / 3 * 4)
#define ENCRYPTER_B64_MAX_DECODED(n) ((n) / 4 * 3 + 3)

struct encrypter_cipher {
    const char *name;
    size_t key_len;
    size_t iv_len;
    int aead;
    const EVP_CIPHER *(*evp)(void);
};

static const struct encrypter_cipher encrypter_ciphers[] = {
    { "AES-128-CBC", 16, 16, 0, EVP_aes_128_cbc },
    { "AES-256-CBC", 32, 16, 0, EVP_aes_256_cbc },
    { "AES-128-GCM", 16, 12, 1, EVP_aes_128_gcm },
    { "AES-256-GCM", 32, 12, 1, EVP_aes_256_gcm },
};

enum encrypter_field { ENCRYPTER_IV, ENCRYPTER_VALUE, ENCRYPTER_MAC, ENCRYPTER_TAG, ENCRYPTER_NFIELDS };
static const char *const encrypter_field_names[ENCRYPTER_NFIELDS] = { "iv", "value", "mac", "tag" };

enum encrypter_kind { ENCRYPTER_ABSENT, ENCRYPTER_STRING, ENCRYPTER_NULL, ENCRYPTER_OTHER };

/* The envelope's fields; strings point into the decoded table's strings. */
struct encrypter_envelope {
    enum encrypter_kind kind[ENCRYPTER_NFIELDS];
    const char *s[ENCRYPTER_NFIELDS];
    size_t len[ENCRYPTER_NFIELDS];
};

/* ---- base64 ---- */

static int encrypter_b64_digit(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* Decodes s into out, which holds ENCRYPTER_B64_MAX_DECODED(len) bytes and
 * may be s itself (decoding in place).  Returns 0 and sets *outlen, or -1
 * when s is not base64. */
static int encrypter_b64_decode(const char *s, size_t len, unsigned char *out, size_t *outlen)
{
    size_t pad = 0, n = 0;
    unsigned acc = 0;
    int bits = 0;
    if (len > 0 && s[len - 1] == '=')
        pad = (len > 1 && s[len - 2] == '=') ? 2 : 1;
    if (pad && len % 4 != 0)
        return -1;
    len -= pad;
    if (len % 4 == 1)
        return -1;
    for (size_t i = 0; i < len; i++) {
        int d = encrypter_b64_digit((unsigned char)s[i]);
        if (d < 0)
            return -1;
        acc = ((acc << 6) | (unsigned)d) & 0xfff;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[n++] = (unsigned char)(acc >> bits);
        }
    }
    *outlen = n;
    return 0;
}

/* Writes the padded base64 of in (ENCRYPTER_B64_LEN(len) bytes, no NUL) to
 * out; returns the number of bytes written. */
static size_t encrypter_b64_encode(const unsigned char *in, size_t len, char *out)
{
    static const char digits[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t n = 0, i = 0;
    for (; i + 2 < len; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[n++] = digits[v >> 18];
        out[n++] = digits[(v >> 12) & 63];
        out[n++] = digits[(v >> 6) & 63];
        out[n++] = digits[v & 63];
    }
    if (i < len) {
        uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < len ? (uint32_t)in[i + 1] << 8 : 0);
        out[n++] = digits[v >> 18];
        out[n++] = digits[(v >> 12) & 63];
        out[n++] = i + 1 < len ? digits[(v >> 6) & 63] : '=';
        out[n++] = '=';
    }
    return n;
}

/* ---- the envelope ---- */

/* Reads the envelope JSON json[0..len) with the cjson decoder at stack index
 * decoder (one limited to ENCRYPTER_JSON_DEPTH levels) into env. On success the
 * decoded table is left on the stack (env's strings point into it: pop it when
 * done) and 0 is returned; else nothing is left and -1 with a detail in err. */
static int encrypter_envelope_read(lua_State *L, int decoder, const char *json, size_t len,
                                   struct encrypter_envelope *env, char *err, size_t errlen)
{
    size_t i = 0;
    memset(env, 0, sizeof *env);
    while (i < len && (json[i] == ' ' || json[i] == '\t' || json[i] == '\n' || json[i] == '\r'))
        i++;
    if (i == len || json[i] != '{') {
        snprintf(err, errlen, "not a JSON object");
        return -1;
    }
    lua_pushvalue(L, decoder);
    lua_pushlstring(L, json, len);
    if (lua_pcall(L, 1, 1, 0) != 0 || !lua_istable(L, -1)) {
        lua_pop(L, 1);
        snprintf(err, errlen, "not valid JSON");
        return -1;
    }
    for (int f = 0; f < ENCRYPTER_NFIELDS; f++) {
        lua_getfield(L, -1, encrypter_field_names[f]);
        switch (lua_type(L, -1)) {
        case LUA_TNIL:
            env->kind[f] = ENCRYPTER_ABSENT;
            break;
        case LUA_TSTRING:
            env->kind[f] = ENCRYPTER_STRING;
            env->s[f] = lua_tolstring(L, -1, &env->len[f]);  /* kept alive by the table */
            break;
        case LUA_TLIGHTUSERDATA:  /* cjson.null */
            env->kind[f] = lua_touserdata(L, -1) == NULL ? ENCRYPTER_NULL : ENCRYPTER_OTHER;
            break;
        default:
            env->kind[f] = ENCRYPTER_OTHER;
        }
        lua_pop(L, 1);
    }
    return 0;
}

/* ---- crypto ---- */

static const struct encrypter_cipher *encrypter_cipher_find(const char *name, size_t len)
{
    if (strlen(name) != len)
        return NULL;
    for (size_t i = 0; i < sizeof encrypter_ciphers / sizeof encrypter_ciphers[0]; i++)
        if (strcasecmp(name, encrypter_ciphers[i].name) == 0)
            return &encrypter_ciphers[i];
    return NULL;
}

/* Writes the lowercase hex HMAC-SHA256 of a . b under key to hex (64 bytes,
 * no NUL).  Returns 0, or -1 when OpenSSL fails. */
static int encrypter_mac(const unsigned char *key, size_t keylen, const char *a, size_t alen,
                         const char *b, size_t blen, char hex[64])
{
    static const char digits[] = "0123456789abcdef";
    unsigned char md[32];
    size_t mdlen = 0;
    int rc = -1;
    EVP_MAC *mac = EVP_MAC_fetch(NULL, "HMAC", NULL);
    EVP_MAC_CTX *ctx = mac ? EVP_MAC_CTX_new(mac) : NULL;
    OSSL_PARAM params[2];
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0);
    params[1] = OSSL_PARAM_construct_end();
    if (!ctx || EVP_MAC_init(ctx, key, keylen, params) != 1 ||
        EVP_MAC_update(ctx, (const unsigned char *)a, alen) != 1 ||
        EVP_MAC_update(ctx, (const unsigned char *)b, blen) != 1 ||
        EVP_MAC_final(ctx, md, &mdlen, sizeof md) != 1 || mdlen != sizeof md)
        goto done;
    for (size_t i = 0; i < sizeof md; i++) {
        hex[2 * i] = digits[md[i] >> 4];
        hex[2 * i + 1] = digits[md[i] & 15];
    }
    rc = 0;
done:
    EVP_MAC_CTX_free(ctx);
    EVP_MAC_free(mac);
    return rc;
}

/* Decrypts in (inlen <= ENCRYPTER_MAX_PAYLOAD) into out, which holds
 * inlen + 32 bytes; tag is ENCRYPTER_TAG_LEN bytes for GCM, else unused.
 * Returns 0 and sets *outlen, or -1 (bad padding, tag mismatch). */
static int encrypter_open(const struct encrypter_cipher *c, const unsigned char *key,
                          const unsigned char *iv, const unsigned char *tag,
                          const unsigned char *in, size_t inlen, unsigned char *out, size_t *outlen)
{
    int n1 = 0, n2 = 0, rc = -1;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (!ctx || EVP_DecryptInit_ex(ctx, c->evp(), NULL, key, iv) != 1)
        goto done;
    if (inlen > 0 && EVP_DecryptUpdate(ctx, out, &n1, in, (int)inlen) != 1)
        goto done;
    if (c->aead && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, ENCRYPTER_TAG_LEN,
                                       (void *)(uintptr_t)tag) != 1)
        goto done;
    if (EVP_DecryptFinal_ex(ctx, out + n1, &n2) != 1)
        goto done;
    *outlen = (size_t)n1 + (size_t)n2;
    rc = 0;
done:
    EVP_CIPHER_CTX_free(ctx);
    return rc;
}

/* Encrypts in (inlen <= ENCRYPTER_MAX_PLAINTEXT) into out, which holds
 * inlen + 32 bytes, under a fresh random iv (c->iv_len bytes); fills tag
 * (ENCRYPTER_TAG_LEN bytes) for GCM.  Returns 0 and sets *outlen, or -1. */
static int encrypter_seal(const struct encrypter_cipher *c, const unsigned char *key,
                          unsigned char *iv, unsigned char *tag,
                          const unsigned char *in, size_t inlen, unsigned char *out, size_t *outlen)
{
    int n1 = 0, n2 = 0, rc = -1;
    EVP_CIPHER_CTX *ctx = NULL;
    if (RAND_bytes(iv, (int)c->iv_len) != 1)
        goto done;
    ctx = EVP_CIPHER_CTX_new();
    if (!ctx || EVP_EncryptInit_ex(ctx, c->evp(), NULL, key, iv) != 1)
        goto done;
    if (inlen > 0 && EVP_EncryptUpdate(ctx, out, &n1, in, (int)inlen) != 1)
        goto done;
    if (EVP_EncryptFinal_ex(ctx, out + n1, &n2) != 1)
        goto done;
    if (c->aead && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, ENCRYPTER_TAG_LEN, tag) != 1)
        goto done;
    *outlen = (size_t)n1 + (size_t)n2;
    rc = 0;
done:
    EVP_CIPHER_CTX_free(ctx);
    return rc;
}

/* ---- Lua ---- */

/* Stack effect +2: nil, message.  Returns 2 for the caller to return. */
static int encrypter_fail(lua_State *L, const char *message)
{
    lua_pushnil(L);
    lua_pushstring(L, message);
    return 2;
}

/* The cipher named by optional argument arg (default AES-256-CBC), or NULL
 * with a message in err when it is not one Laravel supports.  Raises when
 * the argument is not a string. */
static const struct encrypter_cipher *encrypter_cipher_arg(lua_State *L, int arg, char *err,
                                                           size_t errlen)
{
    size_t len;
    const char *name = luaL_optlstring(L, arg, ENCRYPTER_DEFAULT_CIPHER, &len);
    const struct encrypter_cipher *c = encrypter_cipher_find(name, len);
    if (!c)
        snprintf(err, errlen, "Unsupported cipher \"%.40s\": expected AES-128-CBC, AES-256-CBC, "
                 "AES-128-GCM or AES-256-GCM.", name);
    return c;
}

/* Returns 0 when a key of keylen bytes suits c, else -1 with a message. */
static int encrypter_key_check(const struct encrypter_cipher *c, size_t keylen, char *err,
                               size_t errlen)
{
    if (keylen == c->key_len)
        return 0;
    snprintf(err, errlen, "Incorrect key length for %s: %zu bytes, expected %zu.", c->name,
             keylen, c->key_len);
    return -1;
}

int encrypter_check_app_key(const char *app_key, const char *cipher, char *err, size_t errlen)
{
    const char *name = cipher ? cipher : ENCRYPTER_DEFAULT_CIPHER;
    const struct encrypter_cipher *c = encrypter_cipher_find(name, strlen(name));
    unsigned char key[ENCRYPTER_B64_MAX_DECODED(ENCRYPTER_B64_LEN(32))];
    size_t len = app_key ? strlen(app_key) : 0, keylen = len;
    int rc = -1;
    if (!c) {
        snprintf(err, errlen, "APP_CIPHER=%.40s: expected AES-128-CBC, AES-256-CBC, AES-128-GCM "
                 "or AES-256-GCM", name);
        return -1;
    }
    if (len >= 7 && memcmp(app_key, "base64:", 7) == 0) {
        if (len - 7 > ENCRYPTER_B64_LEN(32) || encrypter_b64_decode(app_key + 7, len - 7, key, &keylen)) {
            snprintf(err, errlen, "APP_KEY: expected \"base64:\" and the base64 of a %zu-byte key "
                     "for %s", c->key_len, c->name);
            goto done;
        }
    }
    if (len > 0 && keylen != c->key_len) {
        snprintf(err, errlen, "APP_KEY: a %zu-byte key, expected %zu bytes for %s", keylen,
                 c->key_len, c->name);
        goto done;
    }
    rc = 0;
done:
    OPENSSL_cleanse(key, sizeof key);
    return rc;
}

/* enc.key(app_key[, cipher]) -> key | nil, message
 * app_key is APP_KEY as configured: "base64:" and the base64 of the key, or
 * the key bytes themselves.  The key returned is the raw bytes. */
static int l_encrypter_key(lua_State *L)
{
    size_t len, keylen;
    const char *app_key = luaL_checklstring(L, 1, &len);
    char err[160];
    const struct encrypter_cipher *c = encrypter_cipher_arg(L, 2, err, sizeof err);
    unsigned char *key;
    if (!c)
        return encrypter_fail(L, err);
    if (len == 0)
        return encrypter_fail(L, "No application encryption key has been specified.");
    if (len < 7 || memcmp(app_key, "base64:", 7) != 0) {
        if (encrypter_key_check(c, len, err, sizeof err) != 0)
            return encrypter_fail(L, err);
        lua_pushvalue(L, 1);
        return 1;
    }
    key = lua_newuserdata(L, ENCRYPTER_B64_MAX_DECODED(len));
    if (encrypter_b64_decode(app_key + 7, len - 7, key, &keylen) != 0)
        return encrypter_fail(L, "The application key is not valid base64 after \"base64:\".");
    if (encrypter_key_check(c, keylen, err, sizeof err) != 0)
        return encrypter_fail(L, err);
    lua_pushlstring(L, (const char *)key, keylen);
    OPENSSL_cleanse(key, keylen);
    return 1;
}

/* enc.decrypt(payload, key[, cipher]) -> plaintext | nil, message
 * The plaintext is the decrypted bytes as they are (for a queued job, PHP
 * serialize() text).  Messages are listed at the top of this file. */
static int l_encrypter_decrypt(lua_State *L)
{
    size_t plen, keylen, jsonlen, ivlen, taglen, ctlen, outlen;
    const char *payload = luaL_checklstring(L, 1, &plen);
    const unsigned char *key = (const unsigned char *)luaL_checklstring(L, 2, &keylen);
    char err[160], mac[64];
    const struct encrypter_cipher *c = encrypter_cipher_arg(L, 3, err, sizeof err);
    struct encrypter_envelope env;
    unsigned char iv[ENCRYPTER_B64_MAX_DECODED(24)], tag[ENCRYPTER_B64_MAX_DECODED(24)];
    unsigned char *ct, *out;
    char *json;
    int f;

    if (!c || encrypter_key_check(c, keylen, err, sizeof err) != 0)
        return encrypter_fail(L, err);
    if (plen > ENCRYPTER_MAX_PAYLOAD)
        return encrypter_fail(L, "The payload is invalid: larger than 64 MiB.");
    json = lua_newuserdata(L, ENCRYPTER_B64_MAX_DECODED(plen));
    if (encrypter_b64_decode(payload, plen, (unsigned char *)json, &jsonlen) != 0)
        return encrypter_fail(L, "The payload is invalid: not base64.");
    if (encrypter_envelope_read(L, lua_upvalueindex(1), json, jsonlen, &env, err,
                                sizeof err) != 0) {
        lua_pushnil(L);
        lua_pushfstring(L, "The payload is invalid: %s.", err);
        return 2;
    }
    for (f = ENCRYPTER_IV; f <= ENCRYPTER_MAC; f++)
        if (env.kind[f] != ENCRYPTER_STRING) {
            lua_pushnil(L);
            lua_pushfstring(L, "The payload is invalid: \"%s\" is missing or not a string.",
                            encrypter_field_names[f]);
            return 2;
        }
    if (env.kind[ENCRYPTER_TAG] == ENCRYPTER_OTHER)
        return encrypter_fail(L, "The payload is invalid: \"tag\" is not a string.");
    if (env.len[ENCRYPTER_IV] > 24 ||
        encrypter_b64_decode(env.s[ENCRYPTER_IV], env.len[ENCRYPTER_IV], iv, &ivlen) != 0 ||
        ivlen != c->iv_len) {
        lua_pushnil(L);
        lua_pushfstring(L, "The payload is invalid: \"iv\" is not base64 of %d bytes.",
                        (int)c->iv_len);
        return 2;
    }
    if (!c->aead) {
        if (encrypter_mac(key, keylen, env.s[ENCRYPTER_IV], env.len[ENCRYPTER_IV],
                          env.s[ENCRYPTER_VALUE], env.len[ENCRYPTER_VALUE], mac) != 0)
            return encrypter_fail(L, "Could not decrypt the data: HMAC-SHA256 failed.");
        if (env.len[ENCRYPTER_MAC] != sizeof mac ||
            CRYPTO_memcmp(mac, env.s[ENCRYPTER_MAC], sizeof mac) != 0)
            return encrypter_fail(L, "The MAC is invalid.");
        if (env.kind[ENCRYPTER_TAG] == ENCRYPTER_STRING && env.len[ENCRYPTER_TAG] > 0)
            return encrypter_fail(L, "Unable to use tag because the cipher algorithm does not "
                                     "support AEAD.");
    } else if (env.kind[ENCRYPTER_TAG] != ENCRYPTER_STRING || env.len[ENCRYPTER_TAG] > 24 ||
               encrypter_b64_decode(env.s[ENCRYPTER_TAG], env.len[ENCRYPTER_TAG], tag,
                                    &taglen) != 0 ||
               taglen != ENCRYPTER_TAG_LEN) {
        return encrypter_fail(L, "Could not decrypt the data: \"tag\" is not base64 of 16 bytes.");
    }
    ct = lua_newuserdata(L, ENCRYPTER_B64_MAX_DECODED(env.len[ENCRYPTER_VALUE]));
    if (encrypter_b64_decode(env.s[ENCRYPTER_VALUE], env.len[ENCRYPTER_VALUE], ct, &ctlen) != 0)
        return encrypter_fail(L, "The payload is invalid: \"value\" is not base64.");
    out = lua_newuserdata(L, ctlen + 32);
    if (encrypter_open(c, key, iv, tag, ct, ctlen, out, &outlen) != 0)
        return encrypter_fail(L, "Could not decrypt the data.");
    lua_pushlstring(L, (const char *)out, outlen);
    OPENSSL_cleanse(out, outlen);
    return 1;
}

static char *encrypter_put(char *p, const char *s)
{
    size_t n = strlen(s);
    memcpy(p, s, n);
    return p + n;
}

/* enc.encrypt(plaintext, key[, cipher]) -> payload | nil, message
 * The payload is what Laravel's encrypt($plaintext, false) gives: base64 of
 * {"iv":…,"value":…,"mac":…,"tag":…} in that order, slashes unescaped. */
static int l_encrypter_encrypt(lua_State *L)
{
    static const char frame[] = "{\"iv\":\"\",\"value\":\"\",\"mac\":\"\",\"tag\":\"\"}";
    size_t ptlen, keylen, ctlen, jsonmax, outlen;
    const unsigned char *pt = (const unsigned char *)luaL_checklstring(L, 1, &ptlen);
    const unsigned char *key = (const unsigned char *)luaL_checklstring(L, 2, &keylen);
    char err[160];
    const struct encrypter_cipher *c = encrypter_cipher_arg(L, 3, err, sizeof err);
    unsigned char iv[ENCRYPTER_MAX_IV], tag[ENCRYPTER_TAG_LEN], *ct;
    char *json, *p, *iv64, *value64, *out;

    if (!c || encrypter_key_check(c, keylen, err, sizeof err) != 0)
        return encrypter_fail(L, err);
    if (ptlen > ENCRYPTER_MAX_PLAINTEXT)
        return encrypter_fail(L, "Could not encrypt the data: larger than 32 MiB.");
    jsonmax = sizeof frame + ENCRYPTER_B64_LEN(c->iv_len) + ENCRYPTER_B64_LEN(ptlen + 16) + 64 +
              ENCRYPTER_B64_LEN(ENCRYPTER_TAG_LEN);
    ct = lua_newuserdata(L, ptlen + 32);
    json = lua_newuserdata(L, jsonmax);
    out = lua_newuserdata(L, ENCRYPTER_B64_LEN(jsonmax));
    if (encrypter_seal(c, key, iv, tag, pt, ptlen, ct, &ctlen) != 0)
        return encrypter_fail(L, "Could not encrypt the data.");

    p = encrypter_put(json, "{\"iv\":\"");
    iv64 = p;
    p += encrypter_b64_encode(iv, c->iv_len, p);
    p = encrypter_put(p, "\",\"value\":\"");
    value64 = p;
    p += encrypter_b64_encode(ct, ctlen, p);
    p = encrypter_put(p, "\",\"mac\":\"");
    if (!c->aead) {
        if (encrypter_mac(key, keylen, iv64, ENCRYPTER_B64_LEN(c->iv_len), value64,
                          ENCRYPTER_B64_LEN(ctlen), p) != 0)
            return encrypter_fail(L, "Could not encrypt the data: HMAC-SHA256 failed.");
        p += 64;
    }
    p = encrypter_put(p, "\",\"tag\":\"");
    if (c->aead)
        p += encrypter_b64_encode(tag, ENCRYPTER_TAG_LEN, p);
    p = encrypter_put(p, "\"}");
    outlen = encrypter_b64_encode((unsigned char *)json, (size_t)(p - json), out);
    lua_pushlstring(L, out, outlen);
    return 1;
}

int luaopen_luaworker_encrypter(lua_State *L)
{
    static const luaL_Reg funcs[] = {
        { "key", l_encrypter_key },
        { "encrypt", l_encrypter_encrypt },
        { NULL, NULL }
    };
    lua_createtable(L, 0, 3);
    luaL_register(L, NULL, funcs);
    /* decrypt's upvalue: the decode function of a cjson instance of its own,
     * limited to ENCRYPTER_JSON_DEPTH levels */
    lua_getglobal(L, "require");
    lua_pushliteral(L, "cjson");
    lua_call(L, 1, 1);
    lua_getfield(L, -1, "new");
    lua_call(L, 0, 1);
    lua_getfield(L, -1, "decode_max_depth");
    lua_pushinteger(L, ENCRYPTER_JSON_DEPTH);
    lua_call(L, 1, 0);
    lua_getfield(L, -1, "decode");
    lua_pushcclosure(L, l_encrypter_decrypt, 1);
    lua_setfield(L, -4, "decrypt");
    lua_pop(L, 2);
    return 1;
}
