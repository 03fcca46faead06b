/* skypool providers: the loaded provider plugins, their versions, ABI and operations. */
#include "cli.h"

#include <stddef.h>
#include <string.h>

typedef struct op_slot {
    const char *name;
    size_t offset;
} op_slot;

#define OP(f) {#f, offsetof(sp_provider, f)}
static const op_slot ops[] = {OP(offers),   OP(refresh_offers), OP(quota),
                              OP(availability), OP(launch),     OP(describe_nodes),
                              OP(terminate), OP(ssh_target),    OP(exec),
                              OP(check_credentials)};
#define N_OPS (sizeof(ops) / sizeof(ops[0]))

static bool has_op(const sp_provider *t, const op_slot *op)
{
    void *fn;
    memcpy(&fn, (const char *)t + op->offset, sizeof(fn));
    return fn != NULL;
}

static const char *kind_name(sp_provider_kind k)
{
    return k == SP_KIND_CONTAINER_EXEC ? "container" : k == SP_KIND_VM_SSH ? "vm-ssh" : "?";
}

static void ops_text(const sp_provider *t, char *buf, size_t size)
{
    buf[0] = '\0';
    for (size_t i = 0; i < N_OPS; i++)
        if (has_op(t, &ops[i]))
            snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", *buf ? "," : "",
                     ops[i].name);
}

static int print_text(const sp_registry *reg)
{
    const char *h[] = {"NAME", "VERSION", "ABI", "KIND", "OPERATIONS", "PATH"};
    cli_table *t = cli_table_new(6, h);
    for (size_t i = 0; i < reg->n_plugins; i++) {
        const sp_plugin *p = &reg->plugins[i];
        char abi[32], opsbuf[256];
        snprintf(abi, sizeof(abi), "%u (%u bytes)", p->table.abi_major, p->table_size);
        ops_text(&p->table, opsbuf, sizeof(opsbuf));
        const char *row[] = {p->table.name, p->table.version ? p->table.version : "?", abi,
                             kind_name(p->table.kind), opsbuf, p->path};
        cli_table_add(t, row);
    }
    cli_table_print(t, stdout);
    cli_table_free(t);
    printf("host: skypool %s, provider ABI %d.%d (%zu-byte table)\n", sp_version(),
           SP_PROVIDER_ABI_MAJOR, SP_PROVIDER_ABI_MINOR, sizeof(sp_provider));
    for (size_t i = 0; i < reg->n_refused; i++)
        printf("refused: %s\n", reg->refused[i]);
    return reg->n_plugins ? EXIT_OK : EXIT_FAILURE_;
}

static json_t *plugin_json(const sp_plugin *p)
{
    json_t *o = json_array();
    for (size_t i = 0; o && i < N_OPS; i++)
        if (has_op(&p->table, &ops[i]))
            json_array_append_new(o, json_string(ops[i].name));
    return json_pack("{s:s, s:s, s:s?, s:I, s:I, s:s, s:o, s:s}", "name", p->table.name,
                     "version", p->table.version ? p->table.version : "", "description",
                     p->table.description, "abi_major", (json_int_t)p->table.abi_major,
                     "table_size", (json_int_t)p->table_size, "kind", kind_name(p->table.kind),
                     "operations", o, "path", p->path);
}

static int print_json(const sp_registry *reg)
{
    json_t *plugins = json_array(), *refused = json_array();
    for (size_t i = 0; plugins && i < reg->n_plugins; i++)
        json_array_append_new(plugins, plugin_json(&reg->plugins[i]));
    for (size_t i = 0; refused && i < reg->n_refused; i++)
        json_array_append_new(refused, json_string(reg->refused[i]));
    return cli_print_json(json_pack("{s:s, s:I, s:I, s:o, s:o}", "version", sp_version(),
                                    "abi_major", (json_int_t)SP_PROVIDER_ABI_MAJOR, "abi_minor",
                                    (json_int_t)SP_PROVIDER_ABI_MINOR, "providers", plugins,
                                    "refused", refused));
}

static int providers_exec(int argc, char **argv)
{
    bool json = argc == 2 && strcmp(argv[1], "--json") == 0;
    if (argc > 2 || (argc == 2 && !json))
        return cli_fail(EXIT_USAGE, "see skypool providers --help");
    sp_registry reg;
    int rc = cli_open_registry(&reg, true);
    if (rc)
        return rc;
    rc = json ? print_json(&reg) : print_text(&reg);
    sp_registry_close(&reg);
    return rc;
}

const sp_cmd cmd_providers = {
    "providers",
    "loaded provider plugins, their versions, ABI and operations",
    "[--json]\n"
    "\n"
    "Lists the provider plugins found in $SKYPOOL_PLUGIN_PATH (colon-separated directories or\n"
    ".so files) and the installed plugin directory, with each one's ABI and the operations it\n"
    "implements, and every plugin that was refused and why.\n",
    providers_exec,
};
