/* The skypool command as a user runs it: outputs, JSON, exit codes and error messages. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "testutil.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct result {
    int rc;
    char *out;
} result;

/* Runs `skypool ARGS` from the source root with our providers. stderr joins stdout when
 * merge is set. */
static result sk(const char *args, int merge)
{
    char cmd[4096];
    const char *bin = getenv("SKYPOOL_BIN");
    const char *build = getenv("SKYPOOL_BUILD_DIR");
    snprintf(cmd, sizeof(cmd), "cd '%s' && SKYPOOL_PLUGIN_PATH='%s/providers' '%s' %s",
             tu_source_dir(), build ? build : "build", bin ? bin : "build/core/skypool", args);
    result r;
    r.rc = tu_run(cmd, &r.out, merge);
    assert_non_null(r.out);
    return r;
}

static void expect(result r, int rc, const char *needle)
{
    if (r.rc != rc)
        fail_msg("exit %d, want %d; output:\n%s", r.rc, rc, r.out);
    if (needle && !strstr(r.out, needle))
        fail_msg("'%s' not in output:\n%s", needle, r.out);
    free(r.out);
}

static json_t *json_of(result r, int rc)
{
    if (r.rc != rc)
        fail_msg("exit %d, want %d; output:\n%s", r.rc, rc, r.out);
    json_error_t e;
    json_t *j = json_loads(r.out, 0, &e);
    if (!j)
        fail_msg("not JSON (%s at line %d):\n%s", e.text, e.line, r.out);
    free(r.out);
    return j;
}

static void test_offers_spot_ranked(void **state)
{
    (void)state;
    json_t *j = json_of(sk("offers H100:8 --spot --json", 0), 0);
    json_t *offers = json_object_get(j, "offers");
    assert_true(json_array_size(offers) > 5);
    double prev = 0;
    size_t i;
    json_t *o;
    json_array_foreach(offers, i, o) {
        double p = json_real_value(json_object_get(o, "node_price"));
        assert_true(p >= prev); /* cheapest first */
        prev = p;
        assert_string_equal(json_string_value(json_object_get(o, "market")), "spot");
        assert_int_equal(json_integer_value(json_object_get(o, "accelerator_count")), 8);
        assert_true(json_real_value(json_object_get(o, "price_spot")) ==
                    json_real_value(json_object_get(o, "node_price")));
    }
    /* DigitalOcean and Modal sell no spot: they explain, they do not vanish. */
    json_t *notes = json_object_get(j, "notes");
    assert_int_equal(json_array_size(notes), 2);
    json_decref(j);
    expect(sk("offers H100:8 --spot", 0), 0, "p5.48xlarge");
}

static void test_offers_json_a100_80(void **state)
{
    (void)state;
    json_t *j = json_of(sk("offers 'A100-80GB:8' --json", 0), 0);
    assert_string_equal(json_string_value(json_object_get(j, "canonical")),
                        "NVIDIA A100 80GB SXM4 x8");
    json_t *offers = json_object_get(j, "offers"), *o;
    size_t i, providers_seen = 0;
    bool modal = false, aws = false;
    assert_true(json_array_size(offers) > 0);
    json_array_foreach(offers, i, o) {
        assert_string_equal(json_string_value(json_object_get(o, "accelerator")), "A100-80GB");
        const char *p = json_string_value(json_object_get(o, "provider"));
        modal |= strcmp(p, "modal") == 0;
        aws |= strcmp(p, "aws") == 0;
    }
    providers_seen = (size_t)modal + (size_t)aws;
    assert_int_equal(providers_seen, 2); /* p4de on AWS, A100-80GB:8 on Modal */
    json_decref(j);
}

static void test_offers_errors(void **state)
{
    (void)state;
    expect(sk("offers H10:8", 1), 3, "unknown accelerator 'H10'; did you mean H100?");
    expect(sk("offers", 1), 2, "one accelerator spec");
    expect(sk("offers H100:8 --provider awz", 1), 2, "unknown provider 'awz'; did you mean aws?");
    expect(sk("offers H100:8 --nodes 0", 1), 2, "--nodes");
    expect(sk("offers H100:3 --provider digitalocean", 1), 4,
           "DigitalOcean GPU droplets have 1 or 8 GPUs, not 3");
    expect(sk("offers H100:16 --provider modal", 1), 4, "at most 8 GPUs, not 16");
    expect(sk("offers H100:16 --provider aws", 1), 4, "has H100 only with 1, 8 per node, not 16");
}

/* Neuron devices are counted in devices, with their NeuronCores. */
static void test_offers_neuron(void **state)
{
    (void)state;
    expect(sk("offers trn1:16 --provider aws --limit 1", 0), 0,
           "16x Trainium 32GB (32 NeuronCores)");
    json_t *j = json_of(sk("offers inf2:12 --json", 0), 0);
    json_t *o = json_array_get(json_object_get(j, "offers"), 0);
    assert_non_null(o);
    assert_string_equal(json_string_value(json_object_get(o, "accelerator")), "Inferentia2");
    assert_int_equal(json_integer_value(json_object_get(o, "neuron_cores_per_device")), 2);
    /* Providers that sell no Neuron devices say only that, not why not 12 of them. */
    json_t *notes = json_object_get(j, "notes");
    assert_int_equal(json_array_size(notes), 2);
    assert_string_equal(json_string_value(json_array_get(notes, 0)),
                        "digitalocean: has no inf2");
    json_decref(j);
}

static void test_offers_filters(void **state)
{
    (void)state;
    json_t *j = json_of(sk("offers H100:8 --region us-west-2,us-east-1 --provider aws --json", 0), 0);
    json_t *o;
    size_t i;
    json_array_foreach(json_object_get(j, "offers"), i, o) {
        const char *r = json_string_value(json_object_get(o, "region"));
        assert_true(strcmp(r, "us-west-2") == 0 || strcmp(r, "us-east-1") == 0);
        assert_string_equal(json_string_value(json_object_get(o, "provider")), "aws");
    }
    assert_true(i > 0);
    json_decref(j);
    /* Form factor is real: no provider sells H100 PCIe in the catalogs. */
    expect(sk("offers H100-PCIe:8", 0), 4, "no offers match");
}

/* A MIG layout keeps only GPUs that can take it, on providers that can set it up. */
static void test_offers_mig(void **state)
{
    (void)state;
    json_t *j = json_of(sk("offers '{A100:80GB:8, L4:8}' --mig 3g.40gb --json", 0), 0);
    json_t *o;
    size_t i;
    json_array_foreach(json_object_get(j, "offers"), i, o) {
        assert_string_equal(json_string_value(json_object_get(o, "accelerator")), "A100-80GB");
        assert_string_not_equal(json_string_value(json_object_get(o, "provider")), "modal");
    }
    assert_true(i > 0);
    bool modal_note = false;
    json_array_foreach(json_object_get(j, "notes"), i, o)
        modal_note |= strstr(json_string_value(o), "modal: cannot partition GPUs") != NULL;
    assert_true(modal_note);
    json_decref(j);
    expect(sk("offers L4:8 --mig 3g.40gb", 0), 4, "cannot take the MIG layout");
}

static void test_validate(void **state)
{
    (void)state;
    expect(sk("validate examples/pool.yaml examples/quickstart.yaml examples/do-pool.yaml", 0), 0,
           "ok (pool");
    result r = sk("validate tests/fixtures/pools/bad-accelerator-count.yaml", 1);
    assert_int_equal(r.rc, 3);
    assert_non_null(strstr(r.out, "bad-accelerator-count.yaml:"));
    assert_non_null(strstr(r.out, "resources.accelerators"));
    free(r.out);
    expect(sk("validate /nonexistent.yaml", 1), 1, "/nonexistent.yaml");
}

static void test_plan(void **state)
{
    (void)state;
    expect(sk("plan examples/quickstart.yaml", 0), 0, "budget: within $120.00/h");
    json_t *j = json_of(sk("plan examples/pool.yaml --json", 0), 0);
    assert_string_equal(json_string_value(json_object_get(j, "budget")), "within");
    json_t *c = json_object_get(j, "candidates"), *o;
    size_t i;
    assert_true(json_array_size(c) > 0);
    double budget = json_real_value(json_object_get(j, "max_hourly_usd"));
    json_int_t nodes = json_integer_value(json_object_get(j, "nodes"));
    json_array_foreach(c, i, o) {
        double node = json_real_value(json_object_get(o, "node_price"));
        double total = json_real_value(json_object_get(o, "total_price"));
        assert_true(total > node * (double)nodes - 1e-6 && total < node * (double)nodes + 1e-6);
        assert_int_equal(json_is_true(json_object_get(o, "within_budget")), total <= budget);
    }
    json_decref(j);
}

static void test_plan_over_budget(void **state)
{
    (void)state;
    char *dir = tu_mkdtemp();
    char path[4200], args[4400];
    snprintf(path, sizeof(path), "%s/cheap.yaml", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("name: cheap\nnodes: 4\nresources:\n  accelerators: H100:8\nmax_hourly_usd: 5\n", f);
    fclose(f);
    snprintf(args, sizeof(args), "plan '%s'", path);
    expect(sk(args, 0), 5, "budget: OVER");
    tu_rmtree(dir);
    free(dir);
}

static void test_providers_and_catalog(void **state)
{
    (void)state;
    json_t *j = json_of(sk("providers --json", 0), 0);
    json_t *p = json_object_get(j, "providers");
    assert_int_equal(json_array_size(p), 3);
    assert_int_equal(json_integer_value(json_object_get(j, "abi_major")), 1);
    json_decref(j);
    expect(sk("catalog", 0), 0, "skypilot-org/skypilot-catalog");
    j = json_of(sk("catalog --json", 0), 0);
    assert_int_equal(json_array_size(json_object_get(j, "catalogs")), 3);
    json_decref(j);
}

static void test_dispatch(void **state)
{
    (void)state;
    expect(sk("ofers H100", 1), 2, "did you mean offers?");
    expect(sk("p", 1), 2, "ambiguous"); /* plan, providers */
    expect(sk("acc", 0), 0, "H100-NVL");     /* unique prefix */
    expect(sk("--version", 0), 0, "provider ABI 1.2");
    expect(sk("", 1), 2, "usage: skypool");
    const char *cmds[] = {"offers", "plan",  "quota",     "up",      "status",      "down",
                          "ls",     "validate", "check", "providers", "catalog", "accelerators"};
    for (size_t i = 0; i < 12; i++) {
        char args[64];
        snprintf(args, sizeof(args), "%s --help", cmds[i]);
        expect(sk(args, 0), 0, "usage: skypool");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_offers_spot_ranked), cmocka_unit_test(test_offers_json_a100_80),
        cmocka_unit_test(test_offers_errors),      cmocka_unit_test(test_offers_filters),
        cmocka_unit_test(test_offers_mig),
        cmocka_unit_test(test_offers_neuron),
        cmocka_unit_test(test_validate),           cmocka_unit_test(test_plan),
        cmocka_unit_test(test_plan_over_budget),   cmocka_unit_test(test_providers_and_catalog),
        cmocka_unit_test(test_dispatch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
