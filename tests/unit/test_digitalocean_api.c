/* The DigitalOcean provider's API client: pagination, rate limits (slow-down before the reset,
 * 429 with retry-after), bounded retries of 5xx and transport failures, error classification,
 * and tokens kept out of every message. */
#include "test_digitalocean_fake.h"

static const char *const ok_body = "{\"things\": [], \"meta\": {\"total\": 0}}";

static int get(do_ctx *ctx, const char *path, sp_err *err)
{
    do_request r = {"GET", path, NULL, NULL, "in nyc2 (gpu-h100x8-640gb)", false};
    json_t *j = NULL;
    int rc = do_api(ctx, &r, &j, NULL, err);
    json_decref(j);
    return rc;
}

typedef struct counted {
    size_t n;
    char names[16][32];
} counted;

static int count_thing(const json_t *item, void *arg)
{
    counted *c = arg;
    if (c->n < 16)
        snprintf(c->names[c->n], 32, "%s", do_str(item, "name"));
    c->n++;
    return SP_OK;
}

static void test_pages_by_link(void **state)
{
    (void)state;
    dof_init();
    dof_defaults();
    dof_env("SKYPOOL_DO_PER_PAGE", "2");
    do_ctx *ctx = dof_ctx();
    dof_reply(200, "{\"things\": [{\"name\": \"a\"}, {\"name\": \"b\"}], \"links\": {\"pages\": "
                   "{\"next\": \"https://api.digitalocean.com/v2/things?page=2&per_page=2\"}}, "
                   "\"meta\": {\"total\": 5}}");
    dof_reply(200, "{\"things\": [{\"name\": \"c\"}, {\"name\": \"d\"}], \"links\": {\"pages\": "
                   "{\"next\": \"https://api.digitalocean.com/v2/things?per_page=2&page=3\"}}, "
                   "\"meta\": {\"total\": 5}}");
    dof_reply(200, "{\"things\": [{\"name\": \"e\"}], \"links\": {\"pages\": {\"prev\": "
                   "\"https://api.digitalocean.com/v2/things?page=2&per_page=2\"}}, "
                   "\"meta\": {\"total\": 5}}");
    counted c = {0};
    long long total = 0;
    sp_err err = {0};
    assert_int_equal(do_list(ctx, "/v2/things", "type=gpus", "things", NULL, count_thing, &c,
                             &total, &err),
                     SP_OK);
    assert_int_equal(c.n, 5);
    assert_string_equal(c.names[4], "e");
    assert_int_equal(total, 5);
    assert_int_equal(dof.n_log, 3);
    /* Always our own base URL: a next link to another host is read for its page number only. */
    assert_string_equal(dof.log[0].url, "http://127.0.0.1:9/v2/things?type=gpus&per_page=2&page=1");
    assert_string_equal(dof_path(1), "/v2/things?type=gpus&per_page=2&page=2");
    assert_string_equal(dof_path(2), "/v2/things?type=gpus&per_page=2&page=3");
    dof_ctx_free(ctx);
}

static void test_pages_by_total(void **state)
{
    (void)state;
    dof_init();
    dof_defaults();
    do_ctx *ctx = dof_ctx();
    /* No links, but meta.total says there is more (a server with a smaller page cap). */
    dof_reply(200, "{\"things\": [{\"name\": \"a\"}, {\"name\": \"b\"}], "
                   "\"meta\": {\"total\": 3}}");
    dof_reply(200, "{\"things\": [{\"name\": \"c\"}], \"meta\": {\"total\": 3}}");
    counted c = {0};
    sp_err err = {0};
    assert_int_equal(do_list(ctx, "/v2/things", NULL, "things", NULL, count_thing, &c, NULL,
                             &err),
                     SP_OK);
    assert_int_equal(c.n, 3);
    assert_string_equal(dof_path(0), "/v2/things?per_page=200&page=1");
    assert_string_equal(dof_path(1), "/v2/things?per_page=200&page=2");
    /* A mock that always links to page 2 cannot make the listing loop. */
    dof_reset();
    const char *same = "{\"things\": [{\"name\": \"x\"}], \"links\": {\"pages\": {\"next\": "
                       "\"https://api.digitalocean.com/v2/things?page=2&per_page=1\"}}, "
                       "\"meta\": {\"total\": 64}}";
    dof_reply(200, same);
    dof_reply(200, same);
    c.n = 0;
    assert_int_equal(do_list(ctx, "/v2/things", NULL, "things", NULL, count_thing, &c, NULL,
                             &err),
                     SP_OK);
    assert_int_equal(dof.n_log, 2);
    /* An answer without the list is a protocol error, not an empty list. */
    dof_reply(200, "{\"other\": []}");
    assert_int_equal(do_list(ctx, "/v2/things", NULL, "things", NULL, count_thing, &c, NULL,
                             &err),
                     SP_E_PROTOCOL);
    assert_non_null(strstr(err.msg, "no 'things' list"));
    dof_ctx_free(ctx);
}

/* Under 5% of the hourly limit left: the next request waits for the reset. */
static void test_rate_limit_slow_down(void **state)
{
    (void)state;
    dof_init();
    dof_defaults();
    do_ctx *ctx = dof_ctx();
    sp_err err = {0};
    dof_answer_h(200, ok_body, "ratelimit-limit", "5000", "ratelimit-remaining", "4000",
                 "ratelimit-reset", "1", (const char *)NULL);
    dof_reply(200, ok_body);
    assert_int_equal(get(ctx, "/v2/account", &err), SP_OK);
    assert_int_equal(get(ctx, "/v2/account", &err), SP_OK);
    assert_true(dof.log[1].at_ms - dof.log[0].at_ms < 500); /* plenty left: no wait */
    dof_answer_h(200, ok_body, "RateLimit-Limit", "100", "RateLimit-Remaining", "4",
                 "RateLimit-Reset", "1", (const char *)NULL);
    dof_reply(200, ok_body);
    assert_int_equal(get(ctx, "/v2/account", &err), SP_OK);
    assert_int_equal(get(ctx, "/v2/account", &err), SP_OK);
    int64_t waited = dof.log[3].at_ms - dof.log[2].at_ms;
    assert_true(waited >= 950 && waited < 6000);
    assert_true(dof.n_logged >= 1);
    assert_non_null(strstr(dof.logged[0], "rate limit nearly spent (4 of 100 left)"));
    /* The reset as a Unix time, and bounded by SKYPOOL_DO_MAX_WAIT_S. */
    char reset[32];
    snprintf(reset, sizeof(reset), "%lld", (long long)time(NULL) + 3600);
    dof_env("SKYPOOL_DO_MAX_WAIT_S", "1");
    dof_ctx_free(ctx);
    ctx = dof_ctx();
    dof_answer_h(200, ok_body, "ratelimit-limit", "5000", "ratelimit-remaining", "0",
                 "ratelimit-reset", reset, (const char *)NULL);
    dof_reply(200, ok_body);
    assert_int_equal(get(ctx, "/v2/account", &err), SP_OK);
    assert_int_equal(get(ctx, "/v2/account", &err), SP_OK);
    waited = dof.log[5].at_ms - dof.log[4].at_ms;
    assert_true(waited >= 950 && waited < 6000);
    dof_ctx_free(ctx);
}

static void test_429_retry_after(void **state)
{
    (void)state;
    dof_init();
    dof_defaults();
    do_ctx *ctx = dof_ctx();
    sp_err err = {0};
    dof_answer_h(429, "{\"id\": \"too_many_requests\", \"message\": \"API rate limit exceeded.\"}",
                 "retry-after", "1", (const char *)NULL);
    dof_reply(200, ok_body);
    assert_int_equal(get(ctx, "/v2/sizes", &err), SP_OK);
    assert_int_equal(dof.n_log, 2);
    int64_t waited = dof.log[1].at_ms - dof.log[0].at_ms;
    assert_true(waited >= 950 && waited < 6000); /* retry-after: 1, honoured */
    /* Still throttled after every try: SP_E_THROTTLED, and it says so. */
    for (int i = 0; i < 3; i++)
        dof_answer_h(429, "{\"id\": \"too_many_requests\", \"message\": \"API rate limit "
                          "exceeded.\"}",
                     "retry-after", "0", (const char *)NULL);
    assert_int_equal(get(ctx, "/v2/sizes", &err), SP_E_THROTTLED);
    assert_int_equal(dof.n_log, 5);
    assert_non_null(strstr(err.msg, "HTTP 429 too_many_requests: API rate limit exceeded."));
    assert_non_null(strstr(err.msg, "still rate limited after 3 tries"));
    /* A create (not idempotent) is still retried after a 429: it was refused, not done. */
    json_t *body = json_pack("{s:s}", "name", "x");
    do_request post = {"POST", "/v2/droplets", NULL, body, NULL, true};
    json_t *j;
    dof_answer_h(429, "{\"id\": \"too_many_requests\", \"message\": \"slow down\"}",
                 "retry-after", "0", (const char *)NULL);
    dof_reply(202, "{\"droplet\": {\"id\": 1}}");
    assert_int_equal(do_api(ctx, &post, &j, NULL, &err), SP_OK);
    assert_true(dof.log[6].has_content_type);
    assert_string_equal(dof.log[6].body, "{\"name\":\"x\"}");
    json_decref(j);
    json_decref(body);
    dof_ctx_free(ctx);
}

static void test_5xx_retried(void **state)
{
    (void)state;
    dof_init();
    dof_defaults();
    do_ctx *ctx = dof_ctx();
    sp_err err = {0};
    dof_reply(500, "{\"id\": \"server_error\", \"message\": \"Unexpected server-side error\"}");
    dof_reply(503, "<html>Service Unavailable</html>");
    dof_reply(200, ok_body);
    assert_int_equal(get(ctx, "/v2/sizes", &err), SP_OK);
    assert_int_equal(dof.n_log, 3);
    dof_reply(502, "");
    dof_reply(500, "{\"id\": \"server_error\", \"message\": \"Unexpected server-side error\"}");
    dof_reply(503, "{\"id\": \"service_unavailable\", \"message\": \"try again\"}");
    assert_int_equal(get(ctx, "/v2/sizes", &err), SP_E_NETWORK);
    assert_int_equal(dof.n_log, 6); /* bounded: DIGITALOCEAN_MAX_ATTEMPTS=3 */
    assert_non_null(strstr(err.msg, "digitalocean: GET /v2/sizes in nyc2 (gpu-h100x8-640gb): "
                                    "HTTP 503 service_unavailable: try again"));
    assert_non_null(strstr(err.msg, "gave up after 3 tries"));
    /* Transport failures likewise. */
    dof_transport_failure("connection refused");
    dof_reply(200, ok_body);
    assert_int_equal(get(ctx, "/v2/sizes", &err), SP_OK);
    for (int i = 0; i < 3; i++)
        dof_transport_failure("connection reset by peer");
    assert_int_equal(get(ctx, "/v2/sizes", &err), SP_E_NETWORK);
    assert_non_null(strstr(err.msg, "connection reset by peer; gave up after 3 tries"));
    /* A create is not retried blindly: the first try may have made the droplet. */
    json_t *body = json_object();
    do_request post = {"POST", "/v2/droplets", NULL, body, NULL, true};
    json_t *j;
    size_t before = dof.n_log;
    dof_reply(500, "{\"id\": \"server_error\", \"message\": \"oops\"}");
    assert_int_equal(do_api(ctx, &post, &j, NULL, &err), SP_E_NETWORK);
    assert_int_equal(dof.n_log, before + 1);
    dof_transport_failure("timed out");
    assert_int_equal(do_api(ctx, &post, &j, NULL, &err), SP_E_NETWORK);
    assert_int_equal(dof.n_log, before + 2);
    json_decref(body);
    dof_ctx_free(ctx);
}

static void expect_class(do_ctx *ctx, long status, const char *body, int want, const char *text)
{
    sp_err err = {0};
    dof_reply(status, body);
    int rc = get(ctx, "/v2/droplets", &err);
    if (rc != want)
        fail_msg("HTTP %ld %s: got %d, want %d (%s)", status, body, rc, want, err.msg);
    if (text && !strstr(err.msg, text))
        fail_msg("'%s' not in '%s'", text, err.msg);
}

static void test_error_classes(void **state)
{
    (void)state;
    dof_init();
    dof_defaults();
    do_ctx *ctx = dof_ctx();
    expect_class(ctx, 401,
                 "{\"id\": \"unauthorized\", \"message\": \"Unable to authenticate you\"}",
                 SP_E_AUTH,
                 "create a new one at https://cloud.digitalocean.com/account/api/tokens");
    expect_class(ctx, 403, "{\"id\": \"forbidden\", \"message\": \"You do not have access\"}",
                 SP_E_PERM, "may not do this");
    expect_class(ctx, 404, "{\"id\": \"not_found\", \"message\": \"The resource you were "
                           "accessing could not be found.\"}",
                 SP_E_NOTFOUND, "HTTP 404 not_found");
    expect_class(ctx, 422, "{\"id\": \"unprocessable_entity\", \"message\": \"Size is not "
                           "available in this region.\"}",
                 SP_E_CAPACITY, "in nyc2 (gpu-h100x8-640gb): HTTP 422 unprocessable_entity: "
                                "Size is not available in this region.; DigitalOcean has no "
                                "capacity for it there now; try another region or size");
    expect_class(ctx, 422, "{\"id\": \"unprocessable_entity\", \"message\": \"The size you "
                           "selected is temporarily unavailable because of capacity\"}",
                 SP_E_CAPACITY, NULL);
    expect_class(ctx, 422, "{\"id\": \"unprocessable_entity\", \"message\": \"creating this/these "
                           "droplet(s) will exceed your droplet limit\"}",
                 SP_E_QUOTA, "ask DigitalOcean support for a higher droplet limit");
    expect_class(ctx, 422, "{\"id\": \"unprocessable_entity\", \"message\": \"Name is invalid\"}",
                 SP_E_INVALID, "Name is invalid");
    expect_class(ctx, 400, "{\"id\": \"bad_request\", \"message\": \"bad per_page\"}",
                 SP_E_INVALID, "HTTP 400 bad_request");
    expect_class(ctx, 200, "not json", SP_E_PROTOCOL, "not a JSON object");
    expect_class(ctx, 200, "[1, 2]", SP_E_PROTOCOL, NULL);
    expect_class(ctx, 302, "", SP_E_PROTOCOL, "HTTP 302");
    /* An empty 204 is fine: nothing to parse. */
    sp_err err = {0};
    dof_reply(204, "");
    assert_int_equal(get(ctx, "/v2/droplets", &err), SP_OK);
    assert_int_equal(do_classify_422("Region is not available"), SP_E_CAPACITY);
    assert_int_equal(do_classify_422("You have reached the GPU limit for your account"),
                     SP_E_QUOTA);
    dof_ctx_free(ctx);
}

static void test_token_never_in_messages(void **state)
{
    (void)state;
    dof_init();
    dof_defaults();
    do_ctx *ctx = dof_ctx();
    sp_err err = {0};
    dof_reply(401, "{\"id\": \"unauthorized\", \"message\": \"token " DOF_TOKEN " is bad\"}");
    assert_int_equal(get(ctx, "/v2/account", &err), SP_E_AUTH);
    dof_assert_secret_kept(&err, DOF_TOKEN);
    assert_non_null(strstr(err.msg, "token *** is bad"));
    dof_reply(422, "{\"id\": \"unprocessable_entity\", \"message\": \"" DOF_TOKEN DOF_TOKEN "\"}");
    assert_int_equal(get(ctx, "/v2/account", &err), SP_E_INVALID);
    dof_assert_secret_kept(&err, DOF_TOKEN);
    for (int i = 0; i < 3; i++)
        dof_transport_failure("proxy said: Authorization: Bearer " DOF_TOKEN);
    assert_int_equal(get(ctx, "/v2/account", &err), SP_E_NETWORK);
    dof_assert_secret_kept(&err, DOF_TOKEN);
    char msg[64] = "a tok b tok";
    do_scrub(msg, "tok"); /* too short to be a token: left alone */
    assert_string_equal(msg, "a tok b tok");
    dof_ctx_free(ctx);
}

static void test_query_encoding(void **state)
{
    (void)state;
    char q[128] = "";
    do_query_add(q, sizeof(q), "tag_name", "skypool:pool-id:abc_1");
    do_query_add(q, sizeof(q), "x", "a b&c");
    assert_string_equal(q, "tag_name=skypool%3Apool-id%3Aabc_1&x=a%20b%26c");
    char small[16] = "";
    do_query_add(small, sizeof(small), "name", "0123456789abcdef");
    assert_true(strlen(small) < sizeof(small));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pages_by_link),
        cmocka_unit_test(test_pages_by_total),
        cmocka_unit_test(test_rate_limit_slow_down),
        cmocka_unit_test(test_429_retry_after),
        cmocka_unit_test(test_5xx_retried),
        cmocka_unit_test(test_error_classes),
        cmocka_unit_test(test_token_never_in_messages),
        cmocka_unit_test(test_query_encoding),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    dof_reset();
    return rc;
}
