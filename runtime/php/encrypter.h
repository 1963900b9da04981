/* encrypter: the Lua module "luaworker.encrypter", Laravel's encrypted
 * payloads (Illuminate\Encryption\Encrypter, the envelope Laravel 8 and
 * later write), used for the data.command of ShouldBeEncrypted jobs.
 *
 *   enc.key(app_key[, cipher])            -> key | nil, message
 *   enc.decrypt(payload, key[, cipher])   -> plaintext | nil, message
 *   enc.encrypt(plaintext, key[, cipher]) -> payload | nil, message
 *
 * A payload is base64 of the JSON object {"iv","value","mac","tag"}; cipher
 * is AES-128-CBC, AES-256-CBC (the default), AES-128-GCM or AES-256-GCM, any
 * letter case.  A key is the raw key bytes as a Lua string; enc.key turns an
 * APP_KEY ("base64:..." or the raw bytes) into one.  Neither direction
 * (un)serializes: Laravel's encrypt() serializes first and decrypt()
 * unserializes last, so callers do that with luaworker.php.  Bad arguments
 * (wrong Lua types) raise; everything that comes from outside (keys, cipher
 * names, payloads) fails with nil and a message.
 * Uses OpenSSL libcrypto (AES, HMAC-SHA256, RAND_bytes).
 */
#ifndef LUAWORKER_ENCRYPTER_H
#define LUAWORKER_ENCRYPTER_H

#include <stddef.h>

#include <lua.h>

/* Checks APP_KEY and APP_CIPHER as the worker would use them, before it starts:
 * cipher (NULL for AES-256-CBC) must be one of the four, and app_key (NULL or
 * "" for none: only an encrypted job then fails) "base64:" and valid base64 of
 * a key of the cipher's length, or that many raw bytes.  Returns 0, or -1 with
 * err naming the variable and what was expected (never the key). */
int encrypter_check_app_key(const char *app_key, const char *cipher, char *err, size_t errlen);

/* Pushes the module table (stack effect +1).  The host registers it as
 * package.preload["luaworker.encrypter"]. */
int luaopen_luaworker_encrypter(lua_State *L);

#endif
