/* The host's HTTP service against a real HTTP server on loopback (tests/fixtures/http_echo.py),
 * and against an HTTPS server whose certificate nobody vouches for. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "registry.h"
#include "testutil.h"

#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct fixture {
    sp_registry reg;
    pid_t pid;
    int port;
} fixture;

/* Starts the echo server (HTTPS when cert is set) and waits for the port it writes. */
static void start_server(fixture *f, const char *cert, const char *key)
{
    char port_file[64];
    snprintf(port_file, sizeof(port_file), "/tmp/skypool-echo-%d-%p", (int)getpid(), (void *)f);
    unlink(port_file);
    f->pid = fork();
    assert_true(f->pid >= 0);
    if (f->pid == 0) {
        const char *script = tu_source_path("tests/fixtures/http_echo.py");
        if (cert)
            execlp("python3", "python3", script, "--port-file", port_file, "--tls", cert, key,
                   (char *)NULL);
        else
            execlp("python3", "python3", script, "--port-file", port_file, (char *)NULL);
        _exit(127);
    }
    for (int waited = 0; waited < 300; waited++) { /* up to 30 s on a loaded machine */
        char *text = tu_read_file(port_file, NULL);
        f->port = text ? atoi(text) : 0;
        free(text);
        if (f->port > 0)
            break;
        struct timespec ts = {0, 100000000L};
        nanosleep(&ts, NULL);
    }
    unlink(port_file);
    if (f->port <= 0)
        fail_msg("the echo server did not start");
}

static void stop_server(fixture *f)
{
    kill(f->pid, SIGTERM);
    waitpid(f->pid, NULL, 0);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof(*f));
    sp_err err = {0};
    if (!f || sp_host_init(&f->reg, &err) != SP_OK)
        return -1;
    start_server(f, NULL, NULL);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    stop_server(f);
    sp_host_fini(&f->reg);
    free(f);
    return 0;
}

/* One request; returns the transport status and fills resp. */
static int request(fixture *f, const char *method, const char *path, const char *body,
                   uint32_t timeout_ms, sp_http_response *resp, sp_err *err)
{
    char url[512];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", f->port, path);
    sp_http_header h[] = {{"X-Test", "yes"}, {"Content-Type", "application/json"}};
    sp_http_request req = {.struct_size = sizeof(req), .method = method, .url = url,
                           .headers = h, .n_headers = 2, .body = body,
                           .body_len = body ? strlen(body) : 0, .timeout_ms = timeout_ms};
    return f->reg.host.http(&f->reg.host, &req, resp, err);
}

static const char *header(const sp_http_response *r, const char *name)
{
    for (size_t i = 0; i < r->n_headers; i++)
        if (strcmp(r->headers[i].name, name) == 0)
            return r->headers[i].value;
    return NULL;
}

static json_t *echo_of(const sp_http_response *r)
{
    json_error_t e;
    json_t *j = json_loadb(r->body, r->body_len, 0, &e);
    if (!j)
        fail_msg("not JSON: %s", r->body);
    return j;
}

static void test_get(void **state)
{
    fixture *f = *state;
    sp_http_response r;
    sp_err err = {0};
    if (request(f, "GET", "/v2/sizes?page=2", NULL, 0, &r, &err) != SP_OK)
        fail_msg("GET: %s", err.msg);
    assert_int_equal(r.status, 200);
    assert_string_equal(header(&r, "content-type"), "application/json"); /* names lower-cased */
    json_t *j = echo_of(&r);
    assert_string_equal(json_string_value(json_object_get(j, "method")), "GET");
    assert_string_equal(json_string_value(json_object_get(j, "path")), "/v2/sizes");
    assert_string_equal(json_string_value(json_object_get(j, "query")), "page=2");
    json_t *hdrs = json_object_get(j, "headers");
    assert_string_equal(json_string_value(json_object_get(hdrs, "x-test")), "yes");
    assert_non_null(strstr(json_string_value(json_object_get(hdrs, "user-agent")), "skypool/"));
    json_decref(j);
    f->reg.host.http_response_free(&f->reg.host, &r);
}

static void test_post_body(void **state)
{
    fixture *f = *state;
    sp_http_response r;
    sp_err err = {0};
    const char *body = "{\"names\": [\"node-0\", \"node-1\"]}";
    assert_int_equal(request(f, "POST", "/v2/droplets", body, 0, &r, &err), SP_OK);
    assert_int_equal(r.status, 200);
    json_t *j = echo_of(&r);
    assert_string_equal(json_string_value(json_object_get(j, "method")), "POST");
    assert_string_equal(json_string_value(json_object_get(j, "body")), body);
    json_decref(j);
    f->reg.host.http_response_free(&f->reg.host, &r);
    assert_int_equal(request(f, "DELETE", "/v2/droplets/7", NULL, 0, &r, &err), SP_OK);
    j = echo_of(&r);
    assert_string_equal(json_string_value(json_object_get(j, "method")), "DELETE");
    json_decref(j);
    f->reg.host.http_response_free(&f->reg.host, &r);
}

/* An HTTP error is an answer, not a transport failure: the provider reads status and headers. */
static void test_error_status_and_headers(void **state)
{
    fixture *f = *state;
    sp_http_response r;
    sp_err err = {0};
    assert_int_equal(request(f, "GET", "/?status=429&header=Retry-After:7&header=RateLimit-Remaining:0",
                             NULL, 0, &r, &err),
                     SP_OK);
    assert_int_equal(r.status, 429);
    assert_string_equal(header(&r, "retry-after"), "7");
    assert_string_equal(header(&r, "ratelimit-remaining"), "0");
    f->reg.host.http_response_free(&f->reg.host, &r);
}

static void test_timeout(void **state)
{
    fixture *f = *state;
    sp_http_response r;
    sp_err err = {0};
    assert_int_equal(request(f, "GET", "/?sleep_ms=1500", NULL, 200, &r, &err), SP_E_NETWORK);
    assert_non_null(strstr(err.msg, "imeout"));
    assert_null(r.body);
}

/* A refused connection names the URL, but never its query: queries can carry credentials. */
static void test_refused_hides_query(void **state)
{
    fixture *f = *state;
    sp_http_response r;
    sp_err err = {0};
    sp_http_request req = {.struct_size = sizeof(req), .method = "GET",
                           .url = "http://127.0.0.1:1/x?X-Amz-Signature=SECRET"};
    assert_int_equal(f->reg.host.http(&f->reg.host, &req, &r, &err), SP_E_NETWORK);
    assert_non_null(strstr(err.msg, "http://127.0.0.1:1/x"));
    assert_null(strstr(err.msg, "SECRET"));
}

/* Requests from one thread reuse its connection: one TCP handshake, not one per call. */
static void test_connection_reused(void **state)
{
    fixture *f = *state;
    long ports[3];
    for (int i = 0; i < 3; i++) {
        sp_http_response r;
        sp_err err = {0};
        assert_int_equal(request(f, "GET", "/", NULL, 0, &r, &err), SP_OK);
        json_t *j = echo_of(&r);
        ports[i] = (long)json_integer_value(json_object_get(j, "client_port"));
        json_decref(j);
        f->reg.host.http_response_free(&f->reg.host, &r);
    }
    assert_true(ports[0] > 0);
    assert_int_equal(ports[1], ports[0]);
    assert_int_equal(ports[2], ports[0]);
}

/* TLS verification is on: a self-signed certificate is refused. */
static void test_tls_verification_on(void **state)
{
    fixture *f = *state;
    char *dir = tu_mkdtemp(), cmd[2048], cert[512], key[512], url[256];
    snprintf(cert, sizeof(cert), "%s/cert.pem", dir);
    snprintf(key, sizeof(key), "%s/key.pem", dir);
    snprintf(cmd, sizeof(cmd),
             "openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 -days 1 "
             "-keyout '%s' -out '%s' 2>/dev/null",
             key, cert);
    assert_int_equal(system(cmd), 0);
    fixture tls = {0};
    start_server(&tls, cert, key);
    snprintf(url, sizeof(url), "https://127.0.0.1:%d/", tls.port);
    sp_http_request req = {.struct_size = sizeof(req), .method = "GET", .url = url,
                           .timeout_ms = 5000};
    sp_http_response r;
    sp_err err = {0};
    assert_int_equal(f->reg.host.http(&f->reg.host, &req, &r, &err), SP_E_NETWORK);
    assert_non_null(strstr(err.msg, "SSL"));
    /* The control: trusted, the same server answers, so it was refused for trust alone. */
    setenv("SSL_CERT_FILE", cert, 1);
    int rc = f->reg.host.http(&f->reg.host, &req, &r, &err);
    unsetenv("SSL_CERT_FILE");
    if (rc != SP_OK)
        fail_msg("trusted, it still failed: %s", err.msg);
    assert_int_equal(r.status, 200);
    f->reg.host.http_response_free(&f->reg.host, &r);
    stop_server(&tls);
    tu_rmtree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_get),
        cmocka_unit_test(test_post_body),
        cmocka_unit_test(test_error_status_and_headers),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_refused_hides_query),
        cmocka_unit_test(test_connection_reused),
        cmocka_unit_test(test_tls_verification_on),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
