/* The plugin loader: every refusal the ABI promises, and what a good plugin gets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "registry.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *fixture(int variant)
{
    static char path[4096];
    const char *build = getenv("SKYPOOL_BUILD_DIR");
    snprintf(path, sizeof(path), "%s/tests/fixture-plugins/fixture%d.so", build ? build : "build",
             variant);
    return path;
}

static int setup(void **state)
{
    sp_registry *reg = calloc(1, sizeof(*reg));
    sp_err err = {0};
    assert_non_null(reg);
    assert_int_equal(sp_host_init(reg, &err), SP_OK);
    *state = reg;
    return 0;
}

static int teardown(void **state)
{
    sp_registry *reg = *state;
    sp_host_fini(reg);
    free(reg);
    return 0;
}

static int count_offer(sp_offer_sink *sink, const sp_offer *o)
{
    (*(int *)sink->opaque)++;
    assert_string_equal(o->accelerator, "H100-SXM");
    return SP_OK;
}

static int ignore_note(sp_offer_sink *sink, const char *m)
{
    (void)sink;
    (void)m;
    return SP_OK;
}

static void call_offers(const sp_plugin *p)
{
    int n = 0;
    sp_offer_sink sink = {sizeof(sink), &n, count_offer, ignore_note};
    sp_offer_query q = {.struct_size = sizeof(q), .count_min = 1, .count_max = 8};
    sp_err err = {0};
    assert_non_null(p->table.offers);
    assert_int_equal(p->table.offers(p->ctx, &q, &sink, &err), SP_OK);
    assert_int_equal(n, 1);
}

static void test_good_plugin_loads(void **state)
{
    sp_plugin p;
    sp_err err = {0};
    assert_int_equal(sp_plugin_load(*state, fixture(0), &p, &err), SP_OK);
    assert_string_equal(p.table.name, "fixture");
    assert_string_equal(p.table.version, "9.9");
    assert_int_equal(p.table_size, sizeof(sp_provider));
    assert_null(p.table.launch); /* absent operations read as NULL */
    call_offers(&p);
    sp_plugin_unload(&p);
}

static void expect_refusal(void *reg, int variant, int code, const char *const *needles)
{
    sp_plugin p;
    sp_err err = {0};
    assert_int_equal(sp_plugin_load(reg, fixture(variant), &p, &err), code);
    assert_int_equal(err.code, code);
    assert_non_null(strstr(err.msg, fixture(variant)));
    for (; *needles; needles++) {
        if (!strstr(err.msg, *needles))
            fail_msg("'%s' not in: %s", *needles, err.msg);
    }
    assert_null(p.dl);
}

static void test_other_abi_major_refused(void **state)
{
    const char *n[] = {"ABI 2", "ABI 1", "rebuild", NULL};
    expect_refusal(*state, 1, SP_E_ABI, n);
}

static void test_short_table_refused(void **state)
{
    char need[64];
    snprintf(need, sizeof(need), "%zu", offsetof(sp_provider, exec) + sizeof(void *));
    const char *n[] = {"16 bytes", need, NULL};
    expect_refusal(*state, 2, SP_E_ABI, n);
}

static void test_missing_entry_refused(void **state)
{
    const char *n[] = {"sp_provider_init", NULL};
    expect_refusal(*state, 3, SP_E_ABI, n);
}

static void test_init_failure_reported(void **state)
{
    const char *n[] = {"no credentials for the lab", NULL};
    expect_refusal(*state, 4, SP_E_AUTH, n);
}

static void test_invalid_name_refused(void **state)
{
    const char *n[] = {"provider name", NULL};
    expect_refusal(*state, 6, SP_E_ABI, n);
}

static void test_newer_minor_accepted(void **state)
{
    sp_plugin p;
    sp_err err = {0};
    assert_int_equal(sp_plugin_load(*state, fixture(5), &p, &err), SP_OK);
    assert_true(p.table_size > sizeof(sp_provider));
    call_offers(&p);
    sp_plugin_unload(&p);
}

static char *copy_fixture_to(const char *dir, mode_t dir_mode, mode_t file_mode)
{
    static char dst[4200];
    char cmd[8500];
    snprintf(dst, sizeof(dst), "%s/lab.so", dir);
    snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", fixture(0), dst);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(chmod(dst, file_mode), 0);
    assert_int_equal(chmod(dir, dir_mode), 0);
    return dst;
}

static void test_world_writable_file_refused(void **state)
{
    char *dir = tu_mkdtemp();
    char *path = copy_fixture_to(dir, 0700, 0666);
    sp_plugin p;
    sp_err err = {0};
    assert_int_equal(sp_plugin_load(*state, path, &p, &err), SP_E_PERM);
    assert_non_null(strstr(err.msg, "world-writable"));
    assert_non_null(strstr(err.msg, "chmod o-w"));
    assert_non_null(strstr(err.msg, path));
    /* The same file, once fixed, loads. */
    assert_int_equal(chmod(path, 0644), 0);
    assert_int_equal(sp_plugin_load(*state, path, &p, &err), SP_OK);
    sp_plugin_unload(&p);
    tu_rmtree(dir);
    free(dir);
}

static void test_world_writable_dir_refused(void **state)
{
    char *dir = tu_mkdtemp();
    char *path = copy_fixture_to(dir, 0777, 0644);
    sp_plugin p;
    sp_err err = {0};
    assert_int_equal(sp_plugin_load(*state, path, &p, &err), SP_E_PERM);
    assert_non_null(strstr(err.msg, "world-writable directory"));
    assert_non_null(strstr(err.msg, dir));
    assert_int_equal(chmod(dir, 0700), 0);
    tu_rmtree(dir);
    free(dir);
}

static void test_missing_file(void **state)
{
    sp_plugin p;
    sp_err err = {0};
    assert_int_equal(sp_plugin_load(*state, "/nonexistent/x.so", &p, &err), SP_E_IO);
    assert_non_null(strstr(err.msg, "/nonexistent/x.so"));
}

static void test_not_a_shared_object(void **state)
{
    sp_plugin p;
    sp_err err = {0};
    const char *src = tu_source_path("CMakeLists.txt");
    assert_int_equal(sp_plugin_load(*state, src, &p, &err), SP_E_ABI);
    assert_non_null(strstr(err.msg, "could not be loaded"));
}

/* The registry walks SKYPOOL_PLUGIN_PATH, keeps the good, lists every refusal once. */
static void test_registry_search_path(void **state)
{
    (void)state;
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", fixture(0));
    *strrchr(dir, '/') = '\0';
    setenv("SKYPOOL_PLUGIN_PATH", dir, 1);
    sp_registry reg;
    sp_err err = {0};
    assert_int_equal(sp_registry_open(&reg, &err), SP_OK);
    const sp_plugin *p = sp_registry_find(&reg, "fixture");
    assert_non_null(p);
    /* fixture0 and fixture5 share a name: the first (by file name) wins. */
    assert_non_null(strstr(p->path, "fixture0.so"));
    size_t refusals_from_fixtures = 0, duplicate = 0;
    for (size_t i = 0; i < reg.n_refused; i++) {
        refusals_from_fixtures += strstr(reg.refused[i], "fixture-plugins") != NULL;
        duplicate += strstr(reg.refused[i], "already loaded") != NULL;
    }
    assert_int_equal(refusals_from_fixtures, 6); /* 1, 2, 3, 4, 6 and the duplicate 5 */
    assert_int_equal(duplicate, 1);
    sp_registry_close(&reg);
    unsetenv("SKYPOOL_PLUGIN_PATH");
}

static void test_our_providers_load(void **state)
{
    (void)state;
    char dir[4096];
    const char *build = getenv("SKYPOOL_BUILD_DIR");
    snprintf(dir, sizeof(dir), "%s/providers", build ? build : "build");
    setenv("SKYPOOL_PLUGIN_PATH", dir, 1);
    sp_registry reg;
    sp_err err = {0};
    assert_int_equal(sp_registry_open(&reg, &err), SP_OK);
    const char *names[] = {"aws", "digitalocean", "modal"};
    for (size_t i = 0; i < 3; i++) {
        const sp_plugin *p = sp_registry_find(&reg, names[i]);
        if (!p)
            fail_msg("provider %s not loaded from %s", names[i], dir);
        assert_int_equal(p->table.abi_major, SP_PROVIDER_ABI_MAJOR);
        assert_non_null(p->table.offers);
    }
    assert_int_equal(sp_registry_find(&reg, "modal")->table.kind, SP_KIND_CONTAINER_EXEC);
    assert_int_equal(sp_registry_find(&reg, "aws")->table.kind, SP_KIND_VM_SSH);
    sp_registry_close(&reg);
    unsetenv("SKYPOOL_PLUGIN_PATH");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_good_plugin_loads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_other_abi_major_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_short_table_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_entry_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_init_failure_reported, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_name_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_newer_minor_accepted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_world_writable_file_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_world_writable_dir_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_a_shared_object, setup, teardown),
        cmocka_unit_test(test_registry_search_path),
        cmocka_unit_test(test_our_providers_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
