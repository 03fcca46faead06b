/* AWS credentials, region and endpoints, found as botocore 1.43 finds them (each fixture under
 * tests/fixtures/aws/ was checked against it), through a fake host whose environment the test
 * controls. Every secret in the fixtures holds "s3cr3t" and every token "t0k3n": no message may
 * show one. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "config.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- A host whose environment is a table ------------------------------------------------------ */

typedef struct fake_env {
    sp_host host;              /* first: the provider gets &fake_env.host */
    const char *const *vars;   /* name, value, name, value, ..., NULL */
} fake_env;

static const char *fake_getenv(const sp_host *host, const char *name)
{
    const fake_env *e = (const fake_env *)host;
    for (const char *const *v = e->vars; v && v[0]; v += 2)
        if (strcmp(v[0], name) == 0)
            return v[1];
    return NULL;
}

static fake_env make_env(const char *const *vars)
{
    fake_env e;
    memset(&e, 0, sizeof(e));
    e.host.abi_major = SP_PROVIDER_ABI_MAJOR;
    e.host.struct_size = sizeof(sp_host);
    e.host.getenv = fake_getenv;
    e.vars = vars;
    return e;
}

static char creds_file[4096], config_file[4096], fixtures[4096];

static void join(char *buf, size_t size, const char *dir, const char *file)
{
    int n = snprintf(buf, size, "%s/%s", dir, file);
    assert_true(n > 0 && (size_t)n < size);
}

static int setup(void **state)
{
    (void)state;
    snprintf(fixtures, sizeof(fixtures), "%s", tu_source_path("tests/fixtures/aws"));
    join(creds_file, sizeof(creds_file), fixtures, "credentials");
    join(config_file, sizeof(config_file), fixtures, "config");
    return 0;
}

static char *fixture(const char *rel)
{
    static char buf[4096];
    join(buf, sizeof(buf), fixtures, rel);
    return buf;
}

/* ---- Checks ----------------------------------------------------------------------------------- */

static void assert_no_secret(const char *text)
{
    if (strstr(text, "s3cr3t") || strstr(text, "t0k3n") || strstr(text, "ENVSECRET") ||
        strstr(text, "ENVTOKEN"))
        fail_msg("a secret leaked into: %s", text);
}

static void assert_clean(const aws_config *cfg, const sp_err *err)
{
    assert_no_secret(err->msg);
    assert_no_secret(cfg->why_no_creds);
    assert_no_secret(cfg->creds.source);
    assert_no_secret(cfg->region_source);
    assert_no_secret(cfg->warning);
}

static void load_ok(const char *const *vars, aws_config *cfg)
{
    fake_env e = make_env(vars);
    sp_err err = {0};
    int rc = aws_config_load(&e.host, cfg, &err);
    if (rc != SP_OK)
        fail_msg("aws_config_load: %d %s", rc, err.msg);
    assert_clean(cfg, &err);
}

/* An error with that code, a message saying each of the expected pieces, no credentials left. */
static void load_fails(const char *const *vars, int code, const char *says, const char *says2)
{
    fake_env e = make_env(vars);
    sp_err err = {0};
    aws_config cfg;
    int rc = aws_config_load(&e.host, &cfg, &err);
    if (rc != code || err.code != code || !strstr(err.msg, says) ||
        (says2 && !strstr(err.msg, says2)))
        fail_msg("wanted %d '...%s...%s...', got %d '%s'", code, says, says2 ? says2 : "", rc,
                 err.msg);
    assert_clean(&cfg, &err);
    assert_string_equal(cfg.creds.access_key_id, "");
    assert_string_equal(cfg.creds.secret_access_key, "");
}

#define FILES "AWS_SHARED_CREDENTIALS_FILE", creds_file, "AWS_CONFIG_FILE", config_file

/* ---- The environment -------------------------------------------------------------------------- */

static void test_env_creds_win(void **state)
{
    (void)state;
    const char *vars[] = {FILES, "AWS_ACCESS_KEY_ID", "AKIAENV", "AWS_SECRET_ACCESS_KEY",
                          "ENVSECRET/x+y", "AWS_SESSION_TOKEN", "ENVTOKEN-session", NULL};
    aws_config cfg;
    load_ok(vars, &cfg);
    assert_string_equal(cfg.creds.access_key_id, "AKIAENV");
    assert_string_equal(cfg.creds.secret_access_key, "ENVSECRET/x+y");
    assert_string_equal(cfg.creds.session_token, "ENVTOKEN-session");
    assert_string_equal(cfg.creds.source, "environment (AWS_ACCESS_KEY_ID)");
    assert_string_equal(cfg.profile, "default");
    assert_string_equal(cfg.why_no_creds, "");
    assert_string_equal(cfg.region, "us-west-2"); /* the default profile's, in the config */
    aws_config_wipe(&cfg);
    assert_string_equal(cfg.creds.secret_access_key, "");
}

static void test_env_legacy_token_first(void **state)
{
    (void)state;
    const char *vars[] = {"AWS_ACCESS_KEY_ID", "AKIAENV", "AWS_SECRET_ACCESS_KEY", "ENVSECRET",
                          "AWS_SESSION_TOKEN", "ENVTOKEN-new", "AWS_SECURITY_TOKEN",
                          "ENVTOKEN-old", NULL};
    aws_config cfg;
    load_ok(vars, &cfg);
    assert_string_equal(cfg.creds.session_token, "ENVTOKEN-old");
}

static void test_env_partial(void **state)
{
    (void)state;
    const char *key_only[] = {FILES, "AWS_ACCESS_KEY_ID", "AKIAENV", NULL};
    load_fails(key_only, SP_E_AUTH, "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not",
               NULL);
    const char *secret_only[] = {FILES, "AWS_SECRET_ACCESS_KEY", "ENVSECRET", NULL};
    load_fails(secret_only, SP_E_AUTH,
               "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not", NULL);
    const char *spaced[] = {"AWS_ACCESS_KEY_ID", "AKIAENV", "AWS_SECRET_ACCESS_KEY",
                            "ENVSECRET with space", NULL};
    load_fails(spaced, SP_E_AUTH, "AWS_SECRET_ACCESS_KEY holds spaces", "environment");
    /* Empty values count as unset, as in botocore. */
    const char *empty[] = {FILES, "AWS_ACCESS_KEY_ID", "", "AWS_SECRET_ACCESS_KEY", "", NULL};
    aws_config cfg;
    load_ok(empty, &cfg);
    assert_string_equal(cfg.creds.access_key_id, "AKIAFIXDEFAULT");
}

/* ---- Profiles --------------------------------------------------------------------------------- */

static void expect_profile(const char *profile, const char *key_id, const char *token,
                           const char *file, const char *region)
{
    const char *vars[] = {FILES, "AWS_PROFILE", profile, NULL};
    aws_config cfg;
    load_ok(vars, &cfg);
    if (strcmp(cfg.creds.access_key_id, key_id) != 0)
        fail_msg("profile %s: key id '%s', wanted '%s' (why: %s)", profile,
                 cfg.creds.access_key_id, key_id, cfg.why_no_creds);
    assert_true(strstr(cfg.creds.secret_access_key, "s3cr3t") != NULL);
    assert_string_equal(cfg.creds.session_token, token);
    char source[512];
    snprintf(source, sizeof(source), "profile '%s' in %s", profile ? profile : "default", file);
    assert_string_equal(cfg.creds.source, source);
    assert_string_equal(cfg.region, region);
    assert_string_equal(cfg.why_no_creds, "");
}

static void test_profiles_from_credentials_file(void **state)
{
    (void)state;
    expect_profile(NULL, "AKIAFIXDEFAULT", "", creds_file, "us-west-2");
    expect_profile("dev", "AKIAFIXDEV", "dev-t0k3n-session", creds_file, "ap-south-1");
    expect_profile("legacy-token", "AKIAFIXLEGACY", "old-t0k3n", creds_file, "");
    expect_profile("nested", "AKIAFIXNESTED", "", creds_file, "");
    expect_profile("shadowed", "AKIAFIXCREDSFILE", "", creds_file, "");
}

static void test_profiles_from_config_file(void **state)
{
    (void)state;
    expect_profile("cfgonly", "AKIAFIXCFGONLY", "", config_file, "eu-central-1");
    expect_profile("spaced name", "AKIAFIXSPACED", "", config_file, "");
}

static void test_default_section_inherited(void **state)
{
    (void)state;
    char path[4096];
    snprintf(path, sizeof(path), "%s", fixture("inherit-credentials"));
    const char *vars[] = {"AWS_SHARED_CREDENTIALS_FILE", path, "AWS_PROFILE", "inherits", NULL};
    aws_config cfg;
    load_ok(vars, &cfg);
    assert_string_equal(cfg.creds.access_key_id, "AKIAFIXINHERITS");
    assert_string_equal(cfg.creds.secret_access_key, "inherited-s3cr3t");
}

static void test_home_paths(void **state)
{
    (void)state;
    char home[4096];
    snprintf(home, sizeof(home), "%s", fixture("home"));
    const char *vars[] = {"HOME", home, NULL};
    aws_config cfg;
    load_ok(vars, &cfg);
    assert_string_equal(cfg.creds.access_key_id, "AKIAFIXHOME");
    assert_string_equal(cfg.region, "sa-east-1");
    assert_non_null(strstr(cfg.credentials_file, "home/.aws/credentials"));
    const char *tilde[] = {"HOME", fixtures, "AWS_SHARED_CREDENTIALS_FILE", "~/credentials",
                           "AWS_CONFIG_FILE", "~/config", "AWS_PROFILE", "cfgonly", NULL};
    load_ok(tilde, &cfg);
    assert_string_equal(cfg.creds.access_key_id, "AKIAFIXCFGONLY");
    assert_string_equal(cfg.config_file, config_file);
}

static void test_missing_profile(void **state)
{
    (void)state;
    const char *named[] = {FILES, "AWS_PROFILE", "nope", NULL};
    load_fails(named, SP_E_AUTH, "AWS profile 'nope' (from AWS_PROFILE)", creds_file);
    load_fails(named, SP_E_AUTH, config_file, "[profile nope]");
    /* botocore refuses a missing named profile even when the environment has keys. */
    const char *with_env[] = {FILES, "AWS_DEFAULT_PROFILE", "nope", "AWS_ACCESS_KEY_ID", "AKIA",
                              "AWS_SECRET_ACCESS_KEY", "ENVSECRET", NULL};
    load_fails(with_env, SP_E_AUTH, "'nope' (from AWS_DEFAULT_PROFILE)", NULL);
    /* A config section without "profile " is no profile. */
    const char *unprefixed[] = {FILES, "AWS_PROFILE", "cfgonly-unprefixed", NULL};
    load_fails(unprefixed, SP_E_AUTH, "cfgonly-unprefixed", NULL);
    /* AWS_PROFILE wins over AWS_DEFAULT_PROFILE. */
    const char *both[] = {FILES, "AWS_PROFILE", "dev", "AWS_DEFAULT_PROFILE", "nope", NULL};
    aws_config cfg;
    load_ok(both, &cfg);
    assert_string_equal(cfg.profile, "dev");
}

static void test_nothing_found(void **state)
{
    (void)state;
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", fixture("bad")); /* no .aws under it */
    const char *vars[] = {"HOME", dir, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/creds",
                          NULL};
    aws_config cfg;
    load_ok(vars, &cfg);
    assert_string_equal(cfg.creds.access_key_id, "");
    assert_string_equal(cfg.region, "");
    const char *why = cfg.why_no_creds;
    assert_non_null(strstr(why, "profile 'default'"));
    assert_non_null(strstr(why, "bad/.aws/credentials (no such file)"));
    assert_non_null(strstr(why, "AWS_CONTAINER_CREDENTIALS_* is set"));
    assert_non_null(strstr(why, "instance metadata (IMDS)"));
    const char *no_home[] = {NULL};
    load_ok(no_home, &cfg);
    assert_non_null(strstr(cfg.why_no_creds, "HOME is unset"));
}

/* ---- What skypool does not do, said instead of ignored ----------------------------------------- */

static void expect_unsupported(const char *const *vars, const char *says)
{
    aws_config cfg;
    load_ok(vars, &cfg);
    assert_string_equal(cfg.creds.access_key_id, "");
    if (!strstr(cfg.why_no_creds, says) || !strstr(cfg.why_no_creds, "does not support yet") ||
        !strstr(cfg.why_no_creds, "export AWS_ACCESS_KEY_ID"))
        fail_msg("why_no_creds: %s (wanted ...%s...)", cfg.why_no_creds, says);
}

static void test_unsupported_profiles(void **state)
{
    (void)state;
    const char *role[] = {FILES, "AWS_PROFILE", "role", NULL};
    expect_unsupported(role, "profile 'role' (");
    expect_unsupported(role, "uses role_arn");
    /* botocore assumes the role rather than use the credentials file's keys. */
    const char *role_keys[] = {FILES, "AWS_PROFILE", "role-and-keys", NULL};
    expect_unsupported(role_keys, "uses role_arn");
    const char *proc[] = {FILES, "AWS_PROFILE", "proc", NULL};
    expect_unsupported(proc, "uses credential_process");
    /* credential_process comes before the config file's static keys. */
    const char *proc_keys[] = {FILES, "AWS_PROFILE", "proc-and-keys", NULL};
    expect_unsupported(proc_keys, "uses credential_process");
    const char *sso[] = {FILES, "AWS_PROFILE", "sso", NULL};
    expect_unsupported(sso, "SSO");
    const char *webid[] = {FILES, "AWS_PROFILE", "webid", NULL};
    expect_unsupported(webid, "web_identity_token_file");
    const char *env_webid[] = {FILES, "AWS_WEB_IDENTITY_TOKEN_FILE", "/t", "AWS_ROLE_ARN",
                               "arn:aws:iam::1:role/x", NULL};
    expect_unsupported(env_webid, "AWS_WEB_IDENTITY_TOKEN_FILE");
}

/* ---- Files botocore refuses, and bad values ---------------------------------------------------- */

static void expect_bad_file(const char *rel, int code, const char *says)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s", fixture(rel));
    const char *vars[] = {"AWS_SHARED_CREDENTIALS_FILE", path, NULL};
    load_fails(vars, code, path, says);
}

static void test_files_botocore_refuses(void **state)
{
    (void)state;
    expect_bad_file("bad/dup-section", SP_E_INVALID, "line 5: section [default] appears twice");
    expect_bad_file("bad/dup-key", SP_E_INVALID,
                    "line 4: key 'aws_access_key_id' appears twice");
    expect_bad_file("bad/junk-line", SP_E_INVALID, "line 3: neither a [section]");
    expect_bad_file("bad/no-section", SP_E_INVALID, "line 1: a key before any [section]");
    expect_bad_file("bad/nested-no-equals", SP_E_INVALID, "line 4: the block under 's3'");
    expect_bad_file("", SP_E_IO, "not a regular file"); /* the fixtures directory itself */
}

static void test_bad_values(void **state)
{
    (void)state;
    const char *partial[] = {FILES, "AWS_PROFILE", "partial", NULL};
    load_fails(partial, SP_E_AUTH, "profile 'partial' in", "has aws_access_key_id but no "
                                                           "aws_secret_access_key");
    const char *indented[] = {FILES, "AWS_PROFILE", "indented", NULL};
    load_fails(indented, SP_E_AUTH, "but no aws_secret_access_key", NULL);
    const char *inline_comment[] = {FILES, "AWS_PROFILE", "inline-comment", NULL};
    load_fails(inline_comment, SP_E_AUTH, "aws_access_key_id holds spaces", "own line");
    const char *bad_region[] = {FILES, "AWS_PROFILE", "badregion", NULL};
    load_fails(bad_region, SP_E_INVALID, "holds spaces or more than one line",
               "profile 'badregion'");
    const char *continued[] = {FILES, "AWS_PROFILE", "region-continued", NULL};
    load_fails(continued, SP_E_INVALID, "holds spaces or more than one line", NULL);
}

static void test_big_file_and_permissions(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char path[4096];
    snprintf(path, sizeof(path), "%s/credentials", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("[default]\naws_access_key_id = AKIAFIXTEMP\naws_secret_access_key = tmp-s3cr3t\n", f);
    fclose(f);
    const char *vars[] = {"AWS_SHARED_CREDENTIALS_FILE", path, NULL};
    aws_config cfg;
    assert_int_equal(chmod(path, 0644), 0);
    load_ok(vars, &cfg);
    assert_non_null(strstr(cfg.warning, path));
    assert_non_null(strstr(cfg.warning, "chmod 600"));
    assert_int_equal(chmod(path, 0600), 0);
    load_ok(vars, &cfg);
    assert_string_equal(cfg.warning, "");
    assert_string_equal(cfg.creds.access_key_id, "AKIAFIXTEMP");
    f = fopen(path, "a");
    for (int i = 0; i < 70000; i++)
        fputs("# padding line\n", f);
    fclose(f);
    load_fails(vars, SP_E_INVALID, path, "larger than 1 MiB");
    tu_rmtree(dir);
    free(dir);
}

/* ---- Region ----------------------------------------------------------------------------------- */

static void test_region_precedence(void **state)
{
    (void)state;
    const char *both[] = {FILES, "AWS_REGION", "eu-north-1", "AWS_DEFAULT_REGION", "us-east-2",
                          NULL};
    aws_config cfg;
    load_ok(both, &cfg);
    assert_string_equal(cfg.region, "eu-north-1");
    assert_string_equal(cfg.region_source, "environment (AWS_REGION)");
    const char *dflt[] = {FILES, "AWS_DEFAULT_REGION", "us-east-2", NULL};
    load_ok(dflt, &cfg);
    assert_string_equal(cfg.region, "us-east-2");
    assert_string_equal(cfg.region_source, "environment (AWS_DEFAULT_REGION)");
    const char *profile[] = {FILES, "AWS_PROFILE", "cfgonly", NULL};
    load_ok(profile, &cfg);
    assert_string_equal(cfg.region, "eu-central-1");
    char source[4200];
    snprintf(source, sizeof(source), "profile 'cfgonly' in %s", config_file);
    assert_string_equal(cfg.region_source, source);
    const char *bad[] = {"AWS_REGION", "US_EAST_1", NULL};
    load_fails(bad, SP_E_INVALID, "'US_EAST_1' from environment (AWS_REGION)", NULL);
    const char *spaced[] = {"AWS_DEFAULT_REGION", "us-east-1 ENVSECRET", NULL};
    load_fails(spaced, SP_E_INVALID, "from environment (AWS_DEFAULT_REGION) holds spaces", NULL);
}

/* ---- Endpoints -------------------------------------------------------------------------------- */

static void expect_endpoint(const char *const *vars, const char *service, const char *region,
                            const char *want)
{
    fake_env e = make_env(vars);
    char buf[256];
    sp_err err = {0};
    int rc = aws_endpoint(&e.host, service, region, buf, sizeof(buf), &err);
    if (rc != SP_OK)
        fail_msg("aws_endpoint(%s, %s): %s", service, region, err.msg);
    assert_string_equal(buf, want);
}

static void expect_endpoint_error(const char *const *vars, const char *service,
                                  const char *region, size_t size, const char *says)
{
    fake_env e = make_env(vars);
    char buf[256];
    sp_err err = {0};
    assert_int_equal(aws_endpoint(&e.host, service, region, buf, size, &err), SP_E_INVALID);
    if (!strstr(err.msg, says))
        fail_msg("'%s' does not say '%s'", err.msg, says);
}

static void test_endpoints(void **state)
{
    (void)state;
    const char *none[] = {NULL};
    expect_endpoint(none, "ec2", "us-east-1", "https://ec2.us-east-1.amazonaws.com");
    expect_endpoint(none, "servicequotas", "eu-west-1",
                    "https://servicequotas.eu-west-1.amazonaws.com");
    expect_endpoint(none, "sts", "cn-north-1", "https://sts.cn-north-1.amazonaws.com.cn");
    const char *vars[] = {"AWS_ENDPOINT_URL_EC2", "http://127.0.0.1:5000/", "AWS_ENDPOINT_URL",
                          "http://localhost:4566", NULL};
    expect_endpoint(vars, "ec2", "us-east-1", "http://127.0.0.1:5000");
    expect_endpoint(vars, "servicequotas", "us-east-1", "http://localhost:4566");
    expect_endpoint(vars, "sts", NULL, "http://localhost:4566");
    const char *sq[] = {"AWS_ENDPOINT_URL_SERVICE_QUOTAS", "https://sq.example:8443/base/",
                        "AWS_ENDPOINT_URL_EC2", "", NULL};
    expect_endpoint(sq, "servicequotas", "us-east-1", "https://sq.example:8443/base");
    expect_endpoint(sq, "ec2", "us-east-1", "https://ec2.us-east-1.amazonaws.com");
    const char *ignored[] = {"AWS_ENDPOINT_URL_EC2", "http://127.0.0.1:5000",
                             "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "True", NULL};
    expect_endpoint(ignored, "ec2", "us-east-1", "https://ec2.us-east-1.amazonaws.com");

    const char *bad[] = {"AWS_ENDPOINT_URL", "localhost:4566", NULL};
    expect_endpoint_error(bad, "ec2", "us-east-1", 256, "AWS_ENDPOINT_URL is not an http");
    expect_endpoint_error(none, "ec2", NULL, 256, "no AWS region for ec2");
    expect_endpoint_error(none, "ec2", "US-EAST-1", 256, "not an AWS region name");
    expect_endpoint_error(none, "s3", "us-east-1", 256, "no AWS endpoint for service 's3'");
    expect_endpoint_error(none, "ec2", "us-east-1", 16, "does not fit");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env_creds_win),
        cmocka_unit_test(test_env_legacy_token_first),
        cmocka_unit_test(test_env_partial),
        cmocka_unit_test(test_profiles_from_credentials_file),
        cmocka_unit_test(test_profiles_from_config_file),
        cmocka_unit_test(test_default_section_inherited),
        cmocka_unit_test(test_home_paths),
        cmocka_unit_test(test_missing_profile),
        cmocka_unit_test(test_nothing_found),
        cmocka_unit_test(test_unsupported_profiles),
        cmocka_unit_test(test_files_botocore_refuses),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_big_file_and_permissions),
        cmocka_unit_test(test_region_precedence),
        cmocka_unit_test(test_endpoints),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
