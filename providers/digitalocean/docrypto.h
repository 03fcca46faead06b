/*
 * SSH key fingerprints as DigitalOcean shows them (internal to the provider): the MD5 of the
 * key's decoded blob, as colon-separated lower-case hex ("3b:16:bf:..."), what
 * `ssh-keygen -l -E md5` prints after "MD5:". MD5 comes from OpenSSL's libcrypto, loaded on
 * first use rather than linked, as the AWS provider loads it (providers/aws/crypto.c).
 */
#ifndef SKYPOOL_DO_CRYPTO_H
#define SKYPOOL_DO_CRYPTO_H

#include <skypool/provider.h>
#include <stddef.h>

/* SP_OK once libcrypto is loaded; else SP_E_INTERNAL, and err says why and what to install. */
int do_crypto_ready(sp_err *err);

/* 0, or -1 when libcrypto cannot be loaded or fails. */
int do_md5(const void *data, size_t len, unsigned char out[16]);

/* Decodes standard base64 (with '=' padding, no white space inside) into out, which holds at
 * least 3 * (len / 4) bytes. Returns the bytes written, or -1 when the text is not base64. */
long do_base64_decode(unsigned char *out, const char *in, size_t len);

/* The fingerprint of an OpenSSH public key line ("ssh-ed25519 AAAA... comment") into out
 * (at least 48 bytes). SP_E_INVALID for a line that is not a public key. */
int do_key_fingerprint(const char *public_key, char *out, size_t size, sp_err *err);

#endif
