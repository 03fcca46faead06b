/*
 * The provider plugin loader. A plugin is checked before dlopen runs any of its code (file and
 * directory permissions), then its entry point and table are checked against our ABI.
 */
#include "registry.h"
#include "util.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The smallest table a 1.0 plugin can have: through the last 1.0 field. */
#define TABLE_MIN_1_0 (offsetof(sp_provider, exec) + sizeof(((sp_provider *)0)->exec))

static int check_not_world_writable(const char *path, sp_err *err)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return sp_err_set(err, SP_E_IO, "plugin %s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return sp_err_set(err, SP_E_IO, "plugin %s: not a regular file", path);
    if (st.st_mode & S_IWOTH)
        return sp_err_set(err, SP_E_PERM,
                          "plugin %s is world-writable, so anyone could replace it: refused; "
                          "fix with chmod o-w '%s'",
                          path, path);
    char *copy = sp_strdup(path);
    if (!copy)
        return sp_err_set(err, SP_E_NOMEM, "out of memory");
    const char *dir = dirname(copy);
    int rc = SP_OK;
    if (stat(dir, &st) == 0 && (st.st_mode & S_IWOTH))
        rc = sp_err_set(err, SP_E_PERM,
                        "plugin %s is in world-writable directory %s: refused; move it to a "
                        "directory only its owner can write, or chmod o-w '%s'",
                        path, dir, dir);
    free(copy);
    return rc;
}

static bool valid_name(const char *name)
{
    if (!name || !*name || strlen(name) > 32)
        return false;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-'))
            return false;
    return true;
}

/* Copies the plugin's table into a zeroed struct of ours, never more than either side has. */
static int adopt_table(const char *path, const sp_provider *t, sp_plugin *plugin, sp_err *err)
{
    if (t->abi_major != SP_PROVIDER_ABI_MAJOR)
        return sp_err_set(err, SP_E_ABI,
                          "plugin %s was built for provider ABI %u, but this skypool speaks ABI "
                          "%d: refused; rebuild the plugin against this skypool's provider.h",
                          path, t->abi_major, SP_PROVIDER_ABI_MAJOR);
    if (t->struct_size < TABLE_MIN_1_0)
        return sp_err_set(err, SP_E_ABI,
                          "plugin %s has a provider table of %u bytes; ABI %d.0 needs at least "
                          "%zu: refused (a truncated or hand-made table)",
                          path, t->struct_size, SP_PROVIDER_ABI_MAJOR, TABLE_MIN_1_0);
    memset(&plugin->table, 0, sizeof(plugin->table));
    size_t n = t->struct_size < sizeof(plugin->table) ? t->struct_size : sizeof(plugin->table);
    memcpy(&plugin->table, t, n);
    plugin->table_size = t->struct_size;
    if (!valid_name(plugin->table.name))
        return sp_err_set(err, SP_E_ABI,
                          "plugin %s has no valid provider name (lower case letters, digits and "
                          "'-', at most 32): refused",
                          path);
    return SP_OK;
}

static int call_entry(sp_registry *reg, const char *path, void *dl, sp_plugin *plugin,
                      sp_err *err)
{
    sp_provider_init_fn init;
    *(void **)&init = dlsym(dl, SP_PROVIDER_ENTRY);
    if (!init)
        return sp_err_set(err, SP_E_ABI,
                          "plugin %s exports no '%s' symbol: refused; is it a skypool provider?",
                          path, SP_PROVIDER_ENTRY);
    const sp_provider *table = NULL;
    char *msg = NULL;
    void *ctx = NULL;
    int rc = init(&reg->host, &table, &ctx, &msg);
    if (rc != SP_OK || !table) {
        sp_err_set(err, rc ? rc : SP_E_ABI, "plugin %s failed to start: %s", path,
                   msg ? msg : (rc ? sp_strerror(rc) : "it returned no provider table"));
        if (msg)
            reg->host.free(&reg->host, msg);
        return err ? err->code : SP_E_ABI;
    }
    plugin->ctx = ctx;
    rc = adopt_table(path, table, plugin, err);
    if (rc && table->abi_major == SP_PROVIDER_ABI_MAJOR && table->struct_size >= TABLE_MIN_1_0 &&
        table->fini)
        table->fini(ctx);
    return rc;
}

int sp_plugin_load(sp_registry *reg, const char *path, sp_plugin *plugin, sp_err *err)
{
    memset(plugin, 0, sizeof(*plugin));
    int rc = check_not_world_writable(path, err);
    if (rc)
        return rc;
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!dl)
        return sp_err_set(err, SP_E_ABI, "plugin %s could not be loaded: %s", path, dlerror());
    if ((rc = call_entry(reg, path, dl, plugin, err))) {
        dlclose(dl);
        memset(plugin, 0, sizeof(*plugin));
        return rc;
    }
    plugin->dl = dl;
    char real[PATH_MAX];
    plugin->path = sp_strdup(realpath(path, real) ? real : path);
    return SP_OK;
}

void sp_plugin_unload(sp_plugin *plugin)
{
    if (plugin->table.fini)
        plugin->table.fini(plugin->ctx);
    /* Sanitizers want the code still mapped to symbolize leaks found at exit. */
#ifndef SKYPOOL_SANITIZED
    if (plugin->dl)
        dlclose(plugin->dl);
#endif
    free(plugin->path);
    memset(plugin, 0, sizeof(*plugin));
}

static void refuse(sp_registry *reg, const char *msg)
{
    if (reg->n_refused < SP_REGISTRY_MAX_REFUSED)
        reg->refused[reg->n_refused++] = sp_strdup(msg);
}

static bool already_loaded(const sp_registry *reg, const char *path)
{
    char real[PATH_MAX];
    if (!realpath(path, real))
        return false;
    for (size_t i = 0; i < reg->n_plugins; i++)
        if (strcmp(reg->plugins[i].path, real) == 0)
            return true;
    return false;
}

static void add_plugin(sp_registry *reg, const char *path)
{
    sp_err err = {0};
    sp_plugin p;
    /* The same file named twice on the search path is one plugin, not a conflict. */
    if (already_loaded(reg, path))
        return;
    if (reg->n_plugins == SP_REGISTRY_MAX_PLUGINS) {
        refuse(reg, "too many provider plugins; the rest were not loaded");
        return;
    }
    if (sp_plugin_load(reg, path, &p, &err) != SP_OK) {
        refuse(reg, err.msg);
        return;
    }
    if (sp_registry_find(reg, p.table.name)) {
        char msg[SP_ERR_MSG_MAX];
        snprintf(msg, sizeof(msg), "plugin %s: provider '%s' is already loaded from %s; ignored",
                 path, p.table.name, sp_registry_find(reg, p.table.name)->path);
        refuse(reg, msg);
        sp_plugin_unload(&p);
        return;
    }
    reg->plugins[reg->n_plugins++] = p;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every *.so in dir, in name order so that loading is deterministic. */
static void load_dir(sp_registry *reg, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    char *names[64];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 64) {
        size_t len = strlen(e->d_name);
        if (len > 3 && strcmp(e->d_name + len - 3, ".so") == 0)
            names[n++] = sp_strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof(names[0]), by_name);
    for (size_t i = 0; i < n; i++) {
        char path[4096];
        if (names[i] && snprintf(path, sizeof(path), "%s/%s", dir, names[i]) < (int)sizeof(path))
            add_plugin(reg, path);
        free(names[i]);
    }
}

static void load_path_list(sp_registry *reg, const char *list)
{
    char *copy = sp_strdup(list), *save = NULL;
    for (char *dir = copy ? strtok_r(copy, ":", &save) : NULL; dir;
         dir = strtok_r(NULL, ":", &save)) {
        size_t len = strlen(dir);
        if (len > 3 && strcmp(dir + len - 3, ".so") == 0)
            add_plugin(reg, dir);
        else
            load_dir(reg, dir);
    }
    free(copy);
}

int sp_registry_open(sp_registry *reg, sp_err *err)
{
    memset(reg, 0, sizeof(*reg));
    int rc = sp_host_init(reg, err);
    if (rc)
        return rc;
    const char *env = getenv("SKYPOOL_PLUGIN_PATH");
    if (env && *env)
        load_path_list(reg, env);
    load_dir(reg, sp_plugin_default_dir());
    return SP_OK;
}

void sp_registry_close(sp_registry *reg)
{
    for (size_t i = 0; i < reg->n_plugins; i++)
        sp_plugin_unload(&reg->plugins[i]);
    for (size_t i = 0; i < reg->n_refused; i++)
        free(reg->refused[i]);
    sp_host_fini(reg);
    memset(reg, 0, sizeof(*reg));
}

const sp_plugin *sp_registry_find(const sp_registry *reg, const char *name)
{
    for (size_t i = 0; i < reg->n_plugins; i++)
        if (strcmp(reg->plugins[i].table.name, name) == 0)
            return &reg->plugins[i];
    return NULL;
}
