/* The DigitalOcean provider's token sources (environment, doctl's config file), its API URL
 * setting, and check_credentials against GET /v2/account. */
#include "test_digitalocean_fake.h"

#define FIX_DEFAULT "dop_v1_fixturedefault0123456789abcdef0123456789abcdef0123456789abcdef"
#define FIX_WORK "dop_v1_fixturework0123456789abcdef0123456789abcdef0123456789abcdef0123"
#define FIX_HOME "dop_v1_fixturehome0123456789abcdef0123456789abcdef0123456789abcdef01"

static do_config cfg;

static int load(void)
{
    sp_err err = {0};
    int rc = do_config_load(&dof.host, &cfg, &err);
    if (rc)
        snprintf(cfg.why_none, sizeof(cfg.why_none), "%s", err.msg);
    return rc;
}

static const char *fixture_dir(const char *name)
{
    static char path[4096];
    char rel[128];
    snprintf(rel, sizeof(rel), "tests/fixtures/digitalocean/%s", name);
    snprintf(path, sizeof(path), "%s", tu_source_path(rel));
    return path;
}

static void test_env_token_first(void **state)
{
    (void)state;
    dof_init();
    dof_env("DIGITALOCEAN_TOKEN", "dop_v1_first");
    dof_env("DIGITALOCEAN_ACCESS_TOKEN", "dop_v1_second");
    dof_env("XDG_CONFIG_HOME", fixture_dir("doctl-default"));
    assert_int_equal(load(), SP_OK);
    assert_string_equal(cfg.token, "dop_v1_first");
    assert_string_equal(cfg.source, "environment (DIGITALOCEAN_TOKEN)");
    dof_env("DIGITALOCEAN_TOKEN", ""); /* empty is unset, as doctl reads it */
    assert_int_equal(load(), SP_OK);
    assert_string_equal(cfg.token, "dop_v1_second");
    assert_string_equal(cfg.source, "environment (DIGITALOCEAN_ACCESS_TOKEN)");
}

static void test_env_token_trimmed_and_checked(void **state)
{
    (void)state;
    dof_init();
    dof_env("DIGITALOCEAN_TOKEN", "  dop_v1_padded\n");
    assert_int_equal(load(), SP_OK);
    assert_string_equal(cfg.token, "dop_v1_padded");
    dof_env("DIGITALOCEAN_TOKEN", "dop_v1_se\r\nX-Injected: cret");
    assert_int_equal(load(), SP_E_INVALID);
    assert_non_null(strstr(cfg.why_none, "environment (DIGITALOCEAN_TOKEN)"));
    assert_null(strstr(cfg.why_none, "dop_v1_se"));
    assert_null(strstr(cfg.why_none, "cret"));
}

static void test_doctl_default_context(void **state)
{
    (void)state;
    dof_init();
    dof_env("XDG_CONFIG_HOME", fixture_dir("doctl-default"));
    assert_int_equal(load(), SP_OK);
    assert_string_equal(cfg.token, FIX_DEFAULT); /* access-token, not auth-contexts.default */
    assert_string_equal(cfg.source, "doctl config (context default)");
    assert_non_null(strstr(cfg.path, "doctl-default/doctl/config.yaml"));
}

static void test_doctl_current_context(void **state)
{
    (void)state;
    dof_init();
    dof_env("XDG_CONFIG_HOME", fixture_dir("doctl-work"));
    assert_int_equal(load(), SP_OK);
    assert_string_equal(cfg.token, FIX_WORK);
    assert_string_equal(cfg.source, "doctl config (context work)");
    /* DIGITALOCEAN_CONTEXT overrides the file's context, as doctl's --context does. */
    dof_env("XDG_CONFIG_HOME", fixture_dir("doctl-default"));
    dof_env("DIGITALOCEAN_CONTEXT", "work");
    assert_int_equal(load(), SP_OK);
    assert_string_equal(cfg.token, FIX_WORK);
    dof_env("DIGITALOCEAN_CONTEXT", "default");
    dof_env("XDG_CONFIG_HOME", fixture_dir("doctl-work"));
    assert_int_equal(load(), SP_OK);
    assert_string_equal(cfg.token, FIX_DEFAULT);
}

static void test_doctl_context_without_token(void **state)
{
    (void)state;
    dof_init();
    dof_env("XDG_CONFIG_HOME", fixture_dir("doctl-work"));
    dof_env("DIGITALOCEAN_CONTEXT", "staging");
    assert_int_equal(load(), SP_OK);
    assert_string_equal(cfg.token, "");
    assert_non_null(strstr(cfg.why_none, "context 'staging' has no token"));
    assert_non_null(strstr(cfg.why_none, "doctl auth init --context staging"));
    dof_env("DIGITALOCEAN_CONTEXT", "empty");
    assert_int_equal(load(), SP_OK);
    assert_string_equal(cfg.token, "");
}

static void test_doctl_under_home(void **state)
{
    (void)state;
    dof_init();
    dof_env("HOME", fixture_dir("home"));
    assert_int_equal(load(), SP_OK);
    assert_string_equal(cfg.token, FIX_HOME);
    assert_non_null(strstr(cfg.path, "home/.config/doctl/config.yaml"));
    dof_env("XDG_CONFIG_HOME", ""); /* empty: not set */
    assert_int_equal(load(), SP_OK);
    assert_string_equal(cfg.token, FIX_HOME);
}

static void test_no_token_anywhere(void **state)
{
    (void)state;
    dof_init();
    dof_env("HOME", "/nonexistent-home");
    assert_int_equal(load(), SP_OK);
    assert_string_equal(cfg.token, "");
    assert_non_null(strstr(cfg.why_none, "DIGITALOCEAN_TOKEN"));
    assert_non_null(strstr(cfg.why_none, "doctl auth init"));
    assert_non_null(strstr(cfg.why_none, "/nonexistent-home/.config/doctl/config.yaml"));
}

static void test_doctl_bad_files(void **state)
{
    (void)state;
    dof_init();
    dof_env("XDG_CONFIG_HOME", fixture_dir("doctl-bad"));
    assert_int_equal(load(), SP_E_INVALID);
    assert_non_null(strstr(cfg.why_none, "config.yaml:2:3: access-token must be a string"));
    assert_null(strstr(cfg.why_none, "dop_v1"));
    do_config c;
    sp_err err = {0};
    const char *broken = "access-token: \"dop_v1_unterminated\ncontext: default\n";
    assert_int_equal(do_doctl_parse(broken, strlen(broken), NULL, "cfg.yaml", &c, &err),
                     SP_E_INVALID);
    assert_non_null(strstr(err.msg, "cfg.yaml:"));
    assert_null(strstr(err.msg, "dop_v1_unterminated"));
    const char *list = "- access-token\n";
    assert_int_equal(do_doctl_parse(list, strlen(list), NULL, "cfg.yaml", &c, &err),
                     SP_E_INVALID);
    assert_non_null(strstr(err.msg, "cfg.yaml:1:1: doctl's config must be a mapping"));
}

static void test_doctl_odd_but_valid(void **state)
{
    (void)state;
    do_config c;
    sp_err err = {0};
    const char *empty = "";
    assert_int_equal(do_doctl_parse(empty, 0, NULL, "f", &c, &err), SP_OK);
    assert_string_equal(c.token, "");
    const char *tilde = "~\n";
    assert_int_equal(do_doctl_parse(tilde, strlen(tilde), NULL, "f", &c, &err), SP_OK);
    const char *nested = "compute:\n  ssh: {a: [1, {b: c}]}\naccess-token: 'tok_1'\n"
                         "auth-contexts:\ncontext: ~\n";
    memset(&c, 0, sizeof(c));
    assert_int_equal(do_doctl_parse(nested, strlen(nested), NULL, "f", &c, &err), SP_OK);
    assert_string_equal(c.token, "tok_1");
    assert_string_equal(c.source, "doctl config (context default)");
    const char *twice = "access-token: old\naccess-token: new\n"; /* the last one wins */
    memset(&c, 0, sizeof(c));
    assert_int_equal(do_doctl_parse(twice, strlen(twice), NULL, "f", &c, &err), SP_OK);
    assert_string_equal(c.token, "new");
}

static void test_api_url(void **state)
{
    (void)state;
    dof_init();
    dof_defaults();
    do_ctx *ctx = dof_ctx();
    assert_int_equal(ctx->cfg_status, SP_OK);
    assert_string_equal(ctx->base_url, "http://127.0.0.1:9"); /* trailing slash tolerated */
    dof_ctx_free(ctx);
    dof_env("DIGITALOCEAN_API_URL", NULL);
    ctx = dof_ctx();
    assert_string_equal(ctx->base_url, "https://api.digitalocean.com");
    dof_ctx_free(ctx);
    dof_env("DIGITALOCEAN_API_URL", "ftp://example.com");
    ctx = dof_ctx();
    assert_int_equal(ctx->cfg_status, SP_E_INVALID);
    sp_err err = {0};
    char source[128];
    const sp_provider *table;
    void *pctx;
    assert_int_equal(sp_provider_init(&dof.host, &table, &pctx, NULL), SP_OK);
    assert_int_equal(table->check_credentials(pctx, source, sizeof(source), &err), SP_E_INVALID);
    assert_non_null(strstr(err.msg, "DIGITALOCEAN_API_URL must start with https://"));
    table->fini(pctx);
    dof_ctx_free(ctx);
}

static void test_check_credentials(void **state)
{
    (void)state;
    dof_init();
    dof_defaults();
    const sp_provider *table;
    void *ctx;
    assert_int_equal(sp_provider_init(&dof.host, &table, &ctx, NULL), SP_OK);
    assert_int_equal(table->caps, SP_CAP_LIVE_OFFERS | SP_CAP_QUOTA | SP_CAP_LAUNCH | SP_CAP_MIG);
    assert_int_equal(table->launch_batch_max, 10);
    char source[128];
    sp_err err = {0};
    dof_reply(200, "{\"account\": {\"droplet_limit\": 25, \"email\": \"s@example.com\", "
                    "\"uuid\": \"u\", \"email_verified\": true, \"status\": \"active\", "
                    "\"status_message\": \"\"}}");
    assert_int_equal(table->check_credentials(ctx, source, sizeof(source), &err), SP_OK);
    assert_string_equal(source, "environment (DIGITALOCEAN_TOKEN)");
    dof_expect_request(0, "GET", "/v2/account");
    assert_string_equal(dof.log[0].url, "http://127.0.0.1:9/v2/account");
    assert_string_equal(dof.log[0].auth, "Bearer " DOF_TOKEN);
    assert_false(dof.log[0].has_content_type); /* no body, no Content-Type */
    /* Refused: which token source, never the token; not retried. */
    dof_reply(401, "{\"id\": \"unauthorized\", \"message\": \"Unable to authenticate you.\"}");
    assert_int_equal(table->check_credentials(ctx, source, sizeof(source), &err), SP_E_AUTH);
    assert_int_equal(dof.n_log, 2);
    assert_non_null(strstr(err.msg, "HTTP 401 unauthorized: Unable to authenticate you."));
    assert_non_null(strstr(err.msg, "the token from environment (DIGITALOCEAN_TOKEN) was "
                                    "refused"));
    dof_assert_secret_kept(&err, DOF_TOKEN);
    dof_reply(200, "{\"account\": {\"droplet_limit\": 25, \"status\": \"locked\", "
                    "\"status_message\": \"billing\"}}");
    assert_int_equal(table->check_credentials(ctx, source, sizeof(source), &err), SP_E_PERM);
    assert_non_null(strstr(err.msg, "is locked: billing"));
    table->fini(ctx);
    /* No token: no request, and what to do. */
    dof_env("DIGITALOCEAN_TOKEN", NULL);
    assert_int_equal(sp_provider_init(&dof.host, &table, &ctx, NULL), SP_OK);
    size_t before = dof.n_log;
    assert_int_equal(table->check_credentials(ctx, source, sizeof(source), &err), SP_E_AUTH);
    assert_int_equal(dof.n_log, before);
    assert_non_null(strstr(err.msg, "no DigitalOcean API token"));
    table->fini(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env_token_first),
        cmocka_unit_test(test_env_token_trimmed_and_checked),
        cmocka_unit_test(test_doctl_default_context),
        cmocka_unit_test(test_doctl_current_context),
        cmocka_unit_test(test_doctl_context_without_token),
        cmocka_unit_test(test_doctl_under_home),
        cmocka_unit_test(test_no_token_anywhere),
        cmocka_unit_test(test_doctl_bad_files),
        cmocka_unit_test(test_doctl_odd_but_valid),
        cmocka_unit_test(test_api_url),
        cmocka_unit_test(test_check_credentials),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    dof_reset();
    return rc;
}
