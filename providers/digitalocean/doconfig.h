/*
 * The DigitalOcean API token, found where doctl finds it (internal to the provider):
 * DIGITALOCEAN_TOKEN, then DIGITALOCEAN_ACCESS_TOKEN, then doctl's config file. Everything is
 * read through the host (host->getenv) and that file; nothing here talks to the network.
 */
#ifndef SKYPOOL_DO_CONFIG_H
#define SKYPOOL_DO_CONFIG_H

#include <skypool/provider.h>
#include <stddef.h>

#define DO_CONFIG_FILE_MAX (1024 * 1024) /* larger config files are refused */

typedef struct do_config {
    char token[1024];          /* "" when none was found */
    char source[192];          /* "environment (DIGITALOCEAN_TOKEN)", "doctl config (context
                                  default)" */
    char why_none[512];        /* when none: what was looked at, and what to do */
    char path[1024];           /* doctl's config file looked at ("" without a home) */
} do_config;

/*
 * The token: DIGITALOCEAN_TOKEN, else DIGITALOCEAN_ACCESS_TOKEN, else doctl's config file
 * ($XDG_CONFIG_HOME/doctl/config.yaml, else ~/.config/doctl/config.yaml; on macOS
 * ~/Library/Application Support/doctl/config.yaml): the token of the current context
 * (DIGITALOCEAN_CONTEXT, else the file's `context:`, else "default"); the default context's
 * token is `access-token:`, any other's is under `auth-contexts:`.
 *
 * SP_OK when nothing was wrong, with or without a token (why_none then says what to do).
 * SP_E_IO for a config file that exists but cannot be read; SP_E_INVALID for one that is not
 * YAML of doctl's shape (with line:column), over 1 MiB, or a token with characters a token
 * never has. No message ever carries a token.
 */
int do_config_load(const sp_host *host, do_config *cfg, sp_err *err);

/* Reads doctl's config text for `context` (NULL: the file's own, else "default"). path is for
 * messages. Same results as do_config_load. */
int do_doctl_parse(const char *text, size_t len, const char *context, const char *path,
                   do_config *cfg, sp_err *err);

/* Overwrites p[0..n) with zeros in a way the compiler may not drop. */
void do_cleanse(void *p, size_t n);

/* Wipes the token (and everything else) in *cfg. */
void do_config_wipe(do_config *cfg);

#endif
