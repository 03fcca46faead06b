/* Our three provider plugins, driven through the ABI with a scripted fake host. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fake_host.h"

#include <string.h>

static const char *h100[] = {"H100-SXM", "H100-PCIe", "H100-NVL"};

static sp_offer_query query(unsigned lo, unsigned hi, int spot, int exact)
{
    sp_offer_query q = {.struct_size = sizeof(q), .models = h100, .n_models = 3,
                        .count_min = lo, .count_max = hi, .want_spot = spot, .exact = exact};
    return q;
}

static void expect_catalog(const char *provider, unsigned lo, unsigned hi, int spot, int n)
{
    expect_string(fake_catalog_query, provider, provider);
    expect_value(fake_catalog_query, q->count_min, lo);
    expect_value(fake_catalog_query, q->count_max, hi);
    expect_value(fake_catalog_query, q->want_spot, spot);
    will_return(fake_catalog_query, n);
}

/* The "does it sell these models at all" probe a provider makes before explaining itself. */
static void expect_probe(const char *provider, int n)
{
    expect_catalog(provider, 1, UINT32_MAX, 0, n);
}

/* Runs one offers call on a freshly loaded provider and returns what it emitted. */
static void run(const char *provider, sp_offer_query q, fake_sink *out)
{
    sp_registry reg;
    sp_plugin p;
    sp_err err = {0};
    fake_host_init(&reg);
    fake_host_load(&reg, provider, &p);
    fake_sink_init(out);
    assert_int_equal(p.table.offers(p.ctx, &q, &out->sink, &err), SP_OK);
    sp_plugin_unload(&p);
}

static void assert_note(const fake_sink *s, const char *needle)
{
    for (int i = 0; i < s->n_notes; i++)
        if (strstr(s->notes[i], needle))
            return;
    fail_msg("no note contains '%s' (%d notes)", needle, s->n_notes);
}

static void test_aws_passes_query_to_its_catalog(void **state)
{
    (void)state;
    fake_sink s;
    expect_catalog("aws", 8, 8, 1, 3);
    run("aws", query(8, 8, 1, 0), &s);
    assert_int_equal(s.offers, 3);
    assert_int_equal(s.n_notes, 0);
}

static void test_digitalocean_has_no_spot(void **state)
{
    (void)state;
    fake_sink s;
    expect_probe("digitalocean", 2);
    run("digitalocean", query(8, 8, 1, 0), &s);
    assert_int_equal(s.offers, 0);
    assert_note(&s, "no spot market");
}

/* Of a model it does not sell, a provider says nothing: the host explains "has no X". */
static void test_silent_about_models_not_sold(void **state)
{
    (void)state;
    fake_sink s;
    expect_probe("digitalocean", 0);
    run("digitalocean", query(4, 4, 1, 0), &s);
    assert_int_equal(s.offers + s.n_notes, 0);
    expect_probe("modal", 0);
    run("modal", query(16, 16, 1, 0), &s);
    assert_int_equal(s.offers + s.n_notes, 0);
}

static void test_digitalocean_counts(void **state)
{
    (void)state;
    fake_sink s;
    expect_probe("digitalocean", 2);
    run("digitalocean", query(4, 4, 0, 0), &s);
    assert_int_equal(s.offers, 0);
    assert_note(&s, "1 or 8 GPUs, not 4");
    expect_probe("digitalocean", 2);
    run("digitalocean", query(2, 7, 0, 0), &s);
    assert_note(&s, "not 2..7");
    expect_probe("digitalocean", 2);
    expect_catalog("digitalocean", 8, 8, 0, 2);
    run("digitalocean", query(8, 8, 0, 0), &s);
    assert_int_equal(s.offers, 2);
    expect_probe("digitalocean", 2);
    expect_catalog("digitalocean", 4, 8, 0, 1);
    run("digitalocean", query(4, 8, 0, 0), &s);
    assert_int_equal(s.offers, 1);
}

static void test_modal_limits_and_upgrades(void **state)
{
    (void)state;
    fake_sink s;
    expect_probe("modal", 8);
    run("modal", query(16, 16, 0, 0), &s);
    assert_int_equal(s.offers, 0);
    assert_note(&s, "at most 8 GPUs, not 16");
    expect_probe("modal", 8);
    run("modal", query(1, 1, 1, 0), &s);
    assert_note(&s, "no spot market");
    expect_probe("modal", 8);
    expect_catalog("modal", 8, 8, 0, 1);
    run("modal", query(8, 8, 0, 0), &s);
    assert_int_equal(s.offers, 1);
    assert_note(&s, "H100! to forbid");
    expect_probe("modal", 8);
    expect_catalog("modal", 8, 8, 0, 1);
    run("modal", query(8, 8, 0, 1), &s);
    assert_int_equal(s.n_notes, 0); /* "!" asked: no upgrade to warn of */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aws_passes_query_to_its_catalog),
        cmocka_unit_test(test_digitalocean_has_no_spot),
        cmocka_unit_test(test_digitalocean_counts),
        cmocka_unit_test(test_silent_about_models_not_sold),
        cmocka_unit_test(test_modal_limits_and_upgrades),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
