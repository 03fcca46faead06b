/* The DigitalOcean provider's live offers (/v2/sizes over pages, /v2/regions), GPU model keys,
 * quota (droplet limit against every droplet, GPU ones included) and availability. */
#include "test_digitalocean_fake.h"

static const sp_offer *find(const dof_offers *c, const char *slug, const char *region)
{
    for (size_t i = 0; i < c->n; i++)
        if (!strcmp(c->items[i].instance_type, slug) && !strcmp(c->items[i].region, region))
            return &c->items[i];
    return NULL;
}

static bool noted(const dof_offers *c, const char *text)
{
    for (size_t i = 0; i < c->n_notes; i++)
        if (strstr(c->notes[i], text))
            return true;
    return false;
}

static void script_catalog(void)
{
    dof_reply(200, dof_fixture("regions.json"));
    dof_reply(200, dof_fixture("sizes-page1.json"));
    dof_reply(200, dof_fixture("sizes-page2.json"));
}

static void test_refresh_all_regions(void **state)
{
    (void)state;
    dof_init();
    dof_defaults();
    do_ctx *ctx = dof_ctx();
    script_catalog();
    dof_offers c;
    dof_offers_init(&c);
    sp_err err = {0};
    assert_int_equal(do_refresh_offers(ctx, NULL, 0, &c.sink, &err), SP_OK);
    dof_expect_request(0, "GET", "/v2/regions?per_page=200&page=1");
    dof_expect_request(1, "GET", "/v2/sizes?per_page=200&page=1");
    dof_expect_request(2, "GET", "/v2/sizes?per_page=200&page=2");
    /* h100x1 in 3 regions, h100x8 in 2, mi300x in 1, rtx4000 in tor1 (ams3 takes none now);
     * not the CPU size, not the unavailable L40S, not the unknown model. */
    assert_int_equal(c.n, 7);
    const sp_offer *o = find(&c, "gpu-h100x8-640gb", "nyc2");
    assert_non_null(o);
    assert_string_equal(o->accelerator, "H100-SXM");
    assert_int_equal(o->accel_count, 8);
    assert_int_equal(o->accel_mem_mib, 81920); /* 640 GiB for the board: 80 GiB a GPU */
    assert_int_equal(o->vcpus, 160);
    assert_int_equal(o->mem_mib, 1966080);
    assert_true(o->price_on_demand == 23.92);
    assert_true(o->price_spot == SP_PRICE_UNKNOWN);
    assert_string_equal(o->zone, "");
    assert_string_equal(o->arch, "x86_64");
    o = find(&c, "gpu-h100x1-80gb", "atl1");
    assert_non_null(o);
    assert_int_equal(o->accel_mem_mib, 81920);
    o = find(&c, "gpu-mi300x1-192gb", "atl1");
    assert_non_null(o);
    assert_string_equal(o->accelerator, "MI300X");
    assert_int_equal(o->accel_mem_mib, 196608);
    o = find(&c, "gpu-4000adax1-20gb", "tor1");
    assert_non_null(o);
    assert_string_equal(o->accelerator, "RTX4000-Ada");
    assert_null(find(&c, "gpu-4000adax1-20gb", "ams3"));
    assert_null(find(&c, "gpu-l40sx1-48gb", "tor1"));
    assert_null(find(&c, "s-1vcpu-1gb", "nyc2"));
    assert_true(noted(&c, "gpu-b999x1-99gb has GPU model 'nvidia_b999', which skypool does "
                          "not know"));
    dof_ctx_free(ctx);
}

static void test_refresh_some_regions(void **state)
{
    (void)state;
    dof_init();
    dof_defaults();
    do_ctx *ctx = dof_ctx();
    script_catalog();
    dof_offers c;
    dof_offers_init(&c);
    sp_err err = {0};
    const char *regions[] = {"tor1", "xyz9", "ams3"};
    assert_int_equal(do_refresh_offers(ctx, regions, 3, &c.sink, &err), SP_OK);
    for (size_t i = 0; i < c.n; i++)
        assert_string_equal(c.items[i].region, "tor1");
    assert_int_equal(c.n, 3); /* h100x1, h100x8, rtx4000 */
    assert_true(noted(&c, "DigitalOcean has no region 'xyz9'"));
    assert_true(noted(&c, "region ams3 takes no new droplets now"));
    /* A failure is the caller's, with what and where. */
    dof_reply(401, "{\"id\": \"unauthorized\", \"message\": \"Unable to authenticate you\"}");
    assert_int_equal(do_refresh_offers(ctx, regions, 1, &c.sink, &err), SP_E_AUTH);
    assert_non_null(strstr(err.msg, "GET /v2/regions"));
    dof_ctx_free(ctx);
}

static void test_model_keys(void **state)
{
    (void)state;
    static const struct {
        const char *model, *key;
    } cases[] = {
        {"nvidia_h100", "H100-SXM"},   {"NVIDIA H200", "H200"},    {"nvidia_l40s", "L40S"},
        {"nvidia_rtx_4000_ada_generation", "RTX4000-Ada"},        {"4000ada", "RTX4000-Ada"},
        {"nvidia_rtx_6000_ada_generation", "RTX6000-Ada"},        {"amd_mi300x", "MI300X"},
        {"mi300", "MI300X"},           {"nvidia_b999", NULL},      {"", NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *key = do_model_key(cases[i].model, NULL);
        if (cases[i].key ? !key || strcmp(key, cases[i].key) : key != NULL)
            fail_msg("%s -> %s, want %s", cases[i].model, key ? key : "NULL",
                     cases[i].key ? cases[i].key : "NULL");
    }
    /* A size without gpu_info.model is read from its slug. */
    json_t *size = json_pack("{s:s, s:i, s:i, s:f, s:[s], s:b}", "slug", "gpu-h200x8-1128gb",
                             "vcpus", 192, "memory", 1966080, "price_hourly", 27.52, "regions",
                             "nyc2", "available", 1);
    do_size s;
    assert_int_equal(do_read_size(size, &s), SP_OK);
    assert_string_equal(s.accel, "H200");
    assert_int_equal(s.count, 8);
    assert_int_equal(s.accel_mem_mib, 141 * 1024);
    json_decref(size);
}

static const char *account = "{\"account\": {\"droplet_limit\": 10, \"floating_ip_limit\": 3, "
                             "\"email\": \"s@example.com\", \"uuid\": \"u\", \"email_verified\": "
                             "true, \"status\": \"active\", \"status_message\": \"\"}}";

static void test_quota(void **state)
{
    (void)state;
    dof_init();
    dof_defaults();
    do_ctx *ctx = dof_ctx();
    sp_offer o = {.struct_size = sizeof(o), .region = "nyc2", .instance_type = "gpu-h100x8-640gb",
                  .accelerator = "H100-SXM", .accel_count = 8};
    sp_quota_query q = {sizeof(q), &o, 2, SP_MARKET_ON_DEMAND};
    sp_quota_report r;
    sp_err err = {0};
    dof_reply(200, account);
    dof_reply(200, "{\"droplets\": [{\"id\": 1}], \"links\": {}, \"meta\": {\"total\": 3}}");
    dof_reply(200, "{\"droplets\": [{\"id\": 2}], \"links\": {}, \"meta\": {\"total\": 4}}");
    assert_int_equal(do_quota(ctx, &q, &r, &err), SP_OK);
    dof_expect_request(0, "GET", "/v2/account");
    dof_expect_request(1, "GET", "/v2/droplets?per_page=1");
    dof_expect_request(2, "GET", "/v2/droplets?type=gpus&per_page=1");
    assert_string_equal(r.unit, "droplets");
    assert_string_equal(r.quota_name, "Droplet limit");
    assert_true(r.limit == 10 && r.used == 7 && r.needed == 2);
    assert_int_equal(r.verdict, SP_VERDICT_OK);
    assert_string_equal(r.fix, "");
    q.nodes = 4;
    dof_reply(200, account);
    dof_reply(200, "{\"droplets\": [], \"links\": {}, \"meta\": {\"total\": 3}}");
    dof_reply(200, "{\"droplets\": [], \"links\": {}, \"meta\": {\"total\": 4}}");
    assert_int_equal(do_quota(ctx, &q, &r, &err), SP_OK);
    assert_int_equal(r.verdict, SP_VERDICT_SHORT);
    assert_non_null(strstr(r.fix, "ask DigitalOcean support for a droplet limit of at least 11 "
                                  "(now 10, 7 in use)"));
    /* An answer without the limit is a protocol error. */
    dof_reply(200, "{\"account\": {}}");
    assert_int_equal(do_quota(ctx, &q, &r, &err), SP_E_PROTOCOL);
    q.market = SP_MARKET_SPOT;
    assert_int_equal(do_quota(ctx, &q, &r, &err), SP_E_UNSUPPORTED);
    dof_ctx_free(ctx);
}

static void test_availability(void **state)
{
    (void)state;
    dof_init();
    dof_defaults();
    do_ctx *ctx = dof_ctx();
    sp_offer o = {.struct_size = sizeof(o), .region = "tor1", .instance_type = "gpu-h100x8-640gb",
                  .accelerator = "H100-SXM", .accel_count = 8};
    sp_err err = {0};
    dof_reply(200, dof_fixture("sizes-page1.json"));
    dof_reply(200, dof_fixture("sizes-page2.json"));
    assert_int_equal(do_availability(ctx, &o, SP_MARKET_ON_DEMAND, &err), SP_OK);
    o.region = "atl1";
    dof_reply(200, dof_fixture("sizes-page1.json"));
    dof_reply(200, dof_fixture("sizes-page2.json"));
    assert_int_equal(do_availability(ctx, &o, SP_MARKET_ON_DEMAND, &err), SP_E_CAPACITY);
    assert_non_null(strstr(err.msg, "gpu-h100x8-640gb is not available in atl1 now; it is in "
                                    "nyc2, tor1"));
    o.instance_type = "gpu-l40sx1-48gb";
    dof_reply(200, dof_fixture("sizes-page1.json"));
    dof_reply(200, dof_fixture("sizes-page2.json"));
    assert_int_equal(do_availability(ctx, &o, SP_MARKET_ON_DEMAND, &err), SP_E_CAPACITY);
    assert_non_null(strstr(err.msg, "takes no new droplets now"));
    o.instance_type = "gpu-gone";
    dof_reply(200, dof_fixture("sizes-page1.json"));
    dof_reply(200, dof_fixture("sizes-page2.json"));
    assert_int_equal(do_availability(ctx, &o, SP_MARKET_ON_DEMAND, &err), SP_E_CAPACITY);
    assert_non_null(strstr(err.msg, "not sold any more"));
    assert_int_equal(do_availability(ctx, &o, SP_MARKET_SPOT, &err), SP_E_CAPACITY);
    dof_ctx_free(ctx);
}

static int no_spot_catalog(const sp_host *h, const char *p, const sp_offer_query *q,
                           sp_offer_sink *s, sp_err *e)
{
    (void)h, (void)p, (void)e;
    sp_offer o = {.struct_size = sizeof(o), .region = "nyc2", .zone = "",
                  .instance_type = "gpu-h100x8-640gb", .accelerator = "H100-SXM",
                  .accel_count = 8, .price_on_demand = 23.92, .price_spot = -1, .arch = "x86_64"};
    return q->want_spot ? SP_OK : s->offer(s, &o);
}

static void test_catalog_offers(void **state)
{
    (void)state;
    dof_init();
    dof.host.catalog_query = no_spot_catalog;
    const sp_provider *table;
    void *ctx;
    assert_int_equal(sp_provider_init(&dof.host, &table, &ctx, NULL), SP_OK);
    static const char *const h100[] = {"H100-SXM"};
    sp_offer_query q = {.struct_size = sizeof(q), .models = h100, .n_models = 1, .count_min = 8,
                        .count_max = 8, .want_spot = 1};
    dof_offers c;
    dof_offers_init(&c);
    sp_err err = {0};
    assert_int_equal(table->offers(ctx, &q, &c.sink, &err), SP_OK);
    assert_int_equal(c.n, 0);
    assert_true(noted(&c, "spot is not offered"));
    q.want_spot = 0;
    assert_int_equal(table->offers(ctx, &q, &c.sink, &err), SP_OK);
    assert_int_equal(c.n, 1);
    assert_int_equal(dof.n_log, 0); /* the catalog needs no API call and no token */
    table->fini(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refresh_all_regions),
        cmocka_unit_test(test_refresh_some_regions),
        cmocka_unit_test(test_model_keys),
        cmocka_unit_test(test_quota),
        cmocka_unit_test(test_availability),
        cmocka_unit_test(test_catalog_offers),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    dof_reset();
    return rc;
}
