/*
 * The offer catalog: one TSV file per provider (format: catalog/README.md), bundled with skypool
 * or written by a live refresh into the cache directory.
 *
 * `skypool offers` loads every catalog on each run, so a load reads the file into one buffer and
 * parses it in place: strings point into the buffer, rows live in one array, nothing else is
 * allocated per row. The files are input we did not write ourselves (a cache can be truncated or
 * tampered with), so every line is checked and a bad one is refused with its line number.
 */
#include "catalog.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FIX_BUNDLED "rebuild it with tools/build-catalog.py"
#define FIX_CACHE "delete it or refresh the catalog; skypool uses the bundled catalog meanwhile"
#define FIX_GENERIC "see catalog/README.md for the format"
/* A cache stamped further ahead than this is not trusted to be fresh (clock skew is fine). */
#define FUTURE_SLACK_S 300
#define PRICE_MAX 1e9 /* USD per hour; the format carries at most 9 integer digits */
#define QUOTE_MAX 40  /* how much of a bad value a message quotes */

enum column {
    COL_INSTANCE_TYPE,
    COL_ACCELERATOR,
    COL_COUNT,
    COL_ACCEL_MEM,
    COL_VCPUS,
    COL_MEM,
    COL_PRICE,
    COL_SPOT,
    COL_REGION,
    COL_ZONE,
    COL_ARCH,
    N_COLUMNS
};

static const char *const column_names[N_COLUMNS] = {
    "instance_type", "accelerator", "count", "accel_mem_mib", "vcpus", "mem_mib",
    "price", "spot_price", "region", "zone", "arch",
};

#define COLUMN_LINE                                                                            \
    "instance_type\taccelerator\tcount\taccel_mem_mib\tvcpus\tmem_mib\tprice\tspot_price\t"    \
    "region\tzone\tarch"

typedef struct catalog_row {
    const char *instance_type;
    const char *accelerator;
    const char *region; /* "" where the file says '-' */
    const char *zone;
    const char *arch;
    uint32_t count;
    uint32_t accel_mem_mib;
    uint32_t vcpus;
    uint32_t mem_mib;
    double price; /* SP_PRICE_UNKNOWN for '-' */
    double spot;
} catalog_row;

struct sp_catalog {
    char *buf; /* the whole file; every string below points into it */
    catalog_row *rows;
    size_t n_rows;
    char *path;
    const char *source;
    const char *date;
    long long fetched_at; /* -1: no fetched_at line */
    bool live;
    long long age_s;
    char provider[SP_CATALOG_PROVIDER_MAX + 1];
    char cache_note[SP_ERR_MSG_MAX];
};

typedef struct parser {
    sp_catalog *cat;
    char *cursor;
    char *end;
    size_t line; /* 1-based number of the line last cut */
    size_t rows_cap;
    bool have_provider;
    const char *name;
    const char *fix;
    sp_err *err;
} parser;

/* ---- Small checks shared by the reader and the writer ------------------------------------ */

static bool provider_name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > SP_CATALOG_PROVIDER_MAX)
        return false;
    for (const char *s = name; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-'))
            return false;
    return true;
}

static int check_provider(const char *provider, sp_err *err)
{
    if (provider_name_ok(provider))
        return SP_OK;
    return sp_err_set(err, SP_E_INVALID,
                      "provider name '%.*s' is not valid: use 1 to %d of a-z, 0-9 and '-'",
                      QUOTE_MAX, provider ? provider : "", SP_CATALOG_PROVIDER_MAX);
}

/* No control characters: values end up on terminals and in a tab-separated file. */
static bool text_ok(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return false;
    return true;
}

static bool date_ok(const char *s)
{
    static const char shape[] = "dddd-dd-dd";
    for (size_t i = 0; i < sizeof(shape) - 1; i++) {
        bool digit = s[i] >= '0' && s[i] <= '9';
        if (shape[i] == 'd' ? !digit : s[i] != '-')
            return false;
    }
    return s[sizeof(shape) - 1] == '\0';
}

static bool parse_u32(const char *s, uint32_t *out)
{
    uint64_t v = 0;
    if (*s == '\0')
        return false;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return false;
        v = v * 10 + (uint64_t)(*s - '0');
        if (v > UINT32_MAX)
            return false;
    }
    *out = (uint32_t)v;
    return true;
}

static bool parse_digits_ll(const char *s, long long *out)
{
    long long v = 0;
    size_t n = 0;
    for (; *s >= '0' && *s <= '9'; s++, n++) {
        if (n == 18)
            return false;
        v = v * 10 + (*s - '0');
    }
    if (n == 0 || *s != '\0')
        return false;
    *out = v;
    return true;
}

/*
 * "-" or up to 9 integer and 9 fractional digits. Not strtod: that follows the C locale's
 * decimal point. With at most 15 digits in all, mantissa / 10^k is correctly rounded.
 */
static bool parse_price(const char *s, double *out)
{
    static const double pow10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
    uint64_t m = 0;
    int int_digits = 0, frac_digits = 0;
    if (strcmp(s, "-") == 0) {
        *out = SP_PRICE_UNKNOWN;
        return true;
    }
    for (; *s >= '0' && *s <= '9' && int_digits < 10; s++, int_digits++)
        m = m * 10 + (uint64_t)(*s - '0');
    if (int_digits == 0 || int_digits > 9)
        return false;
    if (*s == '.')
        for (s++; *s >= '0' && *s <= '9' && frac_digits < 10; s++, frac_digits++)
            m = m * 10 + (uint64_t)(*s - '0');
    if (*s != '\0' || frac_digits > 9 || (s[-1] == '.'))
        return false;
    *out = (double)m / pow10[frac_digits];
    return true;
}

/* ---- Reading ----------------------------------------------------------------------------- */

static SP_PRINTF(2, 3) int parse_fail(parser *p, const char *fmt, ...)
{
    char what[SP_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return sp_err_set(p->err, SP_E_INVALID, "%s:%zu: %s; %s", p->name, p->line, what, p->fix);
}

/* Cuts the next line out of the buffer (NUL-terminated, CR LF tolerated); NULL at the end. */
static int next_line(parser *p, char **line)
{
    *line = NULL;
    if (p->cursor >= p->end)
        return SP_OK;
    char *s = p->cursor;
    char *nl = memchr(s, '\n', (size_t)(p->end - s));
    char *e = nl ? nl : p->end;
    p->cursor = nl ? nl + 1 : p->end;
    p->line++;
    if (memchr(s, '\0', (size_t)(e - s)))
        return parse_fail(p, "the line holds a NUL byte");
    if (e > s && e[-1] == '\r')
        e--;
    *e = '\0';
    *line = s;
    return SP_OK;
}

static int format_line_fail(parser *p, const char *line)
{
    static const char prefix[] = "# skypool-catalog ";
    if (strncmp(line, prefix, sizeof(prefix) - 1) == 0)
        return parse_fail(p, "format version '%.*s' is not one this skypool reads ('%s')",
                          QUOTE_MAX, line + sizeof(prefix) - 1, SP_CATALOG_FORMAT_LINE);
    return parse_fail(p, "not a skypool catalog: the first line must be '%s'",
                      SP_CATALOG_FORMAT_LINE);
}

static int meta_provider(parser *p, const char *value)
{
    if (strcmp(value, p->cat->provider) != 0)
        return parse_fail(p, "the file declares provider '%.*s', expected '%s'", QUOTE_MAX, value,
                          p->cat->provider);
    p->have_provider = true;
    return SP_OK;
}

static int meta_fetched_at(parser *p, const char *value)
{
    if (!parse_digits_ll(value, &p->cat->fetched_at))
        return parse_fail(p, "fetched_at is '%.*s', expected unix seconds", QUOTE_MAX, value);
    return SP_OK;
}

/* "# key: value" before the column names. Unknown keys and free comments are skipped. */
static int parse_meta(parser *p, char *line)
{
    char *key = line + 1 + strspn(line + 1, " ");
    char *colon = strchr(key, ':');
    if (!colon)
        return SP_OK;
    *colon = '\0';
    char *value = colon + 1 + strspn(colon + 1, " ");
    bool known = !strcmp(key, "provider") || !strcmp(key, "source") || !strcmp(key, "date") ||
                 !strcmp(key, "fetched_at");
    if (known && !text_ok(value))
        return parse_fail(p, "'%s' holds a control character", key);
    if (!strcmp(key, "provider"))
        return meta_provider(p, value);
    if (!strcmp(key, "fetched_at"))
        return meta_fetched_at(p, value);
    if (!strcmp(key, "date") && !date_ok(value))
        return parse_fail(p, "date is '%.*s', expected YYYY-MM-DD", QUOTE_MAX, value);
    if (!strcmp(key, "date"))
        p->cat->date = value;
    else if (!strcmp(key, "source"))
        p->cat->source = value;
    return SP_OK;
}

/* The format line, "# key: value" lines, then the column names. */
static int parse_preamble(parser *p)
{
    char *line;
    int rc = next_line(p, &line);
    if (rc)
        return rc;
    if (!line || strcmp(line, SP_CATALOG_FORMAT_LINE) != 0) {
        p->line = p->line ? p->line : 1;
        return format_line_fail(p, line ? line : "");
    }
    for (;;) {
        if ((rc = next_line(p, &line)) != SP_OK)
            return rc;
        if (!line)
            return parse_fail(p, "the file ends before the line of column names");
        if (line[0] == '#')
            rc = parse_meta(p, line);
        else if (line[0] != '\0')
            break;
        if (rc)
            return rc;
    }
    if (strcmp(line, COLUMN_LINE) != 0)
        return parse_fail(p, "expected the column names instance_type, accelerator, count, "
                             "accel_mem_mib, vcpus, mem_mib, price, spot_price, region, zone, "
                             "arch, separated by tabs");
    if (!p->have_provider)
        return parse_fail(p, "no '# provider: %s' line before the column names",
                          p->cat->provider);
    return SP_OK;
}

static int alloc_rows(parser *p)
{
    size_t lines = 1;
    for (const char *s = p->cursor; (s = memchr(s, '\n', (size_t)(p->end - s))) != NULL; s++)
        lines++;
    p->rows_cap = lines < SP_CATALOG_MAX_ROWS ? lines : SP_CATALOG_MAX_ROWS;
    p->cat->rows = calloc(p->rows_cap, sizeof(*p->cat->rows));
    if (!p->cat->rows)
        return sp_err_set(p->err, SP_E_NOMEM, "%s: out of memory for %zu rows", p->name,
                          p->rows_cap);
    return SP_OK;
}

static int split_columns(parser *p, char *line, char *cols[N_COLUMNS])
{
    size_t n = 1;
    cols[0] = line;
    for (char *s = line; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\t') {
            *s = '\0';
            if (n < N_COLUMNS)
                cols[n] = s + 1;
            n++;
        } else if (c < 0x20 || c == 0x7f) {
            return parse_fail(p, "control character 0x%02x in column '%s'", c,
                              column_names[n <= N_COLUMNS ? n - 1 : N_COLUMNS - 1]);
        }
    }
    if (n != N_COLUMNS)
        return parse_fail(p, "expected %d tab-separated columns, found %zu", N_COLUMNS, n);
    for (int i = 0; i < N_COLUMNS; i++)
        if (cols[i][0] == '\0')
            return parse_fail(p, "column '%s' is empty; write '-' where a value is unknown",
                              column_names[i]);
    return SP_OK;
}

static int column_u32(parser *p, char **cols, int col, uint32_t *out)
{
    if (parse_u32(cols[col], out))
        return SP_OK;
    return parse_fail(p, "column '%s' is '%.*s', expected a whole number", column_names[col],
                      QUOTE_MAX, cols[col]);
}

static bool price_fits(double price);

static int column_price(parser *p, char **cols, int col, double *out)
{
    /* Refused here too: what the writer could not write back (999999999.9999999 rounds up
     * to a billion), so a catalog read is always a catalog that can be written. */
    if (parse_price(cols[col], out) && price_fits(*out))
        return SP_OK;
    return parse_fail(p, "column '%s' is '%.*s', expected USD per hour such as 12.5, or '-'",
                      column_names[col], QUOTE_MAX, cols[col]);
}

static const char *column_text(char **cols, int col)
{
    return strcmp(cols[col], "-") == 0 ? "" : cols[col];
}

static int parse_row(parser *p, char *line, catalog_row *r)
{
    char *cols[N_COLUMNS];
    int rc = split_columns(p, line, cols);
    for (int col = COL_INSTANCE_TYPE; !rc && col <= COL_ACCELERATOR; col++)
        if (strcmp(cols[col], "-") == 0)
            rc = parse_fail(p, "column '%s' is '-'; every row needs one", column_names[col]);
    if (!rc)
        rc = column_u32(p, cols, COL_COUNT, &r->count);
    if (!rc && r->count == 0)
        rc = parse_fail(p, "column 'count' is 0; a row offers at least one accelerator");
    if (!rc)
        rc = column_u32(p, cols, COL_ACCEL_MEM, &r->accel_mem_mib);
    if (!rc)
        rc = column_u32(p, cols, COL_VCPUS, &r->vcpus);
    if (!rc)
        rc = column_u32(p, cols, COL_MEM, &r->mem_mib);
    if (!rc)
        rc = column_price(p, cols, COL_PRICE, &r->price);
    if (!rc)
        rc = column_price(p, cols, COL_SPOT, &r->spot);
    if (rc)
        return rc;
    r->instance_type = cols[COL_INSTANCE_TYPE];
    r->accelerator = cols[COL_ACCELERATOR];
    r->region = column_text(cols, COL_REGION);
    r->zone = column_text(cols, COL_ZONE);
    r->arch = column_text(cols, COL_ARCH);
    return SP_OK;
}

static int parse_rows(parser *p)
{
    sp_catalog *cat = p->cat;
    char *line;
    for (;;) {
        int rc = next_line(p, &line);
        if (rc || !line)
            return rc;
        if (line[0] == '\0' || line[0] == '#')
            continue;
        if (cat->n_rows == p->rows_cap)
            return parse_fail(p, "more than %u rows", SP_CATALOG_MAX_ROWS);
        if ((rc = parse_row(p, line, &cat->rows[cat->n_rows])) != SP_OK)
            return rc;
        cat->n_rows++;
    }
}

static int parse_buffer(const char *provider, const char *name, const char *fix, char *buf,
                        size_t len, sp_catalog **out, sp_err *err)
{
    *out = NULL;
    sp_catalog *cat = calloc(1, sizeof(*cat));
    if (!cat || !(cat->path = sp_strdup(name))) {
        free(cat);
        free(buf);
        return sp_err_set(err, SP_E_NOMEM, "%s: out of memory", name);
    }
    cat->buf = buf;
    cat->source = cat->date = "";
    cat->fetched_at = -1;
    cat->age_s = -1;
    sp_strlcpy(cat->provider, provider, sizeof(cat->provider));
    parser p = {.cat = cat, .cursor = buf, .end = buf + len, .name = name, .fix = fix, .err = err};
    int rc = parse_preamble(&p);
    if (!rc)
        rc = alloc_rows(&p);
    if (!rc)
        rc = parse_rows(&p);
    if (rc) {
        sp_catalog_free(cat);
        return rc;
    }
    *out = cat;
    return SP_OK;
}

int sp_catalog_parse(const char *provider, const char *name, char *buf, size_t len,
                     sp_catalog **catalog, sp_err *err)
{
    int rc = check_provider(provider, err);
    if (!rc && len > SP_CATALOG_MAX_BYTES)
        rc = sp_err_set(err, SP_E_INVALID, "%s: %zu bytes, more than the %u MiB a catalog may hold",
                        name, len, SP_CATALOG_MAX_BYTES >> 20);
    if (rc) {
        free(buf);
        *catalog = NULL;
        return rc;
    }
    return parse_buffer(provider, name, FIX_GENERIC, buf, len, catalog, err);
}

static int read_all(int fd, const char *path, char *buf, size_t size, size_t *got, sp_err *err)
{
    *got = 0;
    while (*got < size) {
        ssize_t r = read(fd, buf + *got, size - *got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return sp_err_set(err, SP_E_IO, "%s: cannot read: %s", path, strerror(errno));
        if (r == 0)
            break;
        *got += (size_t)r;
    }
    buf[*got] = '\0';
    return SP_OK;
}

static int open_catalog(const char *path, size_t *size, sp_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -sp_err_set(err, errno == ENOENT ? SP_E_NOTFOUND : SP_E_IO,
                           "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    int rc = SP_OK;
    if (fstat(fd, &st) != 0)
        rc = sp_err_set(err, SP_E_IO, "%s: cannot stat: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rc = sp_err_set(err, SP_E_IO, "%s: not a regular file", path);
    else if ((unsigned long long)st.st_size > SP_CATALOG_MAX_BYTES)
        rc = sp_err_set(err, SP_E_INVALID,
                        "%s: %lld bytes, more than the %u MiB a catalog may hold; is it a catalog?",
                        path, (long long)st.st_size, SP_CATALOG_MAX_BYTES >> 20);
    if (rc) {
        close(fd);
        return -rc;
    }
    *size = (size_t)st.st_size;
    return fd;
}

/* Reads the whole file into one NUL-terminated buffer. */
static int read_file(const char *path, char **out, size_t *len, sp_err *err)
{
    size_t size = 0;
    int fd = open_catalog(path, &size, err);
    if (fd < 0)
        return -fd;
    char *buf = malloc(size + 1);
    int rc = buf ? read_all(fd, path, buf, size, len, err)
                 : sp_err_set(err, SP_E_NOMEM, "%s: out of memory for %zu bytes", path, size);
    close(fd);
    if (rc) {
        free(buf);
        return rc;
    }
    *out = buf;
    return SP_OK;
}

static int load_file(const char *provider, const char *path, const char *fix, sp_catalog **out,
                     sp_err *err)
{
    char *buf = NULL;
    size_t len = 0;
    int rc = read_file(path, &buf, &len, err);
    if (rc)
        return rc;
    return parse_buffer(provider, path, fix, buf, len, out, err);
}

/* Whether a parsed cache file is fresh enough to use; if not, note says why. */
static bool cache_fresh(sp_catalog *cat, long long ttl_s, char *note, size_t note_size)
{
    if (cat->fetched_at < 0) {
        snprintf(note, note_size, "%s has no '# fetched_at:' line, so its age is unknown",
                 cat->path);
        return false;
    }
    long long age = (long long)time(NULL) - cat->fetched_at;
    if (age < -FUTURE_SLACK_S) {
        snprintf(note, note_size, "%s was fetched %lld s in the future; check the clock",
                 cat->path, -age);
        return false;
    }
    age = age < 0 ? 0 : age;
    if (age >= ttl_s) {
        snprintf(note, note_size, "%s is %lld s old; the TTL is %lld s", cat->path, age, ttl_s);
        return false;
    }
    cat->live = true;
    cat->age_s = age;
    return true;
}

static sp_catalog *load_cache(const char *provider, const char *dir, long long ttl_s, char *note,
                              size_t note_size)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof(path), "%s/%s.tsv", dir, provider) >= (int)sizeof(path)) {
        snprintf(note, note_size, "the cache directory's name is too long");
        return NULL;
    }
    sp_err err = {0};
    sp_catalog *cat = NULL;
    int rc = load_file(provider, path, FIX_CACHE, &cat, &err);
    if (rc == SP_E_NOTFOUND)
        return NULL;
    if (rc) {
        snprintf(note, note_size, "%s", err.msg);
        return NULL;
    }
    if (cache_fresh(cat, ttl_s, note, note_size))
        return cat;
    sp_catalog_free(cat);
    return NULL;
}

static int load_bundled(const char *provider, const char *dir, sp_catalog **out, sp_err *err)
{
    char path[PATH_MAX];
    if (!dir)
        return sp_err_set(err, SP_E_INVALID, "no bundled catalog directory for '%s'", provider);
    if (snprintf(path, sizeof(path), "%s/%s.tsv", dir, provider) >= (int)sizeof(path))
        return sp_err_set(err, SP_E_INVALID, "the catalog directory's name is too long");
    int rc = load_file(provider, path, FIX_BUNDLED, out, err);
    if (rc == SP_E_NOTFOUND)
        sp_err_set(err, rc, "%s: no such file: skypool has no bundled catalog for '%s'; check "
                            "the installation or rebuild it with tools/build-catalog.py",
                   path, provider);
    return rc;
}

int sp_catalog_load(const char *provider, const char *bundled_dir, const char *cache_dir,
                    long long ttl_s, sp_catalog **catalog, sp_err *err)
{
    char note[SP_ERR_MSG_MAX] = "";
    *catalog = NULL;
    int rc = check_provider(provider, err);
    if (rc)
        return rc;
    if (cache_dir && (*catalog = load_cache(provider, cache_dir, ttl_s, note, sizeof(note))))
        return SP_OK;
    if ((rc = load_bundled(provider, bundled_dir, catalog, err)) != SP_OK)
        return rc;
    sp_strlcpy((*catalog)->cache_note, note, sizeof((*catalog)->cache_note));
    return SP_OK;
}

void sp_catalog_free(sp_catalog *catalog)
{
    if (!catalog)
        return;
    free(catalog->rows);
    free(catalog->buf);
    free(catalog->path);
    free(catalog);
}

void sp_catalog_info_get(const sp_catalog *catalog, sp_catalog_info *info)
{
    memset(info, 0, sizeof(*info));
    if (!catalog)
        return;
    info->provider = catalog->provider;
    info->path = catalog->path;
    info->source = catalog->source;
    info->date = catalog->date;
    info->live = catalog->live;
    info->n_rows = catalog->n_rows;
    info->age_s = catalog->live ? catalog->age_s : -1;
}

const char *sp_catalog_cache_note(const sp_catalog *catalog)
{
    return catalog ? catalog->cache_note : "";
}

/* ---- Query ------------------------------------------------------------------------------- */

#define QUERY_SIZE_1_0 (offsetof(sp_offer_query, n_regions) + sizeof(size_t))
#define SINK_SIZE_1_0 (offsetof(sp_offer_sink, note) + sizeof(void (*)(void)))

static bool in_list(const char *value, const char *const *list, size_t n)
{
    if (n == 0)
        return true;
    for (size_t i = 0; i < n; i++)
        if (list[i] && sp_streq_nocase(value, list[i]))
            return true;
    return false;
}

/* count_max 0 reads as "no upper bound", so that a zeroed query matches every row. */
static bool row_matches(const catalog_row *r, const sp_offer_query *q)
{
    if (r->count < q->count_min || (q->count_max && r->count > q->count_max))
        return false;
    if (r->accel_mem_mib < q->mem_min_mib || (q->want_spot && r->spot < 0))
        return false;
    /* A row without a region (Modal: global; unknown) cannot satisfy a region list. */
    return in_list(r->accelerator, q->models, q->n_models) &&
           in_list(r->region, q->regions, q->n_regions);
}

static void row_offer(const sp_catalog *cat, const catalog_row *r, sp_offer *o)
{
    memset(o, 0, sizeof(*o));
    o->struct_size = sizeof(*o);
    o->provider = cat->provider;
    o->region = r->region;
    o->zone = r->zone;
    o->instance_type = r->instance_type;
    o->accelerator = r->accelerator;
    o->accel_count = r->count;
    o->accel_mem_mib = r->accel_mem_mib;
    o->vcpus = r->vcpus;
    o->mem_mib = r->mem_mib;
    o->price_on_demand = r->price;
    o->price_spot = r->spot;
    o->arch = r->arch;
}

static int check_query(const sp_offer_query *q, const sp_offer_sink *sink, sp_err *err)
{
    if (!q || !sink || !sink->offer)
        return sp_err_set(err, SP_E_INVALID, "catalog query: no query, sink or sink->offer");
    if (q->struct_size < QUERY_SIZE_1_0 || sink->struct_size < SINK_SIZE_1_0)
        return sp_err_set(err, SP_E_ABI,
                          "catalog query: struct_size of the query (%u) or sink (%u) is smaller "
                          "than the ABI 1.0 layout (%zu, %zu); set it to sizeof",
                          q->struct_size, sink->struct_size, QUERY_SIZE_1_0, SINK_SIZE_1_0);
    if ((q->n_models && !q->models) || (q->n_regions && !q->regions))
        return sp_err_set(err, SP_E_INVALID, "catalog query: n_models or n_regions is set "
                                             "but its list is NULL");
    return SP_OK;
}

int sp_catalog_query(const sp_catalog *catalog, const sp_offer_query *query, sp_offer_sink *sink,
                     sp_err *err)
{
    int rc = check_query(query, sink, err);
    if (rc)
        return rc;
    if (!catalog)
        return sp_err_set(err, SP_E_INVALID, "catalog query: no catalog");
    for (size_t i = 0; i < catalog->n_rows; i++) {
        const catalog_row *r = &catalog->rows[i];
        if (!row_matches(r, query))
            continue;
        sp_offer offer;
        row_offer(catalog, r, &offer);
        if ((rc = sink->offer(sink, &offer)) != 0)
            return rc;
    }
    return SP_OK;
}

/* ---- Writing ----------------------------------------------------------------------------- */

static const char *cell(const char *s)
{
    return s && *s ? s : "-";
}

static double price_key(double p)
{
    return isfinite(p) && p >= 0 ? p : SP_PRICE_UNKNOWN;
}

static int cmp_str(const char *a, const char *b)
{
    return strcmp(cell(a), cell(b));
}

static int cmp_num(double a, double b)
{
    return (a > b) - (a < b);
}

/* The order tools/build-catalog.py sorts in (its sort_key): keep the two in step. */
static int offer_compare(const void *pa, const void *pb)
{
    const sp_offer *a = *(const sp_offer *const *)pa, *b = *(const sp_offer *const *)pb;
    int c;
    if ((c = cmp_str(a->accelerator, b->accelerator)) || (c = cmp_num(a->accel_count, b->accel_count)))
        return c;
    if ((c = cmp_str(a->instance_type, b->instance_type)) || (c = cmp_str(a->region, b->region)))
        return c;
    if ((c = cmp_str(a->zone, b->zone)) || (c = cmp_str(a->arch, b->arch)))
        return c;
    if ((c = cmp_num(price_key(a->price_on_demand), price_key(b->price_on_demand))) ||
        (c = cmp_num(price_key(a->price_spot), price_key(b->price_spot))))
        return c;
    if ((c = cmp_num(a->vcpus, b->vcpus)) || (c = cmp_num(a->mem_mib, b->mem_mib)))
        return c;
    return cmp_num(a->accel_mem_mib, b->accel_mem_mib);
}

/* At most 6 decimals, trailing zeros dropped: 98.32, 45.1, 0.5904; "-" when unknown. */
static size_t format_price(double price, char *text, size_t size)
{
    if (price_key(price) < 0 || price >= PRICE_MAX)
        return (size_t)snprintf(text, size, "-");
    size_t n = (size_t)snprintf(text, size, "%.6f", price);
    while (n > 0 && text[n - 1] == '0')
        n--;
    if (n > 0 && text[n - 1] == '.')
        n--;
    text[n] = '\0';
    return n;
}

/* Whether the price fits the format's 9 integer digits once rounded to 6 decimals. */
static bool price_fits(double price)
{
    char text[64];
    if (price_key(price) < 0)
        return true;
    if (price >= PRICE_MAX)
        return false;
    size_t n = format_price(price, text, sizeof(text));
    const char *dot = strchr(text, '.');
    return (dot ? (size_t)(dot - text) : n) <= 9;
}

static void append_price(sp_buf *b, double price)
{
    char text[64];
    size_t n = format_price(price, text, sizeof(text));
    sp_buf_append(b, text, n);
}

static int check_offer(const sp_offer *o, size_t i, sp_err *err)
{
    const char *strings[] = {o->instance_type, o->accelerator, o->region, o->zone, o->arch};
    const char *what = NULL;
    for (size_t k = 0; k < sizeof(strings) / sizeof(strings[0]) && !what; k++)
        if (strings[k] && !text_ok(strings[k]))
            what = "a text field holds a tab, newline or other control character";
    if (!what && (!o->instance_type || !*o->instance_type || !strcmp(o->instance_type, "-")))
        what = "no instance type";
    else if (!what && o->instance_type[0] == '#')
        what = "an instance type that starts with '#' (the format's comment mark)";
    else if (!what && (!o->accelerator || !*o->accelerator || !strcmp(o->accelerator, "-")))
        what = "no accelerator";
    else if (!what && o->accel_count == 0)
        what = "an accelerator count of 0";
    else if (!what && (!price_fits(o->price_on_demand) || !price_fits(o->price_spot)))
        what = "a price of a billion USD per hour or more";
    if (!what)
        return SP_OK;
    return sp_err_set(err, SP_E_INVALID, "catalog write: offer %zu (%.*s) has %s", i, QUOTE_MAX,
                      o->instance_type && text_ok(o->instance_type) ? o->instance_type : "?", what);
}

static void append_offer(sp_buf *b, const sp_offer *o)
{
    sp_buf_printf(b, "%s\t%s\t%u\t%u\t%u\t%u\t", o->instance_type, o->accelerator,
                  (unsigned)o->accel_count, (unsigned)o->accel_mem_mib, (unsigned)o->vcpus,
                  (unsigned)o->mem_mib);
    append_price(b, o->price_on_demand);
    sp_buf_puts(b, "\t");
    append_price(b, o->price_spot);
    sp_buf_printf(b, "\t%s\t%s\t%s\n", cell(o->region), cell(o->zone), cell(o->arch));
}

static int append_rows(sp_buf *b, const sp_offer *offers, size_t n, sp_err *err)
{
    const sp_offer **order = malloc((n ? n : 1) * sizeof(*order));
    if (!order)
        return sp_err_set(err, SP_E_NOMEM, "catalog write: out of memory for %zu offers", n);
    int rc = SP_OK;
    for (size_t i = 0; i < n && !rc; i++) {
        rc = check_offer(&offers[i], i, err);
        order[i] = &offers[i];
    }
    if (!rc) {
        qsort(order, n, sizeof(*order), offer_compare);
        for (size_t i = 0; i < n; i++)
            append_offer(b, order[i]);
    }
    free(order);
    return rc;
}

static int write_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, data, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        data += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Temporary file in the same directory, then rename: readers see the old file or the new. */
static int write_atomic(const char *path, const char *data, size_t len, sp_err *err)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
        return sp_err_set(err, SP_E_INVALID, "%s: the path is too long", path);
    int fd = mkstemp(tmp);
    if (fd < 0)
        return sp_err_set(err, SP_E_IO, "%s: cannot create a temporary file beside it: %s; check "
                                        "that the directory exists and is writable",
                          path, strerror(errno));
    int bad = fchmod(fd, 0600) != 0 || write_all(fd, data, len) != 0 || fsync(fd) != 0;
    int saved = errno;
    if (close(fd) != 0 && !bad) {
        bad = 1;
        saved = errno;
    }
    if (!bad && rename(tmp, path) != 0) {
        bad = 1;
        saved = errno;
    }
    if (!bad)
        return SP_OK;
    unlink(tmp);
    return sp_err_set(err, SP_E_IO, "%s: cannot write: %s", path, strerror(saved));
}

static int check_write_args(const char *path, const char *provider, const char *source,
                            const char *date, size_t n, sp_err *err)
{
    int rc = check_provider(provider, err);
    if (rc)
        return rc;
    if (!path || !*path)
        return sp_err_set(err, SP_E_INVALID, "catalog write: no path");
    if (source && !text_ok(source))
        return sp_err_set(err, SP_E_INVALID, "catalog write: the source holds a control character");
    if (date && *date && !date_ok(date))
        return sp_err_set(err, SP_E_INVALID, "catalog write: date '%.*s' is not YYYY-MM-DD",
                          QUOTE_MAX, date);
    if (n > SP_CATALOG_MAX_ROWS)
        return sp_err_set(err, SP_E_INVALID, "catalog write: %zu offers, more than %u", n,
                          SP_CATALOG_MAX_ROWS);
    return SP_OK;
}

static void append_header(sp_buf *b, const char *provider, const char *source, const char *date,
                          time_t now)
{
    char today[16];
    struct tm tm;
    if (!date || !*date) {
        gmtime_r(&now, &tm);
        strftime(today, sizeof(today), "%Y-%m-%d", &tm);
        date = today;
    }
    sp_buf_printf(b, "%s\n# provider: %s\n# source: %s\n# date: %s\n# fetched_at: %lld\n",
                  SP_CATALOG_FORMAT_LINE, provider, source && *source ? source : "unknown", date,
                  (long long)now);
    sp_buf_puts(b, COLUMN_LINE "\n");
}

int sp_catalog_write(const char *path, const char *provider, const char *source,
                     const char *date, const sp_offer *offers, size_t n, sp_err *err)
{
    int rc = check_write_args(path, provider, source, date, n, err);
    if (rc)
        return rc;
    if (n && !offers)
        return sp_err_set(err, SP_E_INVALID, "catalog write: %zu offers but no array", n);
    sp_buf b;
    sp_buf_init(&b);
    append_header(&b, provider, source, date, time(NULL));
    rc = append_rows(&b, offers, n, err);
    if (!rc && b.oom)
        rc = sp_err_set(err, SP_E_NOMEM, "catalog write: out of memory for %zu offers", n);
    if (!rc)
        rc = write_atomic(path, b.data, b.len, err);
    sp_buf_free(&b);
    return rc;
}
