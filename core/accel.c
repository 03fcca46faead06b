/* The accelerator models skypool knows, and the names users call them by. */
#include "accel.h"

#include "util.h"

#include <string.h>

/* Memory is the nominal figure NVIDIA, AMD and AWS publish per device. */
static const sp_accel_model models[] = {
    {"T4", "T4", "NVIDIA T4 16GB PCIe", SP_VENDOR_NVIDIA, 16, SP_FF_PCIE, "PCIe", 0, false},
    {"T4G", "T4G", "NVIDIA T4G 16GB PCIe", SP_VENDOR_NVIDIA, 16, SP_FF_PCIE, "PCIe", 0, false},
    {"L4", "L4", "NVIDIA L4 24GB PCIe", SP_VENDOR_NVIDIA, 24, SP_FF_PCIE, "PCIe", 0, false},
    {"L40S", "L40S", "NVIDIA L40S 48GB PCIe", SP_VENDOR_NVIDIA, 48, SP_FF_PCIE, "PCIe", 0, false},
    {"A10G", "A10G", "NVIDIA A10G 24GB PCIe", SP_VENDOR_NVIDIA, 24, SP_FF_PCIE, "PCIe", 0, false},
    {"RTX4000-Ada", "RTX4000-Ada", "NVIDIA RTX 4000 Ada 20GB PCIe", SP_VENDOR_NVIDIA, 20,
     SP_FF_PCIE, "PCIe", 0, false},
    {"RTX6000-Ada", "RTX6000-Ada", "NVIDIA RTX 6000 Ada 48GB PCIe", SP_VENDOR_NVIDIA, 48,
     SP_FF_PCIE, "PCIe", 0, false},
    {"V100", "V100", "NVIDIA V100 16GB SXM2", SP_VENDOR_NVIDIA, 16, SP_FF_SXM, "SXM2", 0, false},
    {"V100-32GB", "V100", "NVIDIA V100 32GB SXM2", SP_VENDOR_NVIDIA, 32, SP_FF_SXM, "SXM2", 0,
     false},
    {"A100-40GB", "A100", "NVIDIA A100 40GB SXM4", SP_VENDOR_NVIDIA, 40, SP_FF_SXM, "SXM4", 0,
     true},
    {"A100-80GB", "A100", "NVIDIA A100 80GB SXM4", SP_VENDOR_NVIDIA, 80, SP_FF_SXM, "SXM4", 0,
     true},
    {"H100-SXM", "H100", "NVIDIA H100 80GB SXM5", SP_VENDOR_NVIDIA, 80, SP_FF_SXM, "SXM5", 0,
     true},
    {"H100-PCIe", "H100", "NVIDIA H100 80GB PCIe", SP_VENDOR_NVIDIA, 80, SP_FF_PCIE, "PCIe", 0,
     true},
    {"H100-NVL", "H100", "NVIDIA H100 NVL 94GB", SP_VENDOR_NVIDIA, 94, SP_FF_NVL, "NVL", 0, true},
    {"H200", "H200", "NVIDIA H200 141GB SXM5", SP_VENDOR_NVIDIA, 141, SP_FF_SXM, "SXM5", 0, true},
    {"B200", "B200", "NVIDIA B200 180GB SXM6", SP_VENDOR_NVIDIA, 180, SP_FF_SXM, "SXM6", 0, true},
    {"B300", "B300", "NVIDIA B300 288GB SXM6", SP_VENDOR_NVIDIA, 288, SP_FF_SXM, "SXM6", 0, false},
    {"MI300X", "MI300X", "AMD Instinct MI300X 192GB OAM", SP_VENDOR_AMD, 192, SP_FF_OAM, "OAM", 0,
     false},
    {"Gaudi-HL205", "Gaudi", "Habana Gaudi HL-205 32GB OAM", SP_VENDOR_HABANA, 32, SP_FF_OAM,
     "OAM", 0, false},
    {"Inferentia", "Inferentia", "AWS Inferentia 8GB", SP_VENDOR_AWS, 8, SP_FF_CHIP, "", 4, false},
    {"Inferentia2", "Inferentia2", "AWS Inferentia2 32GB", SP_VENDOR_AWS, 32, SP_FF_CHIP, "", 2,
     false},
    {"Trainium", "Trainium", "AWS Trainium 32GB", SP_VENDOR_AWS, 32, SP_FF_CHIP, "", 2, false},
    {"Trainium2", "Trainium2", "AWS Trainium2 96GB", SP_VENDOR_AWS, 96, SP_FF_CHIP, "", 8, false},
};

#define N_MODELS (sizeof(models) / sizeof(models[0]))

/*
 * Names users write. A name resolves to either one model or a family. "H100" is the family in
 * every form factor; "A100" alone means the 40GB card (NVIDIA's original), but "A100" with a
 * memory constraint ("A100:80GB") picks among the whole family.
 */
static const sp_accel_alias aliases[] = {
    {"T4", "T4", NULL},
    {"T4G", "T4G", NULL},
    {"L4", "L4", NULL},
    {"L40S", "L40S", NULL},
    {"A10G", "A10G", NULL},
    {"A10", "A10G", NULL},
    {"RTX4000-Ada", "RTX4000-Ada", NULL},
    {"RTX6000-Ada", "RTX6000-Ada", NULL},
    {"V100", "V100", "V100"},
    {"V100-16GB", "V100", NULL},
    {"V100-32GB", "V100-32GB", NULL},
    {"A100", "A100-40GB", "A100"},
    {"A100-40GB", "A100-40GB", NULL},
    {"A100-80GB", "A100-80GB", NULL},
    {"H100", NULL, "H100"},
    {"H100-SXM", "H100-SXM", NULL},
    {"H100-SXM5", "H100-SXM", NULL},
    {"H100-PCIe", "H100-PCIe", NULL},
    {"H100-NVL", "H100-NVL", NULL},
    {"H200", "H200", NULL},
    {"B200", "B200", NULL},
    {"B300", "B300", NULL},
    {"MI300X", "MI300X", NULL},
    {"Gaudi", "Gaudi-HL205", NULL},
    {"Gaudi-HL205", "Gaudi-HL205", NULL},
    {"Trainium", "Trainium", NULL},
    {"trn1", "Trainium", NULL},
    {"Trainium2", "Trainium2", NULL},
    {"trn2", "Trainium2", NULL},
    {"Inferentia", "Inferentia", NULL},
    {"inf1", "Inferentia", NULL},
    {"Inferentia2", "Inferentia2", NULL},
    {"inf2", "Inferentia2", NULL},
};

#define N_ALIASES (sizeof(aliases) / sizeof(aliases[0]))

const sp_accel_model *sp_accel_models(size_t *n)
{
    if (n)
        *n = N_MODELS;
    return models;
}

const sp_accel_model *sp_accel_by_key(const char *key)
{
    for (size_t i = 0; i < N_MODELS; i++)
        if (sp_streq_nocase(models[i].key, key))
            return &models[i];
    return NULL;
}

const sp_accel_alias *sp_accel_aliases(size_t *n)
{
    *n = N_ALIASES;
    return aliases;
}

const sp_accel_alias *sp_accel_alias_find(const char *name)
{
    for (size_t i = 0; i < N_ALIASES; i++)
        if (sp_streq_nocase(aliases[i].name, name))
            return &aliases[i];
    return NULL;
}

size_t sp_accel_family(const char *family, const sp_accel_model **out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < N_MODELS && n < max; i++)
        if (strcmp(models[i].family, family) == 0)
            out[n++] = &models[i];
    return n;
}

const char *sp_accel_suggest(const char *name)
{
    const char *names[N_ALIASES];
    for (size_t i = 0; i < N_ALIASES; i++)
        names[i] = aliases[i].name;
    return sp_suggest(name, names, N_ALIASES);
}
