/*
 * SHA-256, HMAC-SHA256 and base64 from libcrypto.so.3, resolved on first use.
 *
 * Loading libcrypto costs about a millisecond, a large share of an offline command such as
 * `skypool offers`, which never signs anything; the host's HTTP service loads libcurl the same
 * way (core/http.c). OpenSSL's headers are used only for its types: the pointers below take
 * the declared functions' exact types, so the compiler checks every call.
 */
#include "crypto.h"

#include <dlfcn.h>
#include <limits.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define LIBCRYPTO "libcrypto.so.3"

static struct {
    __typeof__(EVP_sha256) *sha256;
    __typeof__(EVP_Digest) *digest;
    __typeof__(HMAC) *hmac;
    __typeof__(EVP_EncodeBlock) *encode;
    __typeof__(EVP_DecodeBlock) *decode;
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
    loaded = resolve(dl, &lc.sha256, "EVP_sha256") && resolve(dl, &lc.digest, "EVP_Digest") &&
             resolve(dl, &lc.hmac, "HMAC") && resolve(dl, &lc.encode, "EVP_EncodeBlock") &&
             resolve(dl, &lc.decode, "EVP_DecodeBlock");
    if (!loaded)
        snprintf(load_error, sizeof(load_error),
                 LIBCRYPTO " lacks a function the AWS provider needs; install libssl3");
}

static bool ready(void)
{
    pthread_once(&load_once, load);
    return loaded;
}

int aws_crypto_ready(sp_err *err)
{
    return ready() ? SP_OK : sp_err_set(err, SP_E_INTERNAL, "%s", load_error);
}

int aws_sha256(const void *data, size_t len, unsigned char out[32])
{
    unsigned int n = 0;
    if (!ready() || !lc.digest(data ? data : "", len, out, &n, lc.sha256(), NULL))
        return -1;
    return n == 32 ? 0 : -1;
}

int aws_hmac_sha256(const void *key, size_t klen, const void *data, size_t dlen,
                    unsigned char out[32])
{
    unsigned int n = 0;
    if (klen > INT_MAX || !ready())
        return -1;
    const unsigned char *d = data ? data : (const void *)"";
    return lc.hmac(lc.sha256(), key, (int)klen, d, dlen, out, &n) && n == 32 ? 0 : -1;
}

size_t aws_base64_encode(char *out, const void *in, size_t len)
{
    out[0] = '\0';
    if (len > INT_MAX / 4 * 3 || !ready())
        return 0;
    int n = lc.encode((unsigned char *)out, in, (int)len);
    return n > 0 ? (size_t)n : 0;
}

int aws_base64_decode(unsigned char *out, const char *in, size_t len)
{
    if (len > INT_MAX || !ready())
        return -1;
    return lc.decode(out, (const unsigned char *)in, (int)len);
}

void aws_cleanse(void *p, size_t n)
{
    volatile unsigned char *v = p;
    while (n--)
        *v++ = 0;
}
