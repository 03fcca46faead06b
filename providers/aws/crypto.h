/*
 * The few cryptographic functions the AWS provider needs (internal to the provider): SHA-256,
 * HMAC-SHA256 and base64 from OpenSSL's libcrypto, which is loaded on first use rather than
 * linked, so that commands that never sign a request do not pay for loading it.
 */
#ifndef SKYPOOL_AWS_CRYPTO_H
#define SKYPOOL_AWS_CRYPTO_H

#include <skypool/provider.h>
#include <stddef.h>

/* What base64 of n bytes takes, with its terminating NUL. */
#define AWS_BASE64_SIZE(n) (4 * (((n) + 2) / 3) + 1)

/* SP_OK once libcrypto is loaded; else SP_E_INTERNAL, and err says why and what to install. */
int aws_crypto_ready(sp_err *err);

/* Each returns 0, or -1 when libcrypto cannot be loaded (aws_crypto_ready says why) or fails. */
int aws_sha256(const void *data, size_t len, unsigned char out[32]);
int aws_hmac_sha256(const void *key, size_t klen, const void *data, size_t dlen,
                    unsigned char out[32]);
/* Base64 of in[0..len) into out[AWS_BASE64_SIZE(len)], NUL-terminated. Returns the length of
 * the text, or 0 (out is then "") on failure. */
size_t aws_base64_encode(char *out, const void *in, size_t len);
/* Decodes base64 text in[0..len) (surrounding whitespace allowed) into out, which holds
 * 3 * (len / 4) bytes; no NUL is added. Returns the bytes written (padding counts as zero
 * bytes, as OpenSSL's EVP_DecodeBlock does), or -1 when the text is not base64 or on failure. */
int aws_base64_decode(unsigned char *out, const char *in, size_t len);

/* Overwrites p[0..n) with zeros in a way the compiler may not drop. Needs no library, so that
 * wiping a secret never depends on loading one. */
void aws_cleanse(void *p, size_t n);

#endif
