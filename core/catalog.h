/* Offer catalog internals shared with the tests and the fuzzer. Not a public interface; the
 * public API is the "Offer catalog" section of skypool.h, the format is catalog/README.md. */
#ifndef SKYPOOL_CATALOG_H
#define SKYPOOL_CATALOG_H

#include <skypool/skypool.h>

#define SP_CATALOG_FORMAT_LINE "# skypool-catalog 1"
#define SP_CATALOG_MAX_BYTES (64u << 20)
#define SP_CATALOG_MAX_ROWS 1000000u
#define SP_CATALOG_PROVIDER_MAX 63

/*
 * Parses a catalog held in memory, in place. buf is malloc'd, holds len bytes and a NUL at
 * buf[len]; the catalog takes it over (it is freed on failure too). name is the file name used
 * in messages; provider is the provider the file must declare.
 */
int sp_catalog_parse(const char *provider, const char *name, char *buf, size_t len,
                     sp_catalog **catalog, sp_err *err);

/* Why the live cache was passed over in favour of the bundled file ("" when it was used, or
 * there was none): "<path> is 90061 s old; the TTL is 86400 s". */
const char *sp_catalog_cache_note(const sp_catalog *catalog);

#endif
