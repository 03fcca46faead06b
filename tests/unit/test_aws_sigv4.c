/* AWS SigV4: every case of the aws-c-auth signing test suite (header and query forms, byte for
 * byte), requests that botocore 1.43 signed, and the refusals, none of which shows a secret. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "sigv4.h"
#include "testutil.h"

#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define SUITE "../shared/contracts/aws-sigv4-test-suite"
#define SUITE_CASES 38
#define MAX_HEADERS 32

#define AKID "AKIDEXAMPLE"
#define SECRET "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"

/* ---- One case of the suite ------------------------------------------------------------------- */

typedef struct vcase {
    const char *name;
    char *text;                /* request.txt, cut in place */
    char *method, *target, *host;
    char *raw_headers[MAX_HEADERS]; /* header lines as written, continuation lines included */
    sp_http_header headers[MAX_HEADERS];
    char *values[MAX_HEADERS];      /* headers[i].value, owned */
    size_t n_headers;
    const char *body;
    size_t body_len;
    aws_credentials creds;
    char region[64], service[64];
    aws_signing how;
} vcase;

static void join(char *buf, size_t size, const char *dir, const char *file)
{
    int n = snprintf(buf, size, "%s/%s", dir, file);
    assert_true(n > 0 && (size_t)n < size);
}

static char *case_file(const char *dir, const char *file)
{
    char path[4096];
    join(path, sizeof(path), dir, file);
    return tu_read_file(path, NULL);
}

/* Cuts a line off *p: returns it NUL-terminated, or NULL at the end. */
static char *next_line(char **p, char *end)
{
    if (*p >= end)
        return NULL;
    char *line = *p, *nl = memchr(line, '\n', (size_t)(end - line));
    if (nl) {
        *nl = '\0';
        *p = nl + 1;
    } else {
        *p = end;
    }
    return line;
}

static void parse_request_line(vcase *c, char *line)
{
    char *sp1 = strchr(line, ' '), *sp2 = strrchr(line, ' ');
    assert_non_null(sp1);
    assert_true(sp2 > sp1);
    *sp1 = *sp2 = '\0';
    c->method = line;
    c->target = sp1 + 1;
}

/* A continuation line joins the previous value with "\n": the signer folds the whitespace. */
static void add_header_line(vcase *c, char *line)
{
    if ((line[0] == ' ' || line[0] == '\t') && c->n_headers > 0) {
        size_t i = c->n_headers - 1;
        char *v = c->values[i];
        size_t len = strlen(v) + strlen(line) + 2;
        v = realloc(v, len);
        assert_non_null(v);
        strcat(strcat(v, "\n"), line);
        c->values[i] = v;
        c->headers[i].value = v;
        char *raw = c->raw_headers[i];
        raw = realloc(raw, strlen(raw) + strlen(line) + 2);
        assert_non_null(raw);
        strcat(strcat(raw, "\n"), line);
        c->raw_headers[i] = raw;
        return;
    }
    assert_true(c->n_headers < MAX_HEADERS);
    char *colon = strchr(line, ':');
    assert_non_null(colon);
    size_t i = c->n_headers++;
    c->raw_headers[i] = strdup(line);
    *colon = '\0';
    c->headers[i].name = line;
    c->values[i] = strdup(colon + 1);
    c->headers[i].value = c->values[i];
    if (strcasecmp(line, "host") == 0)
        c->host = colon + 1;
}

static void parse_request(vcase *c, const char *dir)
{
    size_t len = 0;
    char path[4096];
    join(path, sizeof(path), dir, "request.txt");
    c->text = tu_read_file(path, &len);
    assert_non_null(c->text);
    char *p = c->text, *end = c->text + len;
    parse_request_line(c, next_line(&p, end));
    char *line;
    while ((line = next_line(&p, end)) != NULL && line[0] != '\0')
        add_header_line(c, line);
    c->body = p;
    c->body_len = (size_t)(end - p);
    assert_non_null(c->host);
}

static time_t parse_time(const char *s)
{
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    assert_non_null(strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm));
    return timegm(&tm);
}

static void copy_str(char *dst, size_t size, json_t *v)
{
    snprintf(dst, size, "%s", json_is_string(v) ? json_string_value(v) : "");
}

static void parse_context(vcase *c, const char *dir)
{
    char path[4096];
    join(path, sizeof(path), dir, "context.json");
    json_error_t jerr;
    json_t *j = json_load_file(path, 0, &jerr);
    if (!j)
        fail_msg("%s: context.json: %s", c->name, jerr.text);
    json_t *cr = json_object_get(j, "credentials");
    copy_str(c->creds.access_key_id, sizeof(c->creds.access_key_id),
             json_object_get(cr, "access_key_id"));
    copy_str(c->creds.secret_access_key, sizeof(c->creds.secret_access_key),
             json_object_get(cr, "secret_access_key"));
    copy_str(c->creds.session_token, sizeof(c->creds.session_token), json_object_get(cr, "token"));
    copy_str(c->region, sizeof(c->region), json_object_get(j, "region"));
    copy_str(c->service, sizeof(c->service), json_object_get(j, "service"));
    c->how.region = c->region;
    c->how.service = c->service;
    c->how.now = parse_time(json_string_value(json_object_get(j, "timestamp")));
    c->how.normalize_path = json_is_true(json_object_get(j, "normalize"));
    c->how.sign_body = json_is_true(json_object_get(j, "sign_body"));
    c->how.omit_session_token = json_is_true(json_object_get(j, "omit_session_token"));
    c->how.expires_s = (uint32_t)json_integer_value(json_object_get(j, "expiration_in_seconds"));
    json_decref(j);
}

static void case_free(vcase *c)
{
    for (size_t i = 0; i < c->n_headers; i++) {
        free(c->raw_headers[i]);
        free(c->values[i]);
    }
    free(c->text);
}

/* ---- Comparing ------------------------------------------------------------------------------- */

static size_t diff_at(const char *a, const char *b)
{
    size_t i = 0;
    while (a[i] && a[i] == b[i])
        i++;
    return i;
}

/* Reports a mismatch with the case's name; returns whether the two agree. */
static bool same(const char *name, const char *form, const char *file, const char *got,
                 const char *want)
{
    if (!want) {
        print_error("%s: %s-%s is missing\n", name, form, file);
        return false;
    }
    if (got && strcmp(got, want) == 0)
        return true;
    print_error("%s: %s-%s differs at byte %zu\n--- expected\n%s\n--- got\n%s\n", name, form,
                file, got ? diff_at(got, want) : 0, want, got ? got : "(null)");
    return false;
}

static bool same_file(const vcase *c, const char *dir, const char *form, const char *file,
                      const char *got)
{
    char name[128];
    snprintf(name, sizeof(name), "%s-%s", form, file);
    char *want = case_file(dir, name);
    bool ok = same(c->name, form, file, got, want);
    free(want);
    return ok;
}

static char *join_raw_headers(const vcase *c, char *buf, size_t size)
{
    buf[0] = '\0';
    for (size_t i = 0; i < c->n_headers; i++) {
        strncat(buf, c->raw_headers[i], size - strlen(buf) - 1);
        strncat(buf, "\n", size - strlen(buf) - 1);
    }
    return buf;
}

static void build_url(const vcase *c, char *url, size_t size)
{
    snprintf(url, size, "https://%s%s", c->host, c->target);
}

/* ---- The suite, header form then query form -------------------------------------------------- */

static bool check_header_form(const vcase *c, const char *dir)
{
    char url[4096], raw[16384], expect[32768];
    build_url(c, url, sizeof(url));
    aws_request req = {c->method, url, c->headers, c->n_headers, c->body, c->body_len};
    aws_signed s;
    sp_err err = {0};
    if (aws_sigv4_sign(&req, &c->creds, &c->how, &s, &err) != SP_OK) {
        print_error("%s: header signing failed: %s\n", c->name, err.msg);
        return false;
    }
    int n = snprintf(expect, sizeof(expect), "%s %s HTTP/1.1\n%s", c->method, c->target,
                     join_raw_headers(c, raw, sizeof(raw)));
    for (size_t i = 0; i < s.n_add; i++)
        n += snprintf(expect + n, sizeof(expect) - (size_t)n, "%s:%s\n", s.add[i].name,
                      s.add[i].value);
    snprintf(expect + n, sizeof(expect) - (size_t)n, "\n%.*s", (int)c->body_len, c->body);
    bool ok = same_file(c, dir, "header", "canonical-request.txt", s.canonical_request);
    ok = same_file(c, dir, "header", "string-to-sign.txt", s.string_to_sign) && ok;
    ok = same_file(c, dir, "header", "signature.txt", s.signature) && ok;
    ok = same_file(c, dir, "header", "signed-request.txt", expect) && ok;
    aws_signed_free(&s);
    return ok;
}

static bool check_query_form(const vcase *c, const char *dir)
{
    char url[4096], raw[16384], expect[32768];
    build_url(c, url, sizeof(url));
    aws_request req = {c->method, url, c->headers, c->n_headers, c->body, c->body_len};
    aws_signed s;
    sp_err err = {0};
    if (aws_sigv4_presign(&req, &c->creds, &c->how, &s, &err) != SP_OK) {
        print_error("%s: presigning failed: %s\n", c->name, err.msg);
        return false;
    }
    size_t origin = strlen("https://") + strlen(c->host);
    assert_true(strncmp(s.presigned_url, url, origin) == 0);
    snprintf(expect, sizeof(expect), "%s %s HTTP/1.1\n%s\n%.*s", c->method,
             s.presigned_url + origin, join_raw_headers(c, raw, sizeof(raw)), (int)c->body_len,
             c->body);
    assert_int_equal(s.n_add, 0);
    bool ok = same_file(c, dir, "query", "canonical-request.txt", s.canonical_request);
    ok = same_file(c, dir, "query", "string-to-sign.txt", s.string_to_sign) && ok;
    ok = same_file(c, dir, "query", "signature.txt", s.signature) && ok;
    ok = same_file(c, dir, "query", "signed-request.txt", expect) && ok;
    aws_signed_free(&s);
    return ok;
}

typedef struct tally {
    int header_ok, query_ok, failed;
} tally;

static void run_case(const char *suite, const char *name, tally *t)
{
    char dir[4096];
    join(dir, sizeof(dir), suite, name);
    vcase c;
    memset(&c, 0, sizeof(c));
    c.name = name;
    parse_request(&c, dir);
    parse_context(&c, dir);
    if (check_header_form(&c, dir))
        t->header_ok++;
    else
        t->failed++;
    if (check_query_form(&c, dir))
        t->query_ok++;
    else
        t->failed++;
    case_free(&c);
}

static int is_case(const struct dirent *d)
{
    return d->d_name[0] != '.';
}

static void test_signing_suite(void **state)
{
    (void)state;
    char suite[4096];
    snprintf(suite, sizeof(suite), "%s", tu_source_path(SUITE));
    struct dirent **names = NULL;
    int n = scandir(suite, &names, is_case, alphasort);
    if (n < 0)
        fail_msg("cannot read the SigV4 test suite at %s: it belongs beside the repository, "
                 "as in CI", suite);
    tally t = {0};
    for (int i = 0; i < n; i++) {
        run_case(suite, names[i]->d_name, &t);
        free(names[i]);
    }
    free(names);
    print_message("SigV4 suite: %d header and %d query cases pass, %d mismatches\n",
                  t.header_ok, t.query_ok, t.failed);
    assert_int_equal(t.failed, 0);
    assert_true(t.header_ok >= SUITE_CASES);
    assert_true(t.query_ok >= SUITE_CASES);
}

/* ---- Requests botocore 1.43 signed (2024-05-01T12:00:00Z, the suite's example keys) ---------- */

#define BOTO_TIME 1714564800

static aws_credentials example_creds(const char *token)
{
    aws_credentials c;
    memset(&c, 0, sizeof(c));
    strcpy(c.access_key_id, AKID);
    strcpy(c.secret_access_key, SECRET);
    strcpy(c.session_token, token ? token : "");
    strcpy(c.source, "test");
    return c;
}

static const char *find_added(const aws_signed *s, const char *name)
{
    for (size_t i = 0; i < s->n_add; i++)
        if (strcmp(s->add[i].name, name) == 0)
            return s->add[i].value;
    return NULL;
}

static void test_ec2_query_post_as_botocore(void **state)
{
    (void)state;
    const char *body = "Action=DescribeInstances&Version=2016-11-15&Filter.1.Name=tag%3Askypool"
                       "-pool&Filter.1.Value.1=my+pool%2F%C3%A4&MaxResults=5";
    sp_http_header hdrs[] = {
        {"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"},
        {"User-Agent", "skypool/0.1"}, /* not signed, as botocore does not */
    };
    aws_request req = {"POST", "https://ec2.us-east-1.amazonaws.com/", hdrs, 2, body,
                       strlen(body)};
    aws_credentials cr = example_creds("FQoGZXIvYXdzEXAMPLEtoken/with+slash=");
    aws_signing how = {.region = "us-east-1", .service = "ec2", .now = BOTO_TIME,
                       .normalize_path = true};
    aws_signed s;
    sp_err err = {0};
    assert_int_equal(aws_sigv4_sign(&req, &cr, &how, &s, &err), SP_OK);
    assert_string_equal(s.canonical_request,
                        "POST\n/\n\n"
                        "content-type:application/x-www-form-urlencoded; charset=utf-8\n"
                        "host:ec2.us-east-1.amazonaws.com\n"
                        "x-amz-date:20240501T120000Z\n"
                        "x-amz-security-token:FQoGZXIvYXdzEXAMPLEtoken/with+slash=\n\n"
                        "content-type;host;x-amz-date;x-amz-security-token\n"
                        "fc9d4b5f3592d53ec58af781d2fea5f8e24828a0df2a264e91a2d9f13eae046d");
    assert_string_equal(find_added(&s, "Authorization"),
                        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20240501/us-east-1/ec2/"
                        "aws4_request, SignedHeaders=content-type;host;x-amz-date;"
                        "x-amz-security-token, Signature=899003eb48214bb9a8a3f299d0ec4e214af08df"
                        "3647b881c4e516b525f80b812");
    assert_string_equal(find_added(&s, "X-Amz-Date"), "20240501T120000Z");
    assert_string_equal(find_added(&s, "X-Amz-Security-Token"),
                        "FQoGZXIvYXdzEXAMPLEtoken/with+slash=");
    assert_int_equal(s.n_add, 3);
    aws_signed_free(&s);
}

static void test_service_quotas_json_as_botocore(void **state)
{
    (void)state;
    const char *body = "{\"ServiceCode\": \"ec2\", \"QuotaCode\": \"L-417A185B\"}";
    sp_http_header hdrs[] = {{"X-Amz-Target", "ServiceQuotasV20190624.GetServiceQuota"},
                             {"Content-Type", "application/x-amz-json-1.1"}};
    aws_request req = {"POST", "https://servicequotas.us-east-1.amazonaws.com:443/", hdrs, 2,
                       body, strlen(body)};
    aws_credentials cr = example_creds(NULL);
    aws_signing how = {.region = "us-east-1", .service = "servicequotas", .now = BOTO_TIME,
                       .normalize_path = true};
    aws_signed s;
    assert_int_equal(aws_sigv4_sign(&req, &cr, &how, &s, NULL), SP_OK);
    assert_string_equal(s.signature,
                        "72a4c0a86402f34fb4fe51b7420d512df137046e2461c9710d07093b24091630");
    assert_null(find_added(&s, "X-Amz-Security-Token"));
    assert_int_equal(s.n_add, 2);
    aws_signed_free(&s);
}

static void test_sts_presign_as_botocore(void **state)
{
    (void)state;
    aws_request req = {"POST",
                       "https://sts.us-east-1.amazonaws.com/?Action=GetCallerIdentity&"
                       "Version=2011-06-15",
                       NULL, 0, NULL, 0};
    aws_credentials cr = example_creds("SESSIONtoken+/=");
    aws_signing how = {.region = "us-east-1", .service = "sts", .now = BOTO_TIME,
                       .normalize_path = true, .expires_s = 900};
    aws_signed s;
    assert_int_equal(aws_sigv4_presign(&req, &cr, &how, &s, NULL), SP_OK);
    assert_string_equal(s.signature,
                        "676d1e121dcca23774c5f5b6a213b82910ab187a9f753673eb065184d266293e");
    assert_non_null(strstr(s.presigned_url, "?Action=GetCallerIdentity&Version=2011-06-15&"
                                            "X-Amz-Algorithm=AWS4-HMAC-SHA256&"));
    assert_non_null(strstr(s.presigned_url, "&X-Amz-Expires=900&X-Amz-Security-Token="
                                            "SESSIONtoken%2B%2F%3D&X-Amz-Signature=676d1e12"));
    aws_signed_free(&s);
}

/* ---- Details --------------------------------------------------------------------------------- */

static char *sign_canonical(const char *url, const sp_http_header *hdrs, size_t n)
{
    aws_request req = {"GET", url, hdrs, n, NULL, 0};
    aws_credentials cr = example_creds(NULL);
    aws_signing how = {.region = "us-east-1", .service = "ec2", .now = BOTO_TIME,
                       .normalize_path = true};
    aws_signed s;
    sp_err err = {0};
    if (aws_sigv4_sign(&req, &cr, &how, &s, &err) != SP_OK)
        fail_msg("signing %s: %s", url, err.msg);
    char *canon = strdup(s.canonical_request);
    aws_signed_free(&s);
    return canon;
}

static void test_host_and_query_details(void **state)
{
    (void)state;
    char *c = sign_canonical("http://127.0.0.1:5000/a%20b/?b=x+y&a==&a=1&c", NULL, 0);
    assert_non_null(strstr(c, "GET\n/a%2520b/\na=%3D&a=1&b=x%2By&c=\nhost:127.0.0.1:5000\n"));
    free(c);
    c = sign_canonical("HTTP://Example.com:80", NULL, 0);
    assert_non_null(strstr(c, "GET\n/\n\nhost:Example.com\n"));
    free(c);
    sp_http_header h[] = {{"Host", "given.example"}, {"Expect", "100-continue"},
                          {"X-Multi", " a \t\r\n  b "}};
    c = sign_canonical("https://ec2.example.com:8443/", h, 3);
    assert_non_null(strstr(c, "host:given.example\nx-amz-date:20240501T120000Z\nx-multi:a b\n\n"
                              "host;x-amz-date;x-multi\n"));
    free(c);
}

static void test_uri_encode(void **state)
{
    (void)state;
    char *e = aws_uri_encode("a b/ä+=~", strlen("a b/ä+=~"), false);
    assert_string_equal(e, "a%20b%2F%C3%A4%2B%3D~");
    free(e);
    e = aws_uri_encode("/x y/", 5, true);
    assert_string_equal(e, "/x%20y/");
    free(e);
    char hex[65];
    assert_int_equal(aws_sha256_hex("", 0, hex), 0);
    assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

/* ---- Refusals -------------------------------------------------------------------------------- */

#define TOKEN "IQoJb3JpZ2luX2VjEXAMPLESESSIONTOKEN"

static void assert_no_secret(const char *msg)
{
    assert_null(strstr(msg, SECRET));
    assert_null(strstr(msg, "wJalrXUtnFEMI"));
    assert_null(strstr(msg, TOKEN));
    assert_null(strstr(msg, "querysecret"));
}

static void expect_refusal(const char *method, const char *url, const aws_credentials *cr,
                           const sp_http_header *h, size_t n, int code, const char *says)
{
    aws_request req = {method, url, h, n, NULL, 0};
    aws_signing how = {.region = "us-east-1", .service = "ec2", .now = BOTO_TIME};
    aws_signed s;
    sp_err err = {0};
    for (int presign = 0; presign < 2; presign++) {
        memset(&err, 0, sizeof(err));
        int rc = presign ? aws_sigv4_presign(&req, cr, &how, &s, &err)
                         : aws_sigv4_sign(&req, cr, &how, &s, &err);
        if (rc != code || err.code != code || !strstr(err.msg, says))
            fail_msg("%s %s: got %d '%s', wanted %d '...%s...'", method, url, rc, err.msg, code,
                     says);
        assert_no_secret(err.msg);
        assert_null(s.canonical_request);
        assert_null(s.presigned_url);
        assert_int_equal(s.n_add, 0);
        aws_signed_free(&s);
    }
}

static void test_refusals(void **state)
{
    (void)state;
    aws_credentials cr = example_creds(TOKEN);
    expect_refusal("GET", "ec2.amazonaws.com/?X-Amz-Security-Token=querysecret", &cr, NULL, 0,
                   SP_E_INVALID, "no scheme://host");
    expect_refusal("GET", "ftp://h/?t=querysecret", &cr, NULL, 0, SP_E_INVALID, "http");
    expect_refusal("GET", "https:///x?t=querysecret", &cr, NULL, 0, SP_E_INVALID, "no host");
    expect_refusal("GET", "https://user:pw@h/", &cr, NULL, 0, SP_E_INVALID, "user info");
    expect_refusal("GET", "https://h/x#frag", &cr, NULL, 0, SP_E_INVALID, "fragment");
    expect_refusal("G T", "https://h/", &cr, NULL, 0, SP_E_INVALID, "not an HTTP method");
    sp_http_header auth[] = {{"Authorization", "Bearer x"}};
    expect_refusal("GET", "https://h/", &cr, auth, 1, SP_E_INVALID, "already carries");
    sp_http_header bad[] = {{"Bad Name", "x"}};
    expect_refusal("GET", "https://h/", &cr, bad, 1, SP_E_INVALID, "not a valid HTTP token");

    aws_credentials none = example_creds(TOKEN);
    none.access_key_id[0] = '\0';
    expect_refusal("GET", "https://h/", &none, NULL, 0, SP_E_AUTH, "no AWS credentials");
    aws_credentials no_secret = example_creds(TOKEN);
    no_secret.secret_access_key[0] = '\0';
    expect_refusal("GET", "https://h/", &no_secret, NULL, 0, SP_E_AUTH, "AWS_ACCESS_KEY_ID");
}

static void test_bad_context(void **state)
{
    (void)state;
    aws_credentials cr = example_creds(TOKEN);
    aws_request req = {"GET", "https://h/", NULL, 0, NULL, 0};
    aws_signing how = {.region = "us east", .service = "ec2", .now = BOTO_TIME};
    aws_signed s;
    sp_err err = {0};
    assert_int_equal(aws_sigv4_sign(&req, &cr, &how, &s, &err), SP_E_INVALID);
    assert_non_null(strstr(err.msg, "region"));
    how.region = "us-east-1";
    how.expires_s = 8 * 24 * 3600;
    assert_int_equal(aws_sigv4_presign(&req, &cr, &how, &s, &err), SP_E_INVALID);
    assert_non_null(strstr(err.msg, "7 days"));
    assert_no_secret(err.msg);
    aws_signed_free(&s);
    aws_signed_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_signing_suite),
        cmocka_unit_test(test_ec2_query_post_as_botocore),
        cmocka_unit_test(test_service_quotas_json_as_botocore),
        cmocka_unit_test(test_sts_presign_as_botocore),
        cmocka_unit_test(test_host_and_query_details),
        cmocka_unit_test(test_uri_encode),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_bad_context),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
