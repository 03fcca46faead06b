/* skypool accelerators: the models the spec grammar knows, and their names. */
#include "cli.h"

#include "accel.h"

#include <string.h>

static const char *ff_label(const sp_accel_model *m)
{
    return *m->ff_name ? m->ff_name : "chip";
}

static void names_of(const sp_accel_model *m, char *buf, size_t size)
{
    size_t n;
    const sp_accel_alias *a = sp_accel_aliases(&n);
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++)
        if (a[i].model && strcmp(a[i].model, m->key) == 0)
            snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", *buf ? ", " : "", a[i].name);
}

static int accelerators_exec(int argc, char **argv)
{
    bool json = argc == 2 && strcmp(argv[1], "--json") == 0;
    if (argc > 2 || (argc == 2 && !json))
        return cli_fail(EXIT_USAGE, "see skypool accelerators --help");
    size_t n;
    const sp_accel_model *m = sp_accel_models(&n);
    const char *h[] = {"KEY", "MODEL", "MEMORY", "FORM", "NEURONCORES", "MIG", "NAMES"};
    cli_table *t = cli_table_new(7, h);
    json_t *arr = json ? json_array() : NULL;
    for (size_t i = 0; i < n; i++) {
        char mem[16], cores[16], names[256];
        snprintf(mem, sizeof(mem), "%uGB", m[i].mem_gib);
        snprintf(cores, sizeof(cores), "%u", m[i].neuron_cores);
        names_of(&m[i], names, sizeof(names));
        const char *row[] = {m[i].key, m[i].display, mem, ff_label(&m[i]),
                             m[i].neuron_cores ? cores : "-", m[i].mig ? "yes" : "no", names};
        cli_table_add(t, row);
        if (arr)
            json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:I, s:s, s:I, s:b, s:s}",
                                                 "key", m[i].key, "family", m[i].family,
                                                 "display", m[i].display, "memory_gib",
                                                 (json_int_t)m[i].mem_gib, "form_factor",
                                                 ff_label(&m[i]), "neuron_cores",
                                                 (json_int_t)m[i].neuron_cores, "mig", m[i].mig,
                                                 "names", names));
    }
    int rc = EXIT_OK;
    if (arr)
        rc = cli_print_json(arr);
    else {
        cli_table_print(t, stdout);
        printf("families: H100 means any of H100-SXM, H100-PCIe, H100-NVL; A100 means A100-40GB,\n"
               "but A100:80GB picks within the A100 family; 24GB+ means any NVIDIA GPU with at\n"
               "least 24GB\n");
    }
    cli_table_free(t);
    return rc;
}

const sp_cmd cmd_accelerators = {
    "accelerators",
    "accelerator models and the names the spec grammar accepts",
    "[--json]\n",
    accelerators_exec,
};
