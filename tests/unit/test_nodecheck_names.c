/*
 * nodecheck/names.c: device names as NVML (and so nvidia-smi) print them -> skypool model keys
 * and form factors.
 *
 * The names are real ones, as drivers report them (docs/nodecheck.md says where each was seen),
 * with the memory NVML reports for that card. The model keys and form factors they must map to
 * are the catalog's (core/accel.c), which the last test checks against the core itself.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "names.h"

#include <skypool/skypool.h>

#include <string.h>

typedef struct named {
    const char *name;
    unsigned long long mem_mib;
    const char *key; /* NULL: no skypool model */
    int ff;
} named;

static const named real_names[] = {
    {"Tesla T4", 15360, "T4", NC_FF_PCIE},
    {"NVIDIA T4G", 15360, "T4G", NC_FF_PCIE},
    {"NVIDIA A10G", 23028, "A10G", NC_FF_PCIE},
    {"NVIDIA L4", 23034, "L4", NC_FF_PCIE},
    {"NVIDIA L40S", 46068, "L40S", NC_FF_PCIE},
    {"NVIDIA RTX 4000 Ada Generation", 20475, "RTX4000-Ada", NC_FF_PCIE},
    {"NVIDIA RTX 6000 Ada Generation", 49140, "RTX6000-Ada", NC_FF_PCIE},
    {"Tesla V100-SXM2-16GB", 16160, "V100", NC_FF_SXM},
    {"Tesla V100-SXM2-32GB", 32510, "V100-32GB", NC_FF_SXM},
    {"Tesla V100-PCIE-16GB", 16160, "V100", NC_FF_PCIE},
    {"Tesla V100S-PCIE-32GB", 32510, "V100-32GB", NC_FF_PCIE},
    {"NVIDIA A100-SXM4-40GB", 40960, "A100-40GB", NC_FF_SXM},
    {"A100-SXM4-40GB", 40536, "A100-40GB", NC_FF_SXM}, /* drivers before R470 */
    {"NVIDIA A100-SXM4-80GB", 81920, "A100-80GB", NC_FF_SXM},
    {"NVIDIA A100-PCIE-40GB", 40960, "A100-40GB", NC_FF_PCIE},
    {"NVIDIA A100 80GB PCIe", 81920, "A100-80GB", NC_FF_PCIE},
    {"NVIDIA H100 80GB HBM3", 81559, "H100-SXM", NC_FF_SXM},
    {"NVIDIA H100 PCIe", 81559, "H100-PCIe", NC_FF_PCIE},
    {"NVIDIA H100 NVL", 95830, "H100-NVL", NC_FF_NVL},
    {"NVIDIA H200", 143771, "H200", NC_FF_SXM},
    {"NVIDIA H200 NVL", 143771, "H200", NC_FF_NVL},
    {"NVIDIA B200", 183359, "B200", NC_FF_SXM},
    {"NVIDIA B300 SXM6 AC", 275040, "B300", NC_FF_SXM},
    /* Cards skypool has no key for must not borrow the nearest one. */
    {"NVIDIA A10", 23028, NULL, NC_FF_UNKNOWN},
    {"NVIDIA L40", 46068, NULL, NC_FF_UNKNOWN},
    {"NVIDIA H800", 81559, NULL, NC_FF_UNKNOWN},
    {"NVIDIA GH200 480GB", 97871, NULL, NC_FF_UNKNOWN},
    {"NVIDIA GeForce RTX 4090", 24564, NULL, NC_FF_UNKNOWN},
    {"NVIDIA RTX 4000 SFF Ada Generation", 20475, NULL, NC_FF_UNKNOWN},
    {"NVIDIA RTX A6000", 49140, NULL, NC_FF_UNKNOWN},
    {"", 0, NULL, NC_FF_UNKNOWN},
};

static void check_name(const named *n)
{
    int ff = -42;
    const char *key = nc_model_key(n->name, n->mem_mib, &ff);
    if (n->key == NULL) {
        if (key != NULL)
            fail_msg("\"%s\" mapped to %s, expected no model", n->name, key);
    } else if (key == NULL || strcmp(key, n->key) != 0) {
        fail_msg("\"%s\" mapped to %s, expected %s", n->name, key ? key : "(none)", n->key);
    }
    if (ff != n->ff)
        fail_msg("\"%s\": form factor %s, expected %s", n->name, nc_form_factor_name(ff),
                 nc_form_factor_name(n->ff));
}

static void real_device_names(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(real_names) / sizeof(real_names[0]); i++)
        check_name(&real_names[i]);
}

static void null_form_factor_pointer_and_null_name(void **state)
{
    (void)state;
    assert_string_equal(nc_model_key("NVIDIA L4", 23034, NULL), "L4");
    int ff = -1;
    assert_null(nc_model_key(NULL, 0, &ff));
    assert_int_equal(ff, NC_FF_UNKNOWN);
}

static void names_are_matched_without_regard_to_case_or_spacing(void **state)
{
    (void)state;
    int ff;
    assert_string_equal(nc_model_key("nvidia h100 80gb hbm3", 81559, &ff), "H100-SXM");
    assert_int_equal(ff, NC_FF_SXM);
    assert_string_equal(nc_model_key("  NVIDIA Tesla T4 ", 15360, &ff), "T4");
    /* "L4" is a prefix of "L40S", "A100" of "A1000": whole words only. */
    assert_null(nc_model_key("NVIDIA L4X", 23034, &ff));
    assert_null(nc_model_key("NVIDIA A1000", 8192, &ff));
}

/* A100 and V100 names say their memory; a name that does not is split by the memory NVML
 * reports, as the nvidia-smi fallback must do for a truncated name. */
static void memory_splits_names_that_do_not_say(void **state)
{
    (void)state;
    int ff;
    assert_string_equal(nc_model_key("NVIDIA A100-SXM4", 81920, &ff), "A100-80GB");
    assert_string_equal(nc_model_key("NVIDIA A100-SXM4", 40960, &ff), "A100-40GB");
    assert_string_equal(nc_model_key("Tesla V100-SXM2", 32510, &ff), "V100-32GB");
    assert_string_equal(nc_model_key("Tesla V100-SXM2", 16160, &ff), "V100");
    /* A name that says 40GB is believed over a larger memory figure. */
    assert_string_equal(nc_model_key("NVIDIA A100-SXM4-40GB", 81920, &ff), "A100-40GB");
}

static void board_part_number_settles_what_the_name_leaves_open(void **state)
{
    (void)state;
    int ff;
    assert_int_equal(nc_form_factor_from_board("692-2G506-0200-002"), NC_FF_SXM);
    assert_int_equal(nc_form_factor_from_board("692-2G510-0210-003"), NC_FF_SXM);
    assert_int_equal(nc_form_factor_from_board("900-21010-0000-000"), NC_FF_UNKNOWN);
    assert_int_equal(nc_form_factor_from_board(""), NC_FF_UNKNOWN);
    assert_int_equal(nc_form_factor_from_board(NULL), NC_FF_UNKNOWN);
    assert_null(nc_model_key("NVIDIA H100", 81559, &ff));
    assert_string_equal(nc_model_key_board("NVIDIA H100", 81559, "692-2G520-0200-000", &ff),
                        "H100-SXM");
    assert_int_equal(ff, NC_FF_SXM);
    /* The name wins over the board. */
    assert_string_equal(nc_model_key_board("NVIDIA H100 PCIe", 81559, "692-2G520-0200-000", &ff),
                        "H100-PCIe");
    assert_int_equal(ff, NC_FF_PCIE);
}

static void form_factor_names_round_trip(void **state)
{
    (void)state;
    for (int ff = NC_FF_SXM; ff <= NC_FF_NVL; ff++)
        assert_int_equal(nc_form_factor_parse(nc_form_factor_name(ff)), ff);
    assert_int_equal(nc_form_factor_parse("PCIe"), NC_FF_PCIE);
    assert_int_equal(nc_form_factor_parse("oam"), -1);
    assert_int_equal(nc_form_factor_parse(NULL), -1);
    assert_string_equal(nc_form_factor_name(NC_FF_UNKNOWN), "unknown");
    assert_string_equal(nc_form_factor_name(99), "unknown");
}

static void mig_profile_from_mig_device_name(void **state)
{
    (void)state;
    assert_string_equal(nc_mig_profile_of("NVIDIA A100-SXM4-40GB MIG 1g.5gb"), "1g.5gb");
    assert_string_equal(nc_mig_profile_of("NVIDIA H100 80GB HBM3 MIG 3g.40gb"), "3g.40gb");
    assert_string_equal(nc_mig_profile_of("NVIDIA A100-SXM4-40GB MIG 1c.3g.20gb"), "1c.3g.20gb");
    assert_null(nc_mig_profile_of("NVIDIA H100 80GB HBM3"));
    assert_null(nc_mig_profile_of("NVIDIA H100 80GB HBM3 MIG "));
    assert_null(nc_mig_profile_of(NULL));
}

static void keys_canonical_and_neuron(void **state)
{
    (void)state;
    assert_string_equal(nc_model_key_canonical("h100-sxm"), "H100-SXM");
    assert_string_equal(nc_model_key_canonical("TRAINIUM2"), "Trainium2");
    assert_null(nc_model_key_canonical("H100")); /* a family, not a key */
    assert_null(nc_model_key_canonical(NULL));
    assert_true(nc_model_is_neuron("Inferentia2"));
    assert_true(nc_model_is_neuron("Trainium"));
    assert_false(nc_model_is_neuron("H100-SXM"));
    assert_false(nc_model_is_neuron(NULL));
}

static int catalog_ff(sp_form_factor ff)
{
    switch (ff) {
    case SP_FF_SXM:
        return NC_FF_SXM;
    case SP_FF_PCIE:
        return NC_FF_PCIE;
    case SP_FF_NVL:
        return NC_FF_NVL;
    default:
        return NC_FF_UNKNOWN;
    }
}

/* names.c keeps its own copy of the keys (it must compile alone); it must match the catalog:
 * every NVIDIA and AWS model is a key nodecheck accepts, and for every NVIDIA model some real
 * name maps to it with the catalog's form factor. */
static void keys_match_the_core_catalog(void **state)
{
    (void)state;
    size_t n_models, n_keys;
    const sp_accel_model *models = sp_accel_models(&n_models);
    const char *const *keys = nc_model_keys(&n_keys);
    size_t expected = 0;
    for (size_t i = 0; i < n_models; i++) {
        const sp_accel_model *m = &models[i];
        if (m->vendor != SP_VENDOR_NVIDIA && m->vendor != SP_VENDOR_AWS)
            continue;
        expected++;
        if (!nc_model_key_canonical(m->key) || strcmp(nc_model_key_canonical(m->key), m->key))
            fail_msg("catalog model %s is not a nodecheck model key", m->key);
        assert_int_equal(nc_model_is_neuron(m->key), m->vendor == SP_VENDOR_AWS);
        if (m->vendor != SP_VENDOR_NVIDIA)
            continue;
        bool seen = false;
        for (size_t k = 0; k < sizeof(real_names) / sizeof(real_names[0]); k++) {
            const named *r = &real_names[k];
            seen |= r->key && strcmp(r->key, m->key) == 0 && r->ff == catalog_ff(m->ff);
        }
        if (!seen)
            fail_msg("no real device name maps to %s (%s)", m->key, m->ff_name);
    }
    assert_int_equal(n_keys, expected);
    for (size_t i = 0; i < n_keys; i++)
        assert_non_null(sp_accel_by_key(keys[i]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(real_device_names),
        cmocka_unit_test(null_form_factor_pointer_and_null_name),
        cmocka_unit_test(names_are_matched_without_regard_to_case_or_spacing),
        cmocka_unit_test(memory_splits_names_that_do_not_say),
        cmocka_unit_test(board_part_number_settles_what_the_name_leaves_open),
        cmocka_unit_test(form_factor_names_round_trip),
        cmocka_unit_test(mig_profile_from_mig_device_name),
        cmocka_unit_test(keys_canonical_and_neuron),
        cmocka_unit_test(keys_match_the_core_catalog),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
