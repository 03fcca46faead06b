/* Loaded provider plugins and the host services handed to them (internal). */
#ifndef SKYPOOL_REGISTRY_H
#define SKYPOOL_REGISTRY_H

#include <skypool/skypool.h>

typedef struct sp_plugin {
    char *path;
    void *dl;
    sp_provider table;          /* the plugin's table, copied and zero-extended */
    uint32_t table_size;        /* the size the plugin declared */
    void *ctx;
} sp_plugin;

#define SP_REGISTRY_MAX_PLUGINS 32
#define SP_REGISTRY_MAX_REFUSED 32

typedef struct sp_registry {
    sp_host host;
    sp_plugin plugins[SP_REGISTRY_MAX_PLUGINS];
    size_t n_plugins;
    char *refused[SP_REGISTRY_MAX_REFUSED]; /* messages for plugins that were not loaded */
    size_t n_refused;
    void *host_state;           /* host.c's own */
} sp_registry;

/* Where things are: the build tree when the running binary is the build's, else the install. */
const char *sp_catalog_dir(void);
const char *sp_plugin_default_dir(void);
/* Holds <arch>/skypool-nodecheck for each architecture built: $SKYPOOL_NODECHECK_DIR, else the
 * build tree or the install's libexec directory. */
const char *sp_nodecheck_dir(void);

/* Sets up host services (HTTP, logging, catalogs) for the registry. */
int sp_host_init(sp_registry *reg, sp_err *err);
void sp_host_fini(sp_registry *reg);

/* Loads one plugin file. Refusals (ABI, table size, entry symbol, permissions) come back as
 * SP_E_ABI or SP_E_PERM with a message naming the file. */
int sp_plugin_load(sp_registry *reg, const char *path, sp_plugin *plugin, sp_err *err);
void sp_plugin_unload(sp_plugin *plugin);

/* Host services plus every plugin found on the search path: $SKYPOOL_PLUGIN_PATH (colon
 * separated), then the build tree's or the install's plugin directory. Plugins that are refused
 * are listed in reg->refused; they do not make this fail. */
int sp_registry_open(sp_registry *reg, sp_err *err);
void sp_registry_close(sp_registry *reg);
/* The catalog the host serves to a provider (loaded on first use), for `skypool catalog`. */
const sp_catalog *sp_host_catalog(sp_registry *reg, const char *provider, sp_err *err);

/* "$XDG_CACHE_HOME/skypool/catalog" (or ~/.cache/...), made 0700 when create is set. */
int sp_cache_catalog_dir(char *buf, size_t size, bool create);
/* Drops the host's loaded copy of a provider's catalog, so the next query reads the file anew. */
void sp_host_catalog_forget(sp_registry *reg, const char *provider);

/* Live refresh (live.c): asks the provider for current offers in these regions and stores them
 * as its cached catalog, keeping the rows of other regions from the catalog in use. Regions the
 * provider could not refresh come back in notes (malloc'd strings, *n_notes of them; free
 * with sp_live_notes_free). *rows is the number of live rows stored. */
int sp_live_refresh(sp_registry *reg, const sp_plugin *plugin, const char *const *regions,
                    size_t n_regions, size_t *rows, char ***notes, size_t *n_notes, sp_err *err);
void sp_live_notes_free(char **notes, size_t n);

/* The host's HTTP service (http.c), also usable by the core itself. */
int sp_host_http(const sp_host *host, const sp_http_request *req, sp_http_response *resp,
                 sp_err *err);
void sp_host_http_free(const sp_host *host, sp_http_response *resp);
/* Releases the calling thread's HTTP handle (threads that end release theirs themselves). */
void sp_http_thread_done(void);

const sp_plugin *sp_registry_find(const sp_registry *reg, const char *name);

#endif
