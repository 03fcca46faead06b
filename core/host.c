/*
 * Host services for provider plugins: logging, settings and secrets, HTTP, catalogs, cache
 * directories. Providers reach the network and the catalog only through these.
 */
#include "registry.h"
#include "util.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_CATALOGS 32
#define CATALOG_TTL_S (6 * 3600)

typedef struct host_state {
    sp_catalog *catalogs[MAX_CATALOGS];
    char *catalog_names[MAX_CATALOGS];
    size_t n_catalogs;
    char cache_path[PATH_MAX];
    int log_level;
} host_state;

static bool running_from_build_tree(void)
{
    static int cached = -1;
    if (cached < 0) {
        char exe[PATH_MAX], real[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        cached = 0;
        if (n > 0) {
            exe[n] = '\0';
            char *slash = strrchr(exe, '/');
            if (slash)
                *slash = '\0';
            cached = realpath(SKYPOOL_BUILD_BIN_DIR, real) && strcmp(real, exe) == 0;
        }
    }
    return cached == 1;
}

const char *sp_catalog_dir(void)
{
    const char *env = getenv("SKYPOOL_CATALOG_DIR");
    if (env && *env)
        return env;
    return running_from_build_tree() ? SKYPOOL_BUILD_CATALOG_DIR
                                     : SKYPOOL_DATA_INSTALL_DIR "/catalog";
}

const char *sp_plugin_default_dir(void)
{
    return running_from_build_tree() ? SKYPOOL_BUILD_PLUGIN_DIR : SKYPOOL_PLUGIN_INSTALL_DIR;
}

const char *sp_nodecheck_dir(void)
{
    const char *env = getenv("SKYPOOL_NODECHECK_DIR");
    if (env && *env)
        return env;
    return running_from_build_tree() ? SKYPOOL_BUILD_NODECHECK_DIR : SKYPOOL_NODECHECK_INSTALL_DIR;
}

static host_state *state_of(const sp_host *host)
{
    return ((sp_registry *)host->opaque)->host_state;
}

static void host_log(const sp_host *host, sp_log_level level, const char *provider,
                     const char *msg)
{
    static const char *const names[] = {"error", "warning", "info", "debug"};
    if ((int)level > state_of(host)->log_level || (unsigned)level > SP_LOG_DEBUG)
        return;
    fprintf(stderr, "skypool: %s: %s: %s\n", provider ? provider : "host", names[level], msg);
}

static const char *host_getenv(const sp_host *host, const char *name)
{
    (void)host;
    return getenv(name);
}

static void *host_alloc(const sp_host *host, size_t size)
{
    (void)host;
    return malloc(size);
}

static void host_free(const sp_host *host, void *ptr)
{
    (void)host;
    free(ptr);
}

/* "$XDG_CACHE_HOME/skypool" or "~/.cache/skypool". */
static int cache_root(char *buf, size_t size)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (xdg && *xdg == '/')
        n = snprintf(buf, size, "%s/skypool", xdg);
    else if (home && *home)
        n = snprintf(buf, size, "%s/.cache/skypool", home);
    else
        return -1;
    return n > 0 && (size_t)n < size ? 0 : -1;
}

static int mkdir_p(char *path, mode_t mode)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        int rc = mkdir(path, mode);
        *p = '/';
        if (rc != 0 && errno != EEXIST)
            return -1;
    }
    return mkdir(path, mode) == 0 || errno == EEXIST ? 0 : -1;
}

static const char *host_cache_dir(const sp_host *host, const char *provider)
{
    host_state *st = state_of(host);
    char root[PATH_MAX - 64];
    if (cache_root(root, sizeof(root)) != 0)
        return NULL;
    snprintf(st->cache_path, sizeof(st->cache_path), "%s/%s", root,
             provider ? provider : "host");
    return mkdir_p(st->cache_path, 0700) == 0 ? st->cache_path : NULL;
}

int sp_cache_catalog_dir(char *buf, size_t size, bool create)
{
    char root[PATH_MAX - 64];
    if (cache_root(root, sizeof(root)) != 0)
        return -1;
    int n = snprintf(buf, size, "%s/catalog", root);
    if (n < 0 || (size_t)n >= size)
        return -1;
    return create ? mkdir_p(buf, 0700) : 0;
}

void sp_host_catalog_forget(sp_registry *reg, const char *provider)
{
    host_state *st = reg->host_state;
    for (size_t i = 0; i < st->n_catalogs; i++)
        if (strcmp(st->catalog_names[i], provider) == 0) {
            sp_catalog_free(st->catalogs[i]);
            free(st->catalog_names[i]);
            st->catalogs[i] = st->catalogs[st->n_catalogs - 1];
            st->catalog_names[i] = st->catalog_names[st->n_catalogs - 1];
            st->n_catalogs--;
            return;
        }
}

static sp_catalog *catalog_for(const sp_host *host, const char *provider, sp_err *err)
{
    host_state *st = state_of(host);
    for (size_t i = 0; i < st->n_catalogs; i++)
        if (strcmp(st->catalog_names[i], provider) == 0)
            return st->catalogs[i];
    if (st->n_catalogs == MAX_CATALOGS) {
        sp_err_set(err, SP_E_INTERNAL, "too many catalogs");
        return NULL;
    }
    char live[PATH_MAX];
    const char *live_dir = sp_cache_catalog_dir(live, sizeof(live), false) == 0 ? live : NULL;
    sp_catalog *cat = NULL;
    if (sp_catalog_load(provider, sp_catalog_dir(), live_dir, CATALOG_TTL_S, &cat, err) != SP_OK)
        return NULL;
    st->catalogs[st->n_catalogs] = cat;
    st->catalog_names[st->n_catalogs++] = sp_strdup(provider);
    return cat;
}

static int host_catalog_query(const sp_host *host, const char *provider,
                              const sp_offer_query *query, sp_offer_sink *sink, sp_err *err)
{
    sp_catalog *cat = catalog_for(host, provider, err);
    if (!cat)
        return err ? err->code : SP_E_IO;
    return sp_catalog_query(cat, query, sink, err);
}

/* The catalog a provider's offers come from, for `skypool catalog`. */
const sp_catalog *sp_host_catalog(sp_registry *reg, const char *provider, sp_err *err)
{
    return catalog_for(&reg->host, provider, err);
}

int sp_host_init(sp_registry *reg, sp_err *err)
{
    host_state *st = calloc(1, sizeof(*st));
    if (!st)
        return sp_err_set(err, SP_E_NOMEM, "out of memory");
    const char *lvl = getenv("SKYPOOL_LOG");
    st->log_level = SP_LOG_WARN;
    if (lvl && strcmp(lvl, "debug") == 0)
        st->log_level = SP_LOG_DEBUG;
    else if (lvl && strcmp(lvl, "info") == 0)
        st->log_level = SP_LOG_INFO;
    reg->host_state = st;
    sp_host *h = &reg->host;
    h->abi_major = SP_PROVIDER_ABI_MAJOR;
    h->struct_size = sizeof(*h);
    h->opaque = reg;
    h->log = host_log;
    h->getenv = host_getenv;
    h->http = sp_host_http;
    h->http_response_free = sp_host_http_free;
    h->catalog_query = host_catalog_query;
    h->cache_dir = host_cache_dir;
    h->alloc = host_alloc;
    h->free = host_free;
    return SP_OK;
}

void sp_host_fini(sp_registry *reg)
{
    sp_http_thread_done();
    host_state *st = reg->host_state;
    if (!st)
        return;
    for (size_t i = 0; i < st->n_catalogs; i++) {
        sp_catalog_free(st->catalogs[i]);
        free(st->catalog_names[i]);
    }
    free(st);
    reg->host_state = NULL;
}
