/*
 * MD5 from libcrypto.so.3, resolved on first use; base64 by hand (it needs no library).
 *
 * Only key imports need MD5, so `skypool offers` never loads libcrypto. OpenSSL's headers are
 * used only for its types: the pointers below take the declared functions' exact types, so the
 * compiler checks every call.
 */
#include "docrypto.h"

#include <dlfcn.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define LIBCRYPTO "libcrypto.so.3"

static struct {
    __typeof__(EVP_md5) *md5;
    __typeof__(EVP_Digest) *digest;
} lc;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static bool loaded;
static char load_error[256];

static bool resolve(void *dl, void *fn, const char *name)
{
    void *sym = dlsym(dl, name);
    memcpy(fn, &sym, sizeof(sym));
    return sym != NULL;
}

static void load(void)
{
    void *dl = dlopen(LIBCRYPTO, RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        snprintf(load_error, sizeof(load_error), "cannot load " LIBCRYPTO " (%s); install libssl3",
                 dlerror());
        return;
    }
    loaded = resolve(dl, &lc.md5, "EVP_md5") && resolve(dl, &lc.digest, "EVP_Digest");
    if (!loaded)
        snprintf(load_error, sizeof(load_error),
                 LIBCRYPTO " lacks EVP_md5 or EVP_Digest; install libssl3");
}

static bool ready(void)
{
    pthread_once(&load_once, load);
    return loaded;
}

int do_crypto_ready(sp_err *err)
{
    return ready() ? SP_OK : sp_err_set(err, SP_E_INTERNAL, "digitalocean: %s", load_error);
}

int do_md5(const void *data, size_t len, unsigned char out[16])
{
    unsigned int n = 0;
    const EVP_MD *md = ready() ? lc.md5() : NULL;
    if (!md || !lc.digest(data ? data : "", len, out, &n, md, NULL))
        return -1;
    return n == 16 ? 0 : -1;
}

static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

long do_base64_decode(unsigned char *out, const char *in, size_t len)
{
    if (len % 4)
        return -1;
    long n = 0;
    for (size_t i = 0; i < len; i += 4) {
        int v[4];
        bool last = i + 4 == len;
        for (int k = 0; k < 4; k++) {
            unsigned char c = (unsigned char)in[i + k];
            v[k] = c == '=' && last && k >= 2 ? 0 : b64_value(c);
            if (v[k] < 0)
                return -1;
        }
        int pad = last ? (in[i + 3] == '=') + (in[i + 2] == '=') : 0;
        if (pad == 1 && in[i + 2] == '=') /* "x=y=" */
            return -1;
        unsigned long w = (unsigned long)v[0] << 18 | (unsigned long)v[1] << 12 |
                          (unsigned long)v[2] << 6 | (unsigned long)v[3];
        out[n++] = (unsigned char)(w >> 16);
        if (pad < 2)
            out[n++] = (unsigned char)(w >> 8);
        if (pad < 1)
            out[n++] = (unsigned char)w;
    }
    return n;
}

/* The key's type and blob: the first two space-separated fields. */
static bool split_key(const char *line, const char **blob, size_t *blob_len, char *type,
                      size_t tsize)
{
    while (*line == ' ' || *line == '\t')
        line++;
    size_t tn = strcspn(line, " \t");
    if (!tn || tn >= tsize || !line[tn])
        return false;
    memcpy(type, line, tn);
    type[tn] = '\0';
    const char *b = line + tn;
    while (*b == ' ' || *b == '\t')
        b++;
    *blob = b;
    *blob_len = strcspn(b, " \t\r\n");
    return *blob_len >= 4;
}

/* The blob starts with its own type as an SSH string: a check that the line is a key. */
static bool blob_names_type(const unsigned char *blob, long n, const char *type)
{
    if (n < 4)
        return false;
    unsigned long len = (unsigned long)blob[0] << 24 | (unsigned long)blob[1] << 16 |
                        (unsigned long)blob[2] << 8 | blob[3];
    return len == strlen(type) && (unsigned long)n >= 4 + len && !memcmp(blob + 4, type, len);
}

int do_key_fingerprint(const char *public_key, char *out, size_t size, sp_err *err)
{
    char type[64];
    const char *b64;
    size_t b64_len;
    if (size < 48)
        return sp_err_set(err, SP_E_INTERNAL, "digitalocean: fingerprint buffer too small");
    if (!public_key || !split_key(public_key, &b64, &b64_len, type, sizeof(type)) ||
        b64_len > 16384)
        return sp_err_set(err, SP_E_INVALID,
                          "digitalocean: the SSH public key is not an OpenSSH public key line "
                          "(\"ssh-ed25519 AAAA... comment\"); check ssh_key in the pool file");
    unsigned char blob[12288];
    long n = do_base64_decode(blob, b64, b64_len);
    if (n < 0 || !blob_names_type(blob, n, type))
        return sp_err_set(err, SP_E_INVALID,
                          "digitalocean: the SSH public key's %s data is not valid base64 of a "
                          "%s key; check ssh_key in the pool file",
                          type, type);
    unsigned char md[16];
    int rc = do_crypto_ready(err);
    if (rc)
        return rc;
    if (do_md5(blob, (size_t)n, md))
        return sp_err_set(err, SP_E_INTERNAL, "digitalocean: MD5 failed in libcrypto");
    for (int i = 0; i < 16; i++)
        snprintf(out + 3 * i, size - 3 * (size_t)i, "%02x%s", md[i], i < 15 ? ":" : "");
    return SP_OK;
}
