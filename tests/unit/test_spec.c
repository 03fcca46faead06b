/* The accelerator spec grammar: tables of valid specs with their canonical form, invalid specs
 * with the error they must give, and properties that hold for every known name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "accel.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

typedef struct valid_case {
    const char *text;
    const char *canonical;
} valid_case;

static const valid_case valid[] = {
    {"H100-SXM:8", "NVIDIA H100 80GB SXM5 x8"},
    {"h100-sxm:8", "NVIDIA H100 80GB SXM5 x8"},
    {"H100-SXM5:8", "NVIDIA H100 80GB SXM5 x8"},
    {"H100:8", "NVIDIA H100 (80GB SXM5 | 80GB PCIe | NVL 94GB) x8"},
    {"H100", "NVIDIA H100 (80GB SXM5 | 80GB PCIe | NVL 94GB) x1"},
    {"H100-PCIe:2", "NVIDIA H100 80GB PCIe x2"},
    {"h100-pcie", "NVIDIA H100 80GB PCIe x1"},
    {"H100-NVL:2", "NVIDIA H100 NVL 94GB x2"},
    {"H100:94GB", "NVIDIA H100 NVL 94GB x1"},
    {"H100:80GB:8", "NVIDIA H100 (80GB SXM5 | 80GB PCIe) x8"},
    {"H100:8:80GB", "NVIDIA H100 (80GB SXM5 | 80GB PCIe) x8"},
    {"H100:90GB+", "NVIDIA H100 NVL 94GB x1"},
    {"H100!", "NVIDIA H100 (80GB SXM5 | 80GB PCIe | NVL 94GB) x1 (exact)"},
    {"H100!:8", "NVIDIA H100 (80GB SXM5 | 80GB PCIe | NVL 94GB) x8 (exact)"},
    {"H100:1..8", "NVIDIA H100 (80GB SXM5 | 80GB PCIe | NVL 94GB) x1..8"},
    {"H100-SXM!:2..4", "NVIDIA H100 80GB SXM5 x2..4 (exact)"},
    {"H200:8", "NVIDIA H200 141GB SXM5 x8"},
    {"h200", "NVIDIA H200 141GB SXM5 x1"},
    {"B200:8", "NVIDIA B200 180GB SXM6 x8"},
    {"B300:8", "NVIDIA B300 288GB SXM6 x8"},
    {"A100", "NVIDIA A100 40GB SXM4 x1"},
    {"A100:8", "NVIDIA A100 40GB SXM4 x8"},
    {"A100-40GB:8", "NVIDIA A100 40GB SXM4 x8"},
    {"A100-80GB:8", "NVIDIA A100 80GB SXM4 x8"},
    {"A100:80GB", "NVIDIA A100 80GB SXM4 x1"},
    {"A100:80GB:8", "NVIDIA A100 80GB SXM4 x8"},
    {"A100:40GB+", "NVIDIA A100 (40GB SXM4 | 80GB SXM4) x1"},
    {"A100:41GB+", "NVIDIA A100 80GB SXM4 x1"},
    {"A100:40GiB", "NVIDIA A100 40GB SXM4 x1"},
    {"a100-80gb:4", "NVIDIA A100 80GB SXM4 x4"},
    {"V100", "NVIDIA V100 16GB SXM2 x1"},
    {"V100:8", "NVIDIA V100 16GB SXM2 x8"},
    {"V100-32GB:8", "NVIDIA V100 32GB SXM2 x8"},
    {"V100:32GB:8", "NVIDIA V100 32GB SXM2 x8"},
    {"V100-16GB", "NVIDIA V100 16GB SXM2 x1"},
    {"T4", "NVIDIA T4 16GB PCIe x1"},
    {"T4:4", "NVIDIA T4 16GB PCIe x4"},
    {"t4g:2", "NVIDIA T4G 16GB PCIe x2"},
    {"L4:8", "NVIDIA L4 24GB PCIe x8"},
    {"L40S:4", "NVIDIA L40S 48GB PCIe x4"},
    {"l40s", "NVIDIA L40S 48GB PCIe x1"},
    {"A10G", "NVIDIA A10G 24GB PCIe x1"},
    {"A10:4", "NVIDIA A10G 24GB PCIe x4"},
    {"a10g:8", "NVIDIA A10G 24GB PCIe x8"},
    {"RTX4000-Ada", "NVIDIA RTX 4000 Ada 20GB PCIe x1"},
    {"RTX6000-Ada", "NVIDIA RTX 6000 Ada 48GB PCIe x1"},
    {"MI300X:8", "AMD Instinct MI300X 192GB OAM x8"},
    {"mi300x", "AMD Instinct MI300X 192GB OAM x1"},
    {"Gaudi:8", "Habana Gaudi HL-205 32GB OAM x8"},
    {"Trainium:16", "AWS Trainium 32GB x16"},
    {"trn1:16", "AWS Trainium 32GB x16"},
    {"TRN1:1", "AWS Trainium 32GB x1"},
    {"Trainium2:16", "AWS Trainium2 96GB x16"},
    {"trn2:16", "AWS Trainium2 96GB x16"},
    {"inf2:12", "AWS Inferentia2 32GB x12"},
    {"Inferentia2:1", "AWS Inferentia2 32GB x1"},
    {"inf1:16", "AWS Inferentia 8GB x16"},
    {"24GB+", "NVIDIA GPU with >=24GB x1"},
    {"24GB+:4", "NVIDIA GPU with >=24GB x4"},
    {"80GB+:8", "NVIDIA GPU with >=80GB x8"},
    {"141GB:8", "NVIDIA H200 141GB SXM5 x8"},
    {"  H100:8  ", "NVIDIA H100 (80GB SXM5 | 80GB PCIe | NVL 94GB) x8"},
    {"H100:1024", "NVIDIA H100 (80GB SXM5 | 80GB PCIe | NVL 94GB) x1024"},
    {"H100:8..8", "NVIDIA H100 (80GB SXM5 | 80GB PCIe | NVL 94GB) x8"},
    {"[H100:8, A100-80GB:8]",
     "[NVIDIA H100 (80GB SXM5 | 80GB PCIe | NVL 94GB) x8, NVIDIA A100 80GB SXM4 x8]"},
    {"H100:8,A100-80GB:8",
     "[NVIDIA H100 (80GB SXM5 | 80GB PCIe | NVL 94GB) x8, NVIDIA A100 80GB SXM4 x8]"},
    {"{H100:8, A100:80GB:8}",
     "{NVIDIA H100 (80GB SXM5 | 80GB PCIe | NVL 94GB) x8, NVIDIA A100 80GB SXM4 x8}"},
    {"{L4:1}", "{NVIDIA L4 24GB PCIe x1}"},
    {"[T4]", "[NVIDIA T4 16GB PCIe x1]"},
    {"[H200:8,H100-SXM:8,A100-80GB:8]",
     "[NVIDIA H200 141GB SXM5 x8, NVIDIA H100 80GB SXM5 x8, NVIDIA A100 80GB SXM4 x8]"},
    {"{ L4:4 , A10G:4 , L40S:4 }",
     "{NVIDIA L4 24GB PCIe x4, NVIDIA A10G 24GB PCIe x4, NVIDIA L40S 48GB PCIe x4}"},
};

typedef struct invalid_case {
    const char *text;
    const char *error; /* a substring of the message */
} invalid_case;

static const invalid_case invalid[] = {
    {"", "empty accelerator spec"},
    {"   ", "empty accelerator spec"},
    {"H10", "unknown accelerator 'H10'; did you mean H100?"},
    {"H10:8", "column 1: unknown accelerator 'H10'; did you mean H100?"},
    {"H1000", "did you mean H100?"},
    {"A1000:8", "did you mean A100?"},
    {"H20", "did you mean H200?"},
    {"B20", "did you mean B200?"},
    {"Traininum", "did you mean Trainium?"},
    {"inf3", "did you mean inf1?"},
    {"X:8", "unknown accelerator 'X'; `skypool accelerators`"},
    {"RTX9999", "unknown accelerator 'RTX9999'"},
    {"H100:0", "column 6: count must be 1 to 1024"},
    {"H100:1025", "count must be 1 to 1024"},
    {"H100:9..2", "count must be 1 to 1024, with the range's low end first"},
    {"H100:0..8", "count must be 1 to 1024"},
    {"H100:1..", "a count range needs an upper bound"},
    {"H100:8x", "column 7: unexpected 'x' after the count"},
    {"H100:eight", "'eight' is neither a count nor a memory size"},
    {"H100:", "empty item after ':'"},
    {"H100::8", "empty item after ':'"},
    {"H100:8:4", "count given twice"},
    {"H100:80GB:80GB", "memory given twice"},
    {"A100:48GB", "no A100 has 48GB of memory per device"},
    {"H100:200GB+", "no H100 has at least 200GB"},
    {"T4:32GB", "no T4 has 32GB"},
    {"300TB+", "no NVIDIA GPU has at least 307200GB"},
    {"1TB+", "no NVIDIA GPU has at least 1024GB"},
    {"25GB", "no NVIDIA GPU has 25GB"},
    {"H100+", "'+' belongs after a memory size"},
    {"H100:8GB+x", "column 7: unexpected 'GB+x' after the count"},
    {"H100 :8", "unexpected ' '"},
    {"H100!!", "unexpected '!'"},
    {"H100;8", "unexpected ';'"},
    {"[H100", "'[' is not closed by ']'"},
    {"{H100:8", "'{' is not closed by '}'"},
    {"[H100:8}", "'[' is not closed by ']'"},
    {"H100:8]", "']' has no opening bracket"},
    {"H100,,A100", "column 6: empty entry in the list"},
    {"H100,", "empty entry in the list"},
    {",H100", "empty entry in the list"},
    {"[]", "empty entry in the list"},
    {"[[H100]]", "unexpected '['"},
    {"[H100:8, H10:8]", "column 10: unknown accelerator 'H10'"},
    {"{A100:8, A100:33GB}", "no A100 has 33GB"},
    {"H100:99999999999", "neither a count nor a memory size"},
    {"0GB+", "'+' belongs after a memory size"},
    {":8", "expected an accelerator name"},
    {"!", "expected an accelerator name"},
    {"averyveryveryveryveryverylongacceleratorname", "accelerator name too long"},
    {"A,B,C,D,E,F,G,H,I,J,K,L,M,N,O,P,Q", "unknown accelerator 'A'"},
    {"T4,T4,T4,T4,T4,T4,T4,T4,T4,T4,T4,T4,T4,T4,T4,T4,T4", "more than 16 accelerators"},
};

static void test_valid_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++) {
        sp_spec spec;
        sp_err err = {0};
        char out[1024];
        if (sp_spec_parse(valid[i].text, &spec, &err) != SP_OK)
            fail_msg("'%s' refused: %s", valid[i].text, err.msg);
        int n = sp_spec_format(&spec, out, sizeof(out));
        assert_int_equal(n, (int)strlen(out));
        if (strcmp(out, valid[i].canonical) != 0)
            fail_msg("'%s' printed as '%s', want '%s'", valid[i].text, out, valid[i].canonical);
    }
}

static void test_invalid_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
        sp_spec spec;
        sp_err err = {0};
        int rc = sp_spec_parse(invalid[i].text, &spec, &err);
        if (rc != SP_E_INVALID)
            fail_msg("'%s' accepted (rc %d)", invalid[i].text, rc);
        if (!strstr(err.msg, invalid[i].error))
            fail_msg("'%s': message '%s' lacks '%s'", invalid[i].text, err.msg, invalid[i].error);
    }
}

static void test_kinds(void **state)
{
    (void)state;
    sp_spec s;
    sp_err err = {0};
    assert_int_equal(sp_spec_parse("H100:8", &s, &err), SP_OK);
    assert_int_equal(s.kind, SP_SPEC_ONE);
    assert_int_equal(sp_spec_parse("H100:8, L4", &s, &err), SP_OK);
    assert_int_equal(s.kind, SP_SPEC_ORDERED);
    assert_int_equal(s.n_terms, 2);
    assert_int_equal(sp_spec_parse("[H100:8]", &s, &err), SP_OK);
    assert_int_equal(s.kind, SP_SPEC_ORDERED);
    assert_int_equal(sp_spec_parse("{H100:8, L4}", &s, &err), SP_OK);
    assert_int_equal(s.kind, SP_SPEC_ANY_OF);
    assert_int_equal(s.terms[1].count_min, 1);
}

/* Every name parses alone, with a count, in any letter case, and means the same thing. */
static void check_same_term(const sp_spec_term *a, const sp_spec_term *b, const char *what)
{
    if (a->n_models != b->n_models || a->count_min != b->count_min ||
        a->count_max != b->count_max || a->exact != b->exact)
        fail_msg("%s differs", what);
    for (unsigned i = 0; i < a->n_models; i++)
        assert_ptr_equal(a->models[i], b->models[i]);
}

static void test_every_name(void **state)
{
    (void)state;
    size_t n;
    const sp_accel_alias *aliases = sp_accel_aliases(&n);
    for (size_t i = 0; i < n; i++) {
        char text[64], upper[64], lower[64];
        sp_spec_term base, t;
        sp_err err = {0};
        if (sp_spec_term_parse(aliases[i].name, &base, &err) != SP_OK)
            fail_msg("%s: %s", aliases[i].name, err.msg);
        assert_true(base.n_models >= 1);
        if (aliases[i].model)
            assert_string_equal(base.models[0]->key, aliases[i].model);
        size_t len = strlen(aliases[i].name);
        for (size_t k = 0; k <= len; k++) {
            upper[k] = (char)toupper((unsigned char)aliases[i].name[k]);
            lower[k] = (char)tolower((unsigned char)aliases[i].name[k]);
        }
        assert_int_equal(sp_spec_term_parse(upper, &t, &err), SP_OK);
        check_same_term(&base, &t, upper);
        assert_int_equal(sp_spec_term_parse(lower, &t, &err), SP_OK);
        check_same_term(&base, &t, lower);
        for (unsigned c = 1; c <= 16; c++) {
            snprintf(text, sizeof(text), "%s:%u", aliases[i].name, c);
            assert_int_equal(sp_spec_term_parse(text, &t, &err), SP_OK);
            assert_int_equal(t.count_min, c);
            assert_int_equal(t.count_max, c);
            snprintf(text, sizeof(text), "%s!:1..%u", aliases[i].name, c);
            assert_int_equal(sp_spec_term_parse(text, &t, &err), SP_OK);
            assert_true(t.exact);
            assert_int_equal(t.count_max, c);
        }
    }
}

/* A typo of every name suggests a name (dropping the last letter of a 4+ letter name). */
static void test_typos_suggest(void **state)
{
    (void)state;
    size_t n;
    const sp_accel_alias *aliases = sp_accel_aliases(&n);
    for (size_t i = 0; i < n; i++) {
        char typo[64];
        size_t len = strlen(aliases[i].name);
        if (len < 4)
            continue;
        snprintf(typo, sizeof(typo), "%.*s", (int)(len - 1), aliases[i].name);
        if (sp_accel_alias_find(typo))
            continue; /* "H100-SXM" less its last letter... is not a name, but "trn1" is */
        sp_spec_term t;
        sp_err err = {0};
        assert_int_equal(sp_spec_term_parse(typo, &t, &err), SP_E_INVALID);
        if (!strstr(err.msg, "did you mean"))
            fail_msg("no suggestion for '%s': %s", typo, err.msg);
    }
}

static void test_term_parse_refuses_lists(void **state)
{
    (void)state;
    sp_spec_term t;
    sp_err err = {0};
    assert_int_equal(sp_spec_term_parse("H100:8,A100", &t, &err), SP_E_INVALID);
    assert_non_null(strstr(err.msg, "no lists"));
    assert_int_equal(sp_spec_term_parse("[H100]", &t, &err), SP_E_INVALID);
}

static sp_offer offer(const char *accel, unsigned count)
{
    sp_offer o = {.struct_size = sizeof(o), .accelerator = accel, .accel_count = count};
    return o;
}

/* Form factor is real: a PCIe spec never matches an SXM offer, and counts must fit. */
static void test_matching(void **state)
{
    (void)state;
    sp_spec_term t;
    sp_err err = {0};
    sp_offer sxm8 = offer("H100-SXM", 8), pcie8 = offer("H100-PCIe", 8), nvl2 = offer("H100-NVL", 2);
    assert_int_equal(sp_spec_term_parse("H100-PCIe:8", &t, &err), SP_OK);
    assert_false(sp_spec_term_matches(&t, &sxm8));
    assert_true(sp_spec_term_matches(&t, &pcie8));
    assert_int_equal(sp_spec_term_parse("H100:8", &t, &err), SP_OK);
    assert_true(sp_spec_term_matches(&t, &sxm8));
    assert_true(sp_spec_term_matches(&t, &pcie8));
    assert_false(sp_spec_term_matches(&t, &nvl2));
    assert_int_equal(sp_spec_term_parse("H100:1..4", &t, &err), SP_OK);
    assert_true(sp_spec_term_matches(&t, &nvl2));
    assert_false(sp_spec_term_matches(&t, &sxm8));
    sp_offer a40 = offer("A100-40GB", 8), a80 = offer("A100-80GB", 8);
    assert_int_equal(sp_spec_term_parse("A100:8", &t, &err), SP_OK);
    assert_true(sp_spec_term_matches(&t, &a40));
    assert_false(sp_spec_term_matches(&t, &a80));
    assert_int_equal(sp_spec_term_parse("A100:80GB:8", &t, &err), SP_OK);
    assert_false(sp_spec_term_matches(&t, &a40));
    assert_true(sp_spec_term_matches(&t, &a80));
    sp_offer l4 = offer("L4", 1), t4 = offer("T4", 1), mi = offer("MI300X", 1);
    assert_int_equal(sp_spec_term_parse("24GB+", &t, &err), SP_OK);
    assert_true(sp_spec_term_matches(&t, &l4));
    assert_false(sp_spec_term_matches(&t, &t4));
    assert_false(sp_spec_term_matches(&t, &mi)); /* name-less specs mean NVIDIA GPUs */
    sp_offer none = offer(NULL, 1);
    assert_false(sp_spec_term_matches(&t, &none));
}

static void test_neuron_cores(void **state)
{
    (void)state;
    assert_int_equal(sp_accel_by_key("Trainium")->neuron_cores, 2);
    assert_int_equal(sp_accel_by_key("Trainium2")->neuron_cores, 8);
    assert_int_equal(sp_accel_by_key("Inferentia2")->neuron_cores, 2);
    assert_int_equal(sp_accel_by_key("Inferentia")->neuron_cores, 4);
    assert_int_equal(sp_accel_by_key("H100-SXM")->neuron_cores, 0);
    assert_null(sp_accel_by_key("H100"));
}

static void test_format_truncates_safely(void **state)
{
    (void)state;
    sp_spec s;
    sp_err err = {0};
    char small[8];
    assert_int_equal(sp_spec_parse("H100-SXM:8", &s, &err), SP_OK);
    int n = sp_spec_format(&s, small, sizeof(small));
    assert_int_equal(n, (int)strlen("NVIDIA H100 80GB SXM5 x8"));
    assert_string_equal(small, "NVIDIA ");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_table),      cmocka_unit_test(test_invalid_table),
        cmocka_unit_test(test_kinds),            cmocka_unit_test(test_every_name),
        cmocka_unit_test(test_typos_suggest),    cmocka_unit_test(test_term_parse_refuses_lists),
        cmocka_unit_test(test_matching),         cmocka_unit_test(test_neuron_cores),
        cmocka_unit_test(test_format_truncates_safely),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
