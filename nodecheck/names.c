/*
 * Device names -> model keys. The names are what NVML's nvmlDeviceGetName (and so nvidia-smi)
 * print; docs/nodecheck.md lists the ones this was checked against. Drivers before R470 left
 * out the "NVIDIA " prefix ("A100-SXM4-40GB"), and older boards carry "Tesla " instead, so both
 * prefixes are optional.
 *
 * A card skypool does not sell under a key maps to NULL rather than to the nearest key: an
 * "NVIDIA A10" is not an A10G, an "NVIDIA L40" is not an L40S, an "NVIDIA H800" is not an H100.
 */
#include "names.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#define NAME_MAX_LEN 128

static const char *const model_keys[] = {
    "T4",        "T4G",       "L4",          "L40S",       "A10G",     "RTX4000-Ada",
    "RTX6000-Ada", "V100",    "V100-32GB",   "A100-40GB",  "A100-80GB", "H100-SXM",
    "H100-PCIe", "H100-NVL",  "H200",        "B200",       "B300",     "Inferentia",
    "Inferentia2", "Trainium", "Trainium2",
};

#define N_KEYS (sizeof(model_keys) / sizeof(model_keys[0]))

const char *const *nc_model_keys(size_t *n)
{
    if (n)
        *n = N_KEYS;
    return model_keys;
}

const char *nc_model_key_canonical(const char *key)
{
    for (size_t i = 0; key && i < N_KEYS; i++)
        if (strcasecmp(model_keys[i], key) == 0)
            return model_keys[i];
    return NULL;
}

bool nc_model_is_neuron(const char *key)
{
    return key && (strncmp(key, "Inferentia", 10) == 0 || strncmp(key, "Trainium", 8) == 0);
}

const char *nc_form_factor_name(int form_factor)
{
    switch (form_factor) {
    case NC_FF_SXM:
        return "sxm";
    case NC_FF_PCIE:
        return "pcie";
    case NC_FF_NVL:
        return "nvl";
    default:
        return "unknown";
    }
}

int nc_form_factor_parse(const char *name)
{
    if (!name)
        return -1;
    if (strcasecmp(name, "sxm") == 0)
        return NC_FF_SXM;
    if (strcasecmp(name, "pcie") == 0)
        return NC_FF_PCIE;
    if (strcasecmp(name, "nvl") == 0)
        return NC_FF_NVL;
    return -1;
}

/*
 * NVIDIA's board part numbers read "692-2G506-0200-002": the second group names the printed
 * circuit board, and the PG5xx boards are SXM modules (PG506 and PG510 are the A100 SXM4 boards
 * in every capture we found). No rule for PCIe boards was found that held, so this says SXM or
 * nothing.
 */
int nc_form_factor_from_board(const char *bpn)
{
    if (!bpn || strlen(bpn) < 9)
        return NC_FF_UNKNOWN;
    for (int i = 0; i < 3; i++)
        if (!isdigit((unsigned char)bpn[i]))
            return NC_FF_UNKNOWN;
    if (bpn[3] == '-' && bpn[4] == '2' && toupper((unsigned char)bpn[5]) == 'G' && bpn[6] == '5' &&
        isdigit((unsigned char)bpn[7]) && isdigit((unsigned char)bpn[8]))
        return NC_FF_SXM;
    return NC_FF_UNKNOWN;
}

/* The name without its vendor prefixes, upper-cased into buf; returns buf. */
static char *normalize(const char *name, char *buf, size_t size)
{
    for (;;) {
        while (*name == ' ')
            name++;
        if (strncasecmp(name, "NVIDIA ", 7) == 0)
            name += 7;
        else if (strncasecmp(name, "Tesla ", 6) == 0)
            name += 6;
        else
            break;
    }
    size_t n = 0;
    for (; name[n] && n + 1 < size; n++)
        buf[n] = (char)toupper((unsigned char)name[n]);
    while (n > 0 && buf[n - 1] == ' ')
        n--;
    buf[n] = '\0';
    return buf;
}

/* Whether the first word of s is word, exactly or followed by "-..." ("A100-SXM4-40GB"). */
static bool first_word(const char *s, const char *word, bool dash_ok)
{
    size_t n = strlen(word);
    if (strncmp(s, word, n) != 0)
        return false;
    return s[n] == '\0' || s[n] == ' ' || (dash_ok && s[n] == '-');
}

static bool has(const char *s, const char *part)
{
    return strstr(s, part) != NULL;
}

static int ff_of(const char *up)
{
    if (has(up, "NVL"))
        return NC_FF_NVL;
    if (has(up, "SXM"))
        return NC_FF_SXM;
    if (has(up, "PCIE"))
        return NC_FF_PCIE;
    return NC_FF_UNKNOWN;
}

/* Names that say everything: one key, one form factor. */
static const struct {
    const char *name; /* normalized, whole */
    const char *key;
    int ff;
} exact[] = {
    {"T4", "T4", NC_FF_PCIE},
    {"T4G", "T4G", NC_FF_PCIE},
    {"L4", "L4", NC_FF_PCIE},
    {"L40S", "L40S", NC_FF_PCIE},
    {"A10G", "A10G", NC_FF_PCIE},
    {"RTX 4000 ADA GENERATION", "RTX4000-Ada", NC_FF_PCIE},
    {"RTX 6000 ADA GENERATION", "RTX6000-Ada", NC_FF_PCIE},
};

static const char *v100(const char *up, unsigned long long mem_mib, int *ff)
{
    *ff = ff_of(up);
    bool big = has(up, "32GB") || (!has(up, "16GB") && mem_mib > 24 * 1024);
    return big ? "V100-32GB" : "V100";
}

static const char *a100(const char *up, unsigned long long mem_mib, int *ff)
{
    *ff = ff_of(up);
    bool big = has(up, "80GB") || (!has(up, "40GB") && mem_mib > 60 * 1024);
    return big ? "A100-80GB" : "A100-40GB";
}

/* H100 SXM5 is "H100 80GB HBM3"; the PCIe card is "H100 PCIe" (some drivers: "H100 80GB
 * HBM2e", its memory type); the NVL card is "H100 NVL". */
static const char *h100(const char *up, int board_ff, int *ff)
{
    if (has(up, "NVL"))
        *ff = NC_FF_NVL;
    else if (has(up, "PCIE") || has(up, "HBM2E"))
        *ff = NC_FF_PCIE;
    else if (has(up, "SXM") || has(up, "HBM3"))
        *ff = NC_FF_SXM;
    else
        *ff = board_ff;
    switch (*ff) {
    case NC_FF_NVL:
        return "H100-NVL";
    case NC_FF_PCIE:
        return "H100-PCIe";
    case NC_FF_SXM:
        return "H100-SXM";
    default:
        return NULL;
    }
}

const char *nc_model_key_board(const char *device_name, unsigned long long mem_mib,
                               const char *board_part_number, int *form_factor)
{
    char buf[NAME_MAX_LEN];
    int ff_local;
    int *ff = form_factor ? form_factor : &ff_local;
    *ff = NC_FF_UNKNOWN;
    if (!device_name)
        return NULL;
    const char *up = normalize(device_name, buf, sizeof(buf));
    int board_ff = nc_form_factor_from_board(board_part_number);
    const char *key = NULL;

    for (size_t i = 0; i < sizeof(exact) / sizeof(exact[0]); i++)
        if (strcmp(up, exact[i].name) == 0) {
            *ff = exact[i].ff;
            return exact[i].key;
        }
    if (first_word(up, "V100", true) || first_word(up, "V100S", true))
        key = v100(up, mem_mib, ff);
    else if (first_word(up, "A100", true))
        key = a100(up, mem_mib, ff);
    else if (first_word(up, "H100", true))
        key = h100(up, board_ff, ff);
    else if (first_word(up, "H200", false)) {
        /* "H200" is the SXM module; "H200 NVL" the PCIe card, the same key by its chip but a
         * different form factor, which --expect-form-factor tells apart. */
        *ff = has(up, "NVL") ? NC_FF_NVL : NC_FF_SXM;
        key = "H200";
    } else if (first_word(up, "B200", false) || first_word(up, "B300", false)) {
        *ff = NC_FF_SXM; /* "B200", "B300 SXM6 AC" */
        key = up[1] == '2' ? "B200" : "B300";
    }
    if (key && *ff == NC_FF_UNKNOWN)
        *ff = board_ff;
    return key;
}

const char *nc_model_key(const char *device_name, unsigned long long mem_mib, int *form_factor)
{
    return nc_model_key_board(device_name, mem_mib, NULL, form_factor);
}

const char *nc_mig_profile_of(const char *name)
{
    const char *p = name ? strstr(name, " MIG ") : NULL;
    if (!p)
        return NULL;
    p += 5;
    while (*p == ' ')
        p++;
    return *p ? p : NULL;
}
