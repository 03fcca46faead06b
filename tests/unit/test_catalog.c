/* The offer catalog: the bundled files' facts, queries, the live cache and its TTL, writing,
 * and the refusal of malformed files. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "catalog.h"
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define HEAD "# skypool-catalog 1\n# provider: aws\n"
#define COLS                                                                                   \
    "instance_type\taccelerator\tcount\taccel_mem_mib\tvcpus\tmem_mib\tprice\tspot_price\t"    \
    "region\tzone\tarch\n"
#define AWS_ROWS 1897 /* 2,052 reference rows less 155 fractional-GPU rows (g6f, gr6f) */

/* ---- Helpers ------------------------------------------------------------------------------ */

typedef struct got_offer {
    char provider[32], instance_type[48], accelerator[32], region[32], zone[32], arch[16];
    uint32_t count, accel_mem_mib, vcpus, mem_mib;
    double price, spot;
} got_offer;

typedef struct collector {
    sp_offer_sink sink;
    got_offer *rows;
    size_t n, cap;
    size_t stop_at; /* stop once this many arrived (0: never) */
    int stop_rc;
} collector;

static void copy_text(char *dst, size_t size, const char *src)
{
    assert_non_null(src);
    assert_true(strlen(src) < size);
    strcpy(dst, src);
}

static int collect_offer(sp_offer_sink *sink, const sp_offer *o)
{
    collector *c = sink->opaque;
    assert_int_equal(o->struct_size, sizeof(sp_offer));
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 64;
        c->rows = realloc(c->rows, c->cap * sizeof(*c->rows));
        assert_non_null(c->rows);
    }
    got_offer *g = &c->rows[c->n++];
    copy_text(g->provider, sizeof(g->provider), o->provider);
    copy_text(g->instance_type, sizeof(g->instance_type), o->instance_type);
    copy_text(g->accelerator, sizeof(g->accelerator), o->accelerator);
    copy_text(g->region, sizeof(g->region), o->region);
    copy_text(g->zone, sizeof(g->zone), o->zone);
    copy_text(g->arch, sizeof(g->arch), o->arch);
    g->count = o->accel_count;
    g->accel_mem_mib = o->accel_mem_mib;
    g->vcpus = o->vcpus;
    g->mem_mib = o->mem_mib;
    g->price = o->price_on_demand;
    g->spot = o->price_spot;
    return c->stop_at && c->n == c->stop_at ? c->stop_rc : 0;
}

static void collector_init(collector *c)
{
    memset(c, 0, sizeof(*c));
    c->sink.struct_size = sizeof(c->sink);
    c->sink.opaque = c;
    c->sink.offer = collect_offer;
}

static sp_offer_query any_query(void)
{
    sp_offer_query q = {.struct_size = sizeof(q), .count_min = 1, .count_max = 1024};
    return q;
}

static sp_catalog *load_bundled(const char *provider)
{
    sp_catalog *cat = NULL;
    sp_err err = {0};
    int rc = sp_catalog_load(provider, tu_source_path("catalog"), NULL, 0, &cat, &err);
    if (rc)
        fail_msg("%s", err.msg);
    return cat;
}

/* Runs a query and returns what came out; the caller frees c->rows. */
static void run_query(const sp_catalog *cat, const sp_offer_query *q, collector *c)
{
    sp_err err = {0};
    collector_init(c);
    int rc = sp_catalog_query(cat, q, &c->sink, &err);
    if (rc)
        fail_msg("%s", err.msg);
}

static void write_text(const char *path, const char *text, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static char *join_path(const char *dir, const char *name)
{
    static char buf[4096];
    snprintf(buf, sizeof(buf), "%s/%s", dir, name);
    return buf;
}

static void remove_dir(char *dir)
{
    tu_rmtree(dir);
    free(dir);
}

/* The offers of a collector, as an sp_offer array pointing into it. */
static sp_offer *as_offers(const collector *c)
{
    sp_offer *o = calloc(c->n ? c->n : 1, sizeof(*o));
    assert_non_null(o);
    for (size_t i = 0; i < c->n; i++) {
        const got_offer *g = &c->rows[i];
        o[i] = (sp_offer){.struct_size = sizeof(*o), .provider = g->provider,
                          .region = g->region, .zone = g->zone,
                          .instance_type = g->instance_type, .accelerator = g->accelerator,
                          .accel_count = g->count, .accel_mem_mib = g->accel_mem_mib,
                          .vcpus = g->vcpus, .mem_mib = g->mem_mib, .price_on_demand = g->price,
                          .price_spot = g->spot, .arch = g->arch};
    }
    return o;
}

/* The file's text after its line of column names. */
static const char *data_section(const char *text)
{
    const char *s = strstr(text, "\ninstance_type\t");
    assert_non_null(s);
    s = strchr(s + 1, '\n');
    assert_non_null(s);
    return s + 1;
}

/* ---- The bundled files ------------------------------------------------------------------- */

static void test_aws_info(void **state)
{
    sp_catalog *cat = load_bundled("aws");
    sp_catalog_info info;
    sp_catalog_info_get(cat, &info);
    assert_string_equal(info.provider, "aws");
    assert_int_equal(info.n_rows, AWS_ROWS);
    assert_non_null(strstr(info.source, "skypilot-catalog"));
    assert_non_null(strstr(info.source, "00148f2"));
    assert_string_equal(info.date, "2026-11-21");
    assert_false(info.live);
    assert_int_equal(info.age_s, -1);
    assert_non_null(strstr(info.path, "catalog/aws.tsv"));
    assert_string_equal(sp_catalog_cache_note(cat), "");
    sp_catalog_free(cat);
}

static void test_aws_p5_48xlarge_is_8_h100_sxm(void **state)
{
    sp_catalog *cat = load_bundled("aws");
    sp_offer_query q = any_query();
    collector c;
    run_query(cat, &q, &c);
    assert_int_equal(c.n, AWS_ROWS);
    size_t p5 = 0;
    for (size_t i = 0; i < c.n; i++) {
        const got_offer *g = &c.rows[i];
        assert_string_equal(g->provider, "aws");
        if (strcmp(g->instance_type, "p5.48xlarge") != 0)
            continue;
        p5++;
        assert_string_equal(g->accelerator, "H100-SXM");
        assert_int_equal(g->count, 8);
        assert_int_equal(g->accel_mem_mib, 81920);
        assert_int_equal(g->vcpus, 192);
        assert_int_equal(g->mem_mib, 2048 * 1024);
        assert_string_equal(g->arch, "x86_64");
        assert_true(g->region[0] && g->zone[0]);
    }
    assert_true(p5 >= 20);
    free(c.rows);
    sp_catalog_free(cat);
}

static void test_aws_h100_8_only_8_gpu_rows(void **state)
{
    sp_catalog *cat = load_bundled("aws");
    const char *models[] = {"H100-SXM"};
    sp_offer_query q = any_query();
    q.models = models;
    q.n_models = 1;
    collector all, eight;
    run_query(cat, &q, &all);
    q.count_min = q.count_max = 8;
    run_query(cat, &q, &eight);
    assert_true(eight.n > 0);
    assert_true(eight.n < all.n); /* p5.4xlarge: 1 GPU, left out */
    for (size_t i = 0; i < eight.n; i++) {
        assert_int_equal(eight.rows[i].count, 8);
        assert_string_equal(eight.rows[i].accelerator, "H100-SXM");
    }
    free(all.rows);
    free(eight.rows);
    sp_catalog_free(cat);
}

static void test_aws_spot_excludes_rows_without_spot(void **state)
{
    sp_catalog *cat = load_bundled("aws");
    sp_offer_query q = any_query();
    collector all, spot;
    run_query(cat, &q, &all);
    size_t no_spot = 0;
    for (size_t i = 0; i < all.n; i++)
        no_spot += all.rows[i].spot < 0;
    /* The reference has 82 rows without a spot price; 30 of them are fractional g6f/gr6f. */
    assert_int_equal(no_spot, 52);
    q.want_spot = 1;
    run_query(cat, &q, &spot);
    assert_int_equal(spot.n, all.n - no_spot);
    for (size_t i = 0; i < spot.n; i++)
        assert_true(spot.rows[i].spot > 0);
    free(all.rows);
    free(spot.rows);
    sp_catalog_free(cat);
}

static void test_aws_unknown_on_demand_price(void **state)
{
    sp_catalog *cat = load_bundled("aws");
    sp_offer_query q = any_query();
    collector c;
    run_query(cat, &q, &c);
    size_t unknown = 0;
    for (size_t i = 0; i < c.n; i++)
        unknown += c.rows[i].price == SP_PRICE_UNKNOWN;
    assert_int_equal(unknown, 17); /* p5e, trn2, some trn1.32xlarge: capacity blocks */
    free(c.rows);
    sp_catalog_free(cat);
}

static void test_aws_regions_filter(void **state)
{
    sp_catalog *cat = load_bundled("aws");
    const char *regions[] = {"us-east-1", "US-WEST-2"};
    sp_offer_query q = any_query();
    q.regions = regions;
    q.n_regions = 2;
    collector c;
    run_query(cat, &q, &c);
    size_t east = 0, west = 0;
    for (size_t i = 0; i < c.n; i++) {
        east += strcmp(c.rows[i].region, "us-east-1") == 0;
        west += strcmp(c.rows[i].region, "us-west-2") == 0;
    }
    assert_true(east > 0 && west > 0);
    assert_int_equal(east + west, c.n);
    assert_true(c.n < AWS_ROWS);
    free(c.rows);
    sp_catalog_free(cat);
}

static void test_aws_models_nocase_and_memory(void **state)
{
    sp_catalog *cat = load_bundled("aws");
    const char *models[] = {"h100-sxm", "a10g"};
    sp_offer_query q = any_query();
    q.models = models;
    q.n_models = 2;
    collector both, big;
    run_query(cat, &q, &both);
    size_t a10g = 0;
    for (size_t i = 0; i < both.n; i++)
        a10g += strcmp(both.rows[i].accelerator, "A10G") == 0;
    assert_true(a10g > 0 && a10g < both.n);
    q.mem_min_mib = 40 * 1024; /* A10G reports 22888 MiB */
    run_query(cat, &q, &big);
    assert_int_equal(big.n, both.n - a10g);
    for (size_t i = 0; i < big.n; i++)
        assert_string_equal(big.rows[i].accelerator, "H100-SXM");
    free(both.rows);
    free(big.rows);
    sp_catalog_free(cat);
}

static void test_aws_converted_facts(void **state)
{
    sp_catalog *cat = load_bundled("aws");
    sp_offer_query q = any_query();
    collector c;
    run_query(cat, &q, &c);
    size_t trn2 = 0;
    for (size_t i = 0; i < c.n; i++) {
        const got_offer *g = &c.rows[i];
        assert_false(strncmp(g->instance_type, "g6f.", 4) == 0); /* fractions of an L4 */
        assert_false(strncmp(g->instance_type, "gr6f.", 5) == 0);
        if (strcmp(g->accelerator, "Trainium2") == 0) {
            trn2++;
            assert_int_equal(g->accel_mem_mib, 98304);
        }
        if (strncmp(g->instance_type, "g5g.", 4) == 0) {
            assert_string_equal(g->accelerator, "T4G");
            assert_string_equal(g->arch, "arm64");
        }
        if (strncmp(g->instance_type, "p4d.", 4) == 0)
            assert_string_equal(g->accelerator, "A100-40GB");
        if (strncmp(g->instance_type, "dl1.", 4) == 0)
            assert_string_equal(g->accelerator, "Gaudi-HL205");
    }
    assert_int_equal(trn2, 4);
    free(c.rows);
    sp_catalog_free(cat);
}

static void test_sink_stop(void **state)
{
    sp_catalog *cat = load_bundled("aws");
    sp_offer_query q = any_query();
    collector c;
    collector_init(&c);
    c.stop_at = 3;
    c.stop_rc = 42;
    sp_err err = {0};
    assert_int_equal(sp_catalog_query(cat, &q, &c.sink, &err), 42);
    assert_int_equal(c.n, 3);
    free(c.rows);
    sp_catalog_free(cat);
}

static void test_query_checks_arguments(void **state)
{
    sp_catalog *cat = load_bundled("modal");
    sp_offer_query q = any_query();
    collector c;
    collector_init(&c);
    sp_err err = {0};
    assert_int_equal(sp_catalog_query(cat, &q, NULL, &err), SP_E_INVALID);
    q.struct_size = 0;
    assert_int_equal(sp_catalog_query(cat, &q, &c.sink, &err), SP_E_ABI);
    assert_non_null(strstr(err.msg, "struct_size"));
    q.struct_size = sizeof(q);
    q.n_models = 1;
    assert_int_equal(sp_catalog_query(cat, &q, &c.sink, &err), SP_E_INVALID);
    assert_int_equal(c.n, 0);
    sp_catalog_free(cat);
}

static void test_digitalocean(void **state)
{
    sp_catalog *cat = load_bundled("digitalocean");
    const char *models[] = {"H100-SXM"};
    sp_offer_query q = any_query();
    q.models = models;
    q.n_models = 1;
    collector c;
    run_query(cat, &q, &c);
    size_t by_count[9] = {0};
    for (size_t i = 0; i < c.n; i++) {
        assert_true(c.rows[i].count <= 8);
        by_count[c.rows[i].count]++;
        assert_true(c.rows[i].spot == SP_PRICE_UNKNOWN);
        assert_string_equal(c.rows[i].zone, "");
    }
    assert_true(by_count[1] > 0 && by_count[8] > 0);
    assert_int_equal(by_count[1] + by_count[8], c.n);
    free(c.rows);
    models[0] = "H200"; /* the reference lists no regions: "" = check /v2/sizes */
    run_query(cat, &q, &c);
    assert_int_equal(c.n, 2);
    assert_string_equal(c.rows[0].region, "");
    free(c.rows);
    q.n_models = 0;
    q.want_spot = 1;
    run_query(cat, &q, &c);
    assert_int_equal(c.n, 0);
    free(c.rows);
    sp_catalog_free(cat);
}

static void test_modal_counts_and_linear_prices(void **state)
{
    sp_catalog *cat = load_bundled("modal");
    const char *models[] = {"H100-SXM"};
    sp_offer_query q = any_query();
    q.models = models;
    q.n_models = 1;
    collector c;
    run_query(cat, &q, &c);
    assert_int_equal(c.n, 8);
    double per_gpu = 0;
    for (size_t i = 0; i < c.n; i++)
        if (c.rows[i].count == 1)
            per_gpu = c.rows[i].price;
    assert_true(fabs(per_gpu - 3.9492) < 1e-9);
    for (uint32_t n = 1; n <= 8; n++) {
        const got_offer *g = NULL;
        for (size_t i = 0; i < c.n; i++)
            if (c.rows[i].count == n)
                g = &c.rows[i];
        assert_non_null(g);
        char want[16];
        snprintf(want, sizeof(want), "H100:%u", n);
        assert_string_equal(g->instance_type, want);
        assert_true(fabs(g->price - n * per_gpu) < 1e-6);
        assert_string_equal(g->region, "");
        assert_true(g->spot == SP_PRICE_UNKNOWN);
    }
    free(c.rows);
    models[0] = "A10G";
    run_query(cat, &q, &c);
    assert_int_equal(c.n, 4); /* Modal's "A10", at most 4 per container */
    assert_string_equal(c.rows[0].instance_type, "A10:1");
    free(c.rows);
    sp_catalog_free(cat);
}

/* ---- Writing and the live cache ------------------------------------------------------------ */

/* Writes every AWS row into <dir>/aws.tsv; returns the bundled file's text. */
static char *write_aws_cache(const char *dir)
{
    sp_catalog *cat = load_bundled("aws");
    sp_catalog_info info;
    sp_catalog_info_get(cat, &info);
    sp_offer_query q = any_query();
    collector c;
    run_query(cat, &q, &c);
    sp_offer *offers = as_offers(&c);
    sp_err err = {0};
    int rc = sp_catalog_write(join_path(dir, "aws.tsv"), "aws", info.source, info.date, offers,
                              c.n, &err);
    if (rc)
        fail_msg("%s", err.msg);
    char *bundled = tu_read_file(info.path, NULL);
    assert_non_null(bundled);
    free(offers);
    free(c.rows);
    sp_catalog_free(cat);
    return bundled;
}

static void test_write_round_trip(void **state)
{
    char *dir = tu_mkdtemp();
    char *bundled = write_aws_cache(dir);
    struct stat st;
    assert_int_equal(stat(join_path(dir, "aws.tsv"), &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    char *written = tu_read_file(join_path(dir, "aws.tsv"), NULL);
    assert_non_null(written);
    assert_non_null(strstr(written, "\n# fetched_at: "));
    /* The same rows, sorted and formatted as tools/build-catalog.py does. */
    assert_string_equal(data_section(written), data_section(bundled));

    sp_catalog *cat = NULL;
    sp_err err = {0};
    assert_int_equal(sp_catalog_load("aws", tu_source_path("catalog"), dir, 3600, &cat, &err),
                     SP_OK);
    sp_catalog_info info;
    sp_catalog_info_get(cat, &info);
    assert_true(info.live);
    assert_true(info.age_s >= 0 && info.age_s < 60);
    assert_int_equal(info.n_rows, AWS_ROWS);
    assert_string_equal(info.date, "2026-11-21");
    assert_non_null(strstr(info.path, dir));
    sp_catalog_free(cat);
    free(written);
    free(bundled);
    remove_dir(dir);
}

static void write_cache_at(const char *dir, const char *provider, long long fetched_at)
{
    char text[512];
    int n = snprintf(text, sizeof(text),
                     "# skypool-catalog 1\n# provider: %s\n# source: test\n# date: 2026-11-22\n"
                     "# fetched_at: %lld\n"
                     "instance_type\taccelerator\tcount\taccel_mem_mib\tvcpus\tmem_mib\tprice\t"
                     "spot_price\tregion\tzone\tarch\n"
                     "p5.48xlarge\tH100-SXM\t8\t81920\t192\t2097152\t55.04\t20.5\tus-east-1\t"
                     "use1-az4\tx86_64\n",
                     provider, fetched_at);
    write_text(join_path(dir, "aws.tsv"), text, (size_t)n); /* whatever provider it declares */
}

/* Loads aws with cache dir and TTL; returns whether the cache was used. */
static bool cache_used(const char *dir, long long ttl_s, char *note, size_t note_size)
{
    sp_catalog *cat = NULL;
    sp_err err = {0};
    int rc = sp_catalog_load("aws", tu_source_path("catalog"), dir, ttl_s, &cat, &err);
    if (rc)
        fail_msg("%s", err.msg);
    sp_catalog_info info;
    sp_catalog_info_get(cat, &info);
    assert_int_equal(info.n_rows, info.live ? 1 : AWS_ROWS);
    snprintf(note, note_size, "%s", sp_catalog_cache_note(cat));
    if (!info.live)
        assert_non_null(strstr(info.path, "catalog/aws.tsv"));
    sp_catalog_free(cat);
    return info.live;
}

static void test_cache_ttl(void **state)
{
    char *dir = tu_mkdtemp();
    char note[SP_ERR_MSG_MAX];
    long long now = (long long)time(NULL);
    write_cache_at(dir, "aws", now - 7200);
    assert_true(cache_used(dir, 86400, note, sizeof(note)));
    assert_string_equal(note, "");
    assert_false(cache_used(dir, 3600, note, sizeof(note)));
    assert_non_null(strstr(note, "old; the TTL is 3600 s"));
    write_cache_at(dir, "aws", now + 86400); /* stamped a day ahead: not trusted */
    assert_false(cache_used(dir, 86400 * 365, note, sizeof(note)));
    assert_non_null(strstr(note, "future"));
    write_cache_at(dir, "aws", now + 5); /* a little clock skew is fine */
    assert_true(cache_used(dir, 60, note, sizeof(note)));
    remove_dir(dir);
}

static void test_cache_corrupt_falls_back(void **state)
{
    static const char *const bad[] = {
        "garbage\n",
        "# skypool-catalog 1\n# provider: aws\n# fetched_at: 1\n",
        /* no fetched_at: its age is unknown */
        HEAD COLS,
    };
    char *dir = tu_mkdtemp();
    char note[SP_ERR_MSG_MAX];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        write_text(join_path(dir, "aws.tsv"), bad[i], strlen(bad[i]));
        assert_false(cache_used(dir, 86400, note, sizeof(note)));
        assert_non_null(strstr(note, "aws.tsv"));
    }
    assert_non_null(strstr(note, "fetched_at"));
    write_cache_at(dir, "modal", (long long)time(NULL)); /* another provider's file */
    assert_false(cache_used(dir, 86400, note, sizeof(note)));
    assert_non_null(strstr(note, "'modal'"));
    remove_dir(dir);
}

static void test_missing_bundled(void **state)
{
    char *dir = tu_mkdtemp();
    sp_catalog *cat = NULL;
    sp_err err = {0};
    assert_int_equal(sp_catalog_load("aws", dir, NULL, 0, &cat, &err), SP_E_NOTFOUND);
    assert_null(cat);
    assert_non_null(strstr(err.msg, "aws.tsv"));
    assert_non_null(strstr(err.msg, "build-catalog.py"));
    assert_int_equal(sp_catalog_load("../etc", dir, NULL, 0, &cat, &err), SP_E_INVALID);
    assert_int_equal(sp_catalog_load("aws", NULL, NULL, 0, &cat, &err), SP_E_INVALID);
    remove_dir(dir);
}

static void test_write_sorts_and_formats(void **state)
{
    sp_offer offers[] = {
        {.instance_type = "b.big", .accelerator = "L4", .accel_count = 8, .accel_mem_mib = 22888,
         .vcpus = 192, .mem_mib = 786432, .price_on_demand = 12.0, .price_spot = 45.1000000001,
         .region = "us-east-1", .zone = "", .arch = "x86_64"},
        {.instance_type = "a.small", .accelerator = "L4", .accel_count = 1, .price_on_demand = 0.5,
         .price_spot = SP_PRICE_UNKNOWN, .region = NULL, .zone = NULL, .arch = "x86_64"},
        {.instance_type = "c", .accelerator = "A10G", .accel_count = 1, .price_on_demand = NAN,
         .price_spot = 0},
    };
    char *dir = tu_mkdtemp();
    sp_err err = {0};
    const char *path = join_path(dir, "x.tsv");
    assert_int_equal(sp_catalog_write(path, "x", NULL, "2026-01-02", offers, 3, &err), SP_OK);
    char *text = tu_read_file(path, NULL);
    assert_non_null(strstr(text, "# provider: x\n# source: unknown\n# date: 2026-01-02\n"));
    assert_string_equal(data_section(text),
                        "c\tA10G\t1\t0\t0\t0\t-\t0\t-\t-\t-\n"
                        "a.small\tL4\t1\t0\t0\t0\t0.5\t-\t-\t-\tx86_64\n"
                        "b.big\tL4\t8\t22888\t192\t786432\t12\t45.1\tus-east-1\t-\tx86_64\n");
    free(text);
    remove_dir(dir);
}

static void test_write_refuses_bad_offers(void **state)
{
    sp_offer ok = {.instance_type = "a", .accelerator = "L4", .accel_count = 1};
    sp_offer tab = ok, zero = ok, dash = ok, huge = ok;
    tab.region = "us\teast";
    zero.accel_count = 0;
    dash.instance_type = "-";
    huge.price_on_demand = 2e9;
    const sp_offer *bad[] = {&tab, &zero, &dash, &huge};
    char *dir = tu_mkdtemp();
    char path[4096];
    snprintf(path, sizeof(path), "%s", join_path(dir, "aws.tsv"));
    sp_err err = {0};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(sp_catalog_write(path, "aws", "s", NULL, bad[i], 1, &err),
                         SP_E_INVALID);
        assert_non_null(strstr(err.msg, "offer 0"));
        assert_int_equal(access(path, F_OK), -1);
    }
    assert_int_equal(sp_catalog_write(path, "Bad/Name", "s", NULL, &ok, 1, &err), SP_E_INVALID);
    assert_int_equal(sp_catalog_write(path, "aws", "a\nb", NULL, &ok, 1, &err), SP_E_INVALID);
    assert_int_equal(sp_catalog_write(path, "aws", "s", "tomorrow", &ok, 1, &err), SP_E_INVALID);
    assert_int_equal(sp_catalog_write(join_path(dir, "no/such/dir.tsv"), "aws", "s", NULL, &ok, 1,
                                      &err),
                     SP_E_IO);
    assert_int_equal(sp_catalog_write(path, "aws", "s", NULL, &ok, 1, &err), SP_OK);
    char *text = tu_read_file(path, NULL);
    char today[16];
    time_t now = time(NULL);
    struct tm tm;
    strftime(today, sizeof(today), "%Y-%m-%d", gmtime_r(&now, &tm));
    assert_non_null(strstr(text, today));
    free(text);
    remove_dir(dir);
}

/* ---- Malformed files ---------------------------------------------------------------------- */

#define GOOD "p5.48xlarge\tH100-SXM\t8\t81920\t192\t2097152\t98.32\t45.1\tus-east-1\tuse1-az4\tx86_64\n"

typedef struct bad_file {
    const char *text;
    unsigned line;
    const char *says;
} bad_file;

static const bad_file bad_files[] = {
    {"", 1, "not a skypool catalog"},
    {"skypool catalog\n", 1, "the first line must be '# skypool-catalog 1'"},
    {"# skypool-catalog 2\n" COLS, 1, "format version '2'"},
    {HEAD, 2, "ends before the line of column names"},
    {HEAD "instance_type accelerator\n", 3, "expected the column names"},
    {"# skypool-catalog 1\n" COLS, 2, "no '# provider: aws' line"},
    {"# skypool-catalog 1\n# provider: modal\n" COLS, 2, "provider 'modal'"},
    {HEAD "# date: 21/11/2026\n" COLS, 3, "date is '21/11/2026', expected YYYY-MM-DD"},
    {HEAD "# fetched_at: yesterday\n" COLS, 3, "fetched_at is 'yesterday'"},
    {HEAD "# source: a\x1b[31mred\n" COLS, 3, "'source' holds a control character"},
    {HEAD COLS "p5.48xlarge\tH100-SXM\tx\t81920\t192\t2097152\t98.32\t45.1\tus-east-1\tuse1-az4\t"
               "x86_64\n",
     4, "column 'count' is 'x', expected a whole number"},
    {HEAD COLS "a\tL4\t0\t1\t1\t1\t1\t1\tr\tz\tx86_64\n", 4, "column 'count' is 0"},
    {HEAD COLS "a\tL4\t4294967296\t1\t1\t1\t1\t1\tr\tz\tx86_64\n", 4, "column 'count' is"},
    {HEAD COLS "a\tL4\t1\t-5\t1\t1\t1\t1\tr\tz\tx86_64\n", 4, "column 'accel_mem_mib' is '-5'"},
    {HEAD COLS "a\tL4\t1\t1\t1.5\t1\t1\t1\tr\tz\tx86_64\n", 4, "column 'vcpus' is '1.5'"},
    {HEAD COLS "a\tL4\t1\t1\t1\t1 \t1\t1\tr\tz\tx86_64\n", 4, "column 'mem_mib' is '1 '"},
    {HEAD COLS "a\tL4\t1\t1\t1\t1\t1,5\t1\tr\tz\tx86_64\n", 4, "column 'price' is '1,5'"},
    {HEAD COLS "a\tL4\t1\t1\t1\t1\t-1\t1\tr\tz\tx86_64\n", 4, "column 'price' is '-1'"},
    {HEAD COLS "a\tL4\t1\t1\t1\t1\t.5\t1\tr\tz\tx86_64\n", 4, "column 'price' is '.5'"},
    {HEAD COLS "a\tL4\t1\t1\t1\t1\t5.\t1\tr\tz\tx86_64\n", 4, "column 'price' is '5.'"},
    {HEAD COLS "a\tL4\t1\t1\t1\t1\t1e3\t1\tr\tz\tx86_64\n", 4, "column 'price' is '1e3'"},
    {HEAD COLS "a\tL4\t1\t1\t1\t1\t1234567890\t1\tr\tz\tx86_64\n", 4, "column 'price' is"},
    {HEAD COLS "a\tL4\t1\t1\t1\t1\t1\tnan\tr\tz\tx86_64\n", 4, "column 'spot_price' is 'nan'"},
    /* Found by fuzz_catalog: it rounds, at 6 decimals, to a billion, which cannot be written. */
    {HEAD COLS "a\tL4\t1\t1\t1\t1\t999999999.9999999\t0.00001\tr\tz\tx86_64\n", 4,
     "column 'price' is '999999999.9999999'"},
    {HEAD COLS "a\tL4\t1\t1\t1\t1\t1\t1\tr\tz\n", 4, "expected 11 tab-separated columns, found 10"},
    {HEAD COLS "a\tL4\t1\t1\t1\t1\t1\t1\tr\tz\tx86_64\textra\n", 4, "found 12"},
    {HEAD COLS "a\tL4\t1\t1\t1\t1\t1\t1\tr\t\tx86_64\n", 4, "column 'zone' is empty"},
    {HEAD COLS "-\tL4\t1\t1\t1\t1\t1\t1\tr\tz\tx86_64\n", 4, "column 'instance_type' is '-'"},
    {HEAD COLS "a\t-\t1\t1\t1\t1\t1\t1\tr\tz\tx86_64\n", 4, "column 'accelerator' is '-'"},
    {HEAD COLS "a\tL4\t1\t1\t1\t1\t1\t1\tus\x1b]0;x\tz\tx86_64\n", 4,
     "control character 0x1b in column 'region'"},
    {HEAD COLS GOOD "\n# a comment\n" GOOD "a\tL4\t1\n", 8, "found 3"},
};

static void test_malformed_files(void **state)
{
    char *dir = tu_mkdtemp();
    for (size_t i = 0; i < sizeof(bad_files) / sizeof(bad_files[0]); i++) {
        const bad_file *b = &bad_files[i];
        write_text(join_path(dir, "aws.tsv"), b->text, strlen(b->text));
        sp_catalog *cat = NULL;
        sp_err err = {0};
        int rc = sp_catalog_load("aws", dir, NULL, 0, &cat, &err);
        char where[64];
        snprintf(where, sizeof(where), "aws.tsv:%u: ", b->line);
        if (rc != SP_E_INVALID || !strstr(err.msg, where) || !strstr(err.msg, b->says) ||
            !strstr(err.msg, "tools/build-catalog.py"))
            fail_msg("case %zu: rc %d, message \"%s\"; wanted \"%s\" and \"%s\"", i, rc, err.msg,
                     where, b->says);
        assert_null(cat);
    }
    remove_dir(dir);
}

static void test_nul_byte(void **state)
{
    static const char text[] = HEAD COLS "a\tL4\t1\t1\t1\t1\t1\t1\tr\0x\tz\tx86_64\n";
    char *buf = malloc(sizeof(text));
    memcpy(buf, text, sizeof(text));
    sp_catalog *cat = NULL;
    sp_err err = {0};
    assert_int_equal(sp_catalog_parse("aws", "mem", buf, sizeof(text) - 1, &cat, &err),
                     SP_E_INVALID);
    assert_non_null(strstr(err.msg, "mem:4: the line holds a NUL byte"));
    assert_null(cat);
}

static void test_oversized_file(void **state)
{
    char *dir = tu_mkdtemp();
    const char *path = join_path(dir, "aws.tsv");
    write_text(path, HEAD, strlen(HEAD));
    assert_int_equal(truncate(path, (off_t)SP_CATALOG_MAX_BYTES + 1), 0); /* sparse */
    sp_catalog *cat = NULL;
    sp_err err = {0};
    assert_int_equal(sp_catalog_load("aws", dir, NULL, 0, &cat, &err), SP_E_INVALID);
    assert_non_null(strstr(err.msg, "64 MiB"));
    remove_dir(dir);
}

static void test_tolerated_layout(void **state)
{
    /* CR LF line ends, blank lines, comments among the rows, no final newline, '-' fields. */
    static const char text[] =
        "# skypool-catalog 1\r\n# provider: aws\r\n# future_key: ignored\r\n#free comment\r\n\r\n"
        COLS "\r\n# note\r\na\tL4\t1\t22888\t0\t0\t0.5904\t-\t-\t-\t-\r\n"
        "b\tL4\t2\t22888\t4\t8192\t98.32\t0\tr\tz\tarm64";
    char *buf = malloc(sizeof(text));
    memcpy(buf, text, sizeof(text));
    sp_catalog *cat = NULL;
    sp_err err = {0};
    if (sp_catalog_parse("aws", "mem", buf, sizeof(text) - 1, &cat, &err))
        fail_msg("%s", err.msg);
    sp_offer_query q = any_query();
    collector c;
    run_query(cat, &q, &c);
    assert_int_equal(c.n, 2);
    assert_string_equal(c.rows[0].region, "");
    assert_string_equal(c.rows[0].arch, "");
    assert_true(c.rows[0].price == 0.5904); /* correctly rounded, as strtod would */
    assert_true(c.rows[0].spot == SP_PRICE_UNKNOWN);
    assert_true(c.rows[1].price == 98.32);
    assert_true(c.rows[1].spot == 0);
    assert_string_equal(c.rows[1].arch, "arm64");
    sp_catalog_info info;
    sp_catalog_info_get(cat, &info);
    assert_string_equal(info.source, "");
    assert_string_equal(info.date, "");
    free(c.rows);
    sp_catalog_free(cat);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aws_info),
        cmocka_unit_test(test_aws_p5_48xlarge_is_8_h100_sxm),
        cmocka_unit_test(test_aws_h100_8_only_8_gpu_rows),
        cmocka_unit_test(test_aws_spot_excludes_rows_without_spot),
        cmocka_unit_test(test_aws_unknown_on_demand_price),
        cmocka_unit_test(test_aws_regions_filter),
        cmocka_unit_test(test_aws_models_nocase_and_memory),
        cmocka_unit_test(test_aws_converted_facts),
        cmocka_unit_test(test_sink_stop),
        cmocka_unit_test(test_query_checks_arguments),
        cmocka_unit_test(test_digitalocean),
        cmocka_unit_test(test_modal_counts_and_linear_prices),
        cmocka_unit_test(test_write_round_trip),
        cmocka_unit_test(test_cache_ttl),
        cmocka_unit_test(test_cache_corrupt_falls_back),
        cmocka_unit_test(test_missing_bundled),
        cmocka_unit_test(test_write_sorts_and_formats),
        cmocka_unit_test(test_write_refuses_bad_offers),
        cmocka_unit_test(test_malformed_files),
        cmocka_unit_test(test_nul_byte),
        cmocka_unit_test(test_oversized_file),
        cmocka_unit_test(test_tolerated_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
