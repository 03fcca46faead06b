/*
 * AWS Signature Version 4 (internal to the AWS provider).
 *
 * Header form (Authorization) and query form (presigned URLs), as the AWS SDKs sign: checked byte
 * for byte against the aws-c-auth signing test suite and against botocore.
 */
#ifndef SKYPOOL_AWS_SIGV4_H
#define SKYPOOL_AWS_SIGV4_H

#include <skypool/provider.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

typedef struct aws_credentials {
    char access_key_id[128];
    char secret_access_key[128];
    char session_token[4096];   /* "" when none */
    char source[256];           /* where they came from, for messages; never the secret */
} aws_credentials;

typedef struct aws_signing {
    const char *region;
    const char *service;        /* signing name: "ec2", "servicequotas", "sts" */
    time_t now;                 /* signing time (UTC seconds) */
    bool sign_body;             /* add and sign x-amz-content-sha256 (header form only) */
    bool normalize_path;        /* RFC 3986 dot-segment and "//" removal (all but S3) */
    bool omit_session_token;    /* sign without X-Amz-Security-Token, add it afterwards */
    uint32_t expires_s;         /* presigned URLs: X-Amz-Expires; 0 means 3600 (botocore's) */
} aws_signing;

/*
 * The request as the caller will send it. Every header given is signed, except those that
 * proxies and HTTP stacks rewrite (User-Agent, Expect, Transfer-Encoding, Connection, Upgrade,
 * X-Amzn-Trace-Id), so pass only headers that go out verbatim. Host is derived from the URL
 * (default ports dropped, as curl and botocore do) unless a Host header is given. Authorization
 * and X-Amz-Date must not be given; nor X-Amz-Security-Token (with a session token) or
 * x-amz-content-sha256 (with sign_body): the signer adds them.
 */
typedef struct aws_request {
    const char *method;
    const char *url;            /* scheme://host[:port]/path[?query]; http or https; no fragment */
    const sp_http_header *headers;
    size_t n_headers;
    const void *body;
    size_t body_len;
} aws_request;

typedef struct aws_signed {
    /* Headers to add to the request, in this order when present: X-Amz-Security-Token,
     * X-Amz-Date, x-amz-content-sha256, Authorization. They point into this struct. */
    sp_http_header add[4];
    size_t n_add;
    char signature[65];
    char *canonical_request;    /* malloc'd, for tests and debugging */
    char *string_to_sign;       /* malloc'd */
    char *presigned_url;        /* aws_sigv4_presign only: the URL with X-Amz-* parameters */
    /* Storage behind add[]. */
    char amz_date[17];
    char content_sha256[65];
    char *authorization;
    char *security_token;
} aws_signed;

/*
 * Header form. Fills *out (zeroed first: aws_signed_free is safe after any return).
 * SP_E_INVALID for a malformed request or signing context, SP_E_AUTH without credentials,
 * SP_E_NOMEM. Messages never carry a secret, a token, or the URL's query.
 */
int aws_sigv4_sign(const aws_request *req, const aws_credentials *creds, const aws_signing *how,
                   aws_signed *out, sp_err *err);
/* Query form: out->presigned_url; nothing in add[]. sign_body is ignored (the payload hash is
 * that of the body, as aws-c-auth signs). */
int aws_sigv4_presign(const aws_request *req, const aws_credentials *creds,
                      const aws_signing *how, aws_signed *out, sp_err *err);
/* Frees and wipes what sign/presign allocated; leaves *s zeroed. */
void aws_signed_free(aws_signed *s);

/* Lower-case hex SHA-256 of data into out[65]. Returns 0, or -1 on a libcrypto failure. */
int aws_sha256_hex(const void *data, size_t len, char out[65]);
/*
 * RFC 3986 encoding as SigV4 wants it: everything but A-Za-z0-9-_.~ becomes %XX (upper-case
 * hex); '/' too unless keep_slash. Returns a malloc'd string, or NULL when out of memory.
 */
char *aws_uri_encode(const char *s, size_t len, bool keep_slash);

#endif
