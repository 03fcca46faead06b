/*
 * The AWS provider against real servers on loopback: moto_server (EC2) behind the
 * fault-injecting proxy, and the Service Quotas fake. Run by tests/integration/aws.sh, which
 * starts them and sets AWS_ENDPOINT_URL_EC2 (the proxy), AWS_ENDPOINT_URL_SERVICE_QUOTAS,
 * PROXY_URL and QUOTAS_URL.
 *
 * The plugin is loaded through the ABI, exactly as skypool loads it; internals that the ABI
 * does not expose (console output, images) are called from the linked provider objects with
 * the loaded plugin's context.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "aws.h"
#include "registry.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A public key (its private half was thrown away): moto checks the format. */
#define ITEST_KEY "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPjkfFsWTqeJvMyCiUEkhZ/0f1zERSCrQqPfHoJZp5qi itest"

static sp_registry reg;
static const sp_plugin *aws;

/* ---- The servers' admin APIs ----------------------------------------------------------------- */

static json_t *admin(const char *method, const char *base_env, const char *path, json_t *body)
{
    char url[512];
    snprintf(url, sizeof(url), "%s%s", getenv(base_env), path);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    sp_http_header h[] = {{"Content-Type", "application/json"}};
    sp_http_request req = {.struct_size = sizeof(req), .method = method, .url = url,
                           .headers = h, .n_headers = 1, .body = text,
                           .body_len = text ? strlen(text) : 0};
    sp_http_response resp;
    sp_err err = {0};
    if (sp_host_http(&reg.host, &req, &resp, &err) != SP_OK || resp.status / 100 != 2)
        fail_msg("%s %s: %s", method, url, err.msg);
    free(text);
    json_t *j = json_loads(resp.body, JSON_DECODE_ANY, NULL);
    sp_host_http_free(&reg.host, &resp);
    return j;
}

static void rules(const char *json)
{
    json_decref(admin("POST", "PROXY_URL", "/__fault__/rules", json_loads(json, 0, NULL)));
    json_decref(admin("DELETE", "PROXY_URL", "/__fault__/log", NULL));
}

/* No faults, and an empty log: each test reads only its own requests. */
static void no_rules(void)
{
    json_decref(admin("DELETE", "PROXY_URL", "/__fault__/rules", NULL));
    json_decref(admin("DELETE", "PROXY_URL", "/__fault__/log", NULL));
}

/* Log entries of an action (all when NULL). The caller frees the array. */
static json_t *logged(const char *action)
{
    json_t *log = admin("GET", "PROXY_URL", "/__fault__/log", NULL);
    json_t *entries = json_is_array(log) ? log : json_object_get(log, "entries");
    json_t *out = json_array(), *e;
    size_t i;
    json_array_foreach(entries, i, e) {
        const char *a = json_string_value(json_object_get(e, "action"));
        if (!action || (a && strcmp(a, action) == 0))
            json_array_append(out, e);
    }
    json_decref(log);
    return out;
}

static const char *param(json_t *entry, const char *name)
{
    if (!entry)
        fail_msg("no such request in the proxy's log");
    return json_string_value(json_object_get(json_object_get(entry, "params"), name));
}

/* assert_string_equal, for a value that may be absent. */
static void expect_param(json_t *entry, const char *name, const char *want)
{
    const char *got = param(entry, name);
    if (!got || strcmp(got, want) != 0)
        fail_msg("%s is '%s', want '%s'", name, got ? got : "(absent)", want);
}

static void set_quota(const char *region, const char *code, double value)
{
    json_decref(admin("POST", "QUOTAS_URL", "/__admin__/quota",
                      json_pack("{s:s, s:s, s:f}", "region", region, "code", code, "value",
                                value)));
}

/* ---- Collecting what the provider emits ------------------------------------------------------- */

typedef struct offers {
    sp_offer_sink sink;
    size_t n, h100_8, spot_priced, od_priced, zone_ids;
    char notes[4][SP_ERR_MSG_MAX];
    size_t n_notes;
} offers;

static int on_offer(sp_offer_sink *sink, const sp_offer *o)
{
    offers *c = sink->opaque;
    c->n++;
    if (strcmp(o->instance_type, "p5.48xlarge") == 0) {
        assert_string_equal(o->accelerator, "H100-SXM");
        assert_int_equal(o->accel_count, 8);
        assert_int_equal(o->vcpus, 192);
        c->h100_8++;
    }
    c->spot_priced += o->price_spot >= 0;
    c->od_priced += o->price_on_demand > 0;
    c->zone_ids += strstr(o->zone, "-az") != NULL; /* IDs (use1-az4), never names */
    return SP_OK;
}

static int on_note(sp_offer_sink *sink, const char *m)
{
    offers *c = sink->opaque;
    if (c->n_notes < 4)
        snprintf(c->notes[c->n_notes++], SP_ERR_MSG_MAX, "%s", m);
    return SP_OK;
}

static int refresh(const char *const *regions, size_t n, offers *c, sp_err *err)
{
    memset(c, 0, sizeof(*c));
    c->sink = (sp_offer_sink){sizeof(c->sink), c, on_offer, on_note};
    return aws->table.refresh_offers(aws->ctx, regions, n, &c->sink, err);
}

typedef struct nodes {
    sp_node_sink sink;
    sp_node items[32];
    size_t n;
} nodes;

static int on_node(sp_node_sink *sink, const sp_node *n)
{
    nodes *c = sink->opaque;
    if (c->n < 32)
        c->items[c->n++] = *n;
    return SP_OK;
}

static size_t find_nodes(const char *pool, nodes *out)
{
    memset(out, 0, sizeof(*out));
    out->sink = (sp_node_sink){sizeof(out->sink), out, on_node};
    sp_tag tags[] = {{"skypool:pool", pool}};
    const char *regions[] = {"us-east-1"};
    sp_node_filter f = {sizeof(f), tags, 1, regions, 1};
    sp_err err = {0};
    if (aws->table.describe_nodes(aws->ctx, &f, &out->sink, &err) != SP_OK)
        fail_msg("describe_nodes: %s", err.msg);
    return out->n;
}

static sp_offer p5_offer(const char *zone_id)
{
    sp_offer o = {.struct_size = sizeof(o), .provider = "aws", .region = "us-east-1",
                  .zone = zone_id, .instance_type = "p5.48xlarge", .accelerator = "H100-SXM",
                  .accel_count = 8, .accel_mem_mib = 81920, .vcpus = 192,
                  .price_on_demand = 55.04, .price_spot = 20, .arch = "x86_64"};
    return o;
}

static int launch(const char *pool, const char *zone, sp_market market, const char *token,
                  sp_node *node, sp_err *err)
{
    sp_offer o = p5_offer(zone);
    sp_tag tags[] = {{"skypool:pool", pool}, {"skypool:node", "0"}};
    sp_launch_request req = {.struct_size = sizeof(req), .offer = &o, .market = market,
                             .name = "itest-0", .client_token = token, .tags = tags,
                             .n_tags = 2,
                             .ssh_public_key = ITEST_KEY,
                             .user_data = "#!/bin/sh\necho hello\n"};
    return aws->table.launch(aws->ctx, &req, node, err);
}

/* ---- Tests ------------------------------------------------------------------------------------ */

static void test_check_credentials(void **state)
{
    (void)state;
    char source[256];
    sp_err err = {0};
    no_rules();
    assert_int_equal(aws->table.check_credentials(aws->ctx, source, sizeof(source), &err), SP_OK);
    assert_non_null(strstr(source, "AWS_ACCESS_KEY_ID"));
    rules("[{\"action\": \"DescribeRegions\", \"effect\": \"error\", \"code\": \"AuthFailure\"}]");
    assert_int_equal(aws->table.check_credentials(aws->ctx, source, sizeof(source), &err),
                     SP_E_AUTH);
    assert_non_null(strstr(err.msg, "were refused"));
    assert_non_null(strstr(err.msg, "environment (AWS_ACCESS_KEY_ID)"));
    assert_null(strstr(err.msg, getenv("AWS_SECRET_ACCESS_KEY")));
    no_rules();
}

static void test_refresh_offers(void **state)
{
    (void)state;
    const char *regions[] = {"us-east-1", "us-west-2", "eu-west-1"};
    offers c;
    sp_err err = {0};
    no_rules();
    json_decref(admin("DELETE", "PROXY_URL", "/__fault__/log", NULL));
    if (refresh(regions, 3, &c, &err) != SP_OK)
        fail_msg("refresh: %s", err.msg);
    assert_true(c.n > 100);
    assert_true(c.h100_8 >= 4);       /* p5.48xlarge in several zones */
    assert_int_equal(c.zone_ids, c.n);
    assert_true(c.spot_priced > 0);
    assert_true(c.od_priced > 0);     /* on-demand prices joined from the catalog */
    json_t *types = logged("DescribeInstanceTypes");
    assert_int_equal(json_array_size(types), 3); /* one page per region at the default size */
    json_decref(types);
}

static int launch(const char *pool, const char *zone, sp_market market, const char *token,
                  sp_node *node, sp_err *err);
static size_t find_nodes(const char *pool, nodes *out);

/* With 5 results a page, seven instances arrive over two pages. */
static void test_describe_paginates(void **state)
{
    (void)state;
    sp_node made[7];
    sp_err err = {0};
    no_rules();
    for (int i = 0; i < 7; i++) {
        char token[32];
        snprintf(token, sizeof(token), "itest-p-%d", i);
        if (launch("itest-p", "use1-az4", SP_MARKET_ON_DEMAND, token, &made[i], &err) != SP_OK)
            fail_msg("launch %d: %s", i, err.msg);
    }
    json_decref(admin("DELETE", "PROXY_URL", "/__fault__/log", NULL));
    ((aws_ctx *)aws->ctx)->page_size = 5;
    nodes found;
    size_t n = find_nodes("itest-p", &found);
    ((aws_ctx *)aws->ctx)->page_size = 0;
    assert_int_equal(n, 7);
    json_t *pages = logged("DescribeInstances");
    assert_int_equal(json_array_size(pages), 2);
    expect_param(json_array_get(pages, 0), "MaxResults", "5");
    assert_null(param(json_array_get(pages, 0), "NextToken"));
    assert_non_null(param(json_array_get(pages, 1), "NextToken"));
    json_decref(pages);
    for (int i = 0; i < 7; i++)
        assert_int_equal(aws->table.terminate(aws->ctx, &made[i], &err), SP_OK);
    assert_int_equal(find_nodes("itest-p", &found), 0);
}

/* Throttling is retried with backoff, and the retries are bounded. */
static void test_throttling(void **state)
{
    (void)state;
    const char *regions[] = {"us-east-1"};
    offers c;
    sp_err err = {0};
    rules("[{\"action\": \"DescribeInstanceTypes\", \"count\": 3, \"effect\": \"error\", "
          "\"code\": \"RequestLimitExceeded\"}]");
    assert_int_equal(refresh(regions, 1, &c, &err), SP_OK);
    json_t *calls = logged("DescribeInstanceTypes");
    assert_int_equal(json_array_size(calls), 4); /* three throttled, then through */
    json_decref(calls);
    rules("[{\"action\": \"DescribeInstanceTypes\", \"effect\": \"error\", "
          "\"code\": \"RequestLimitExceeded\"}]");
    assert_int_equal(refresh(regions, 1, &c, &err), SP_E_THROTTLED);
    assert_non_null(strstr(err.msg, "RequestLimitExceeded"));
    calls = logged("DescribeInstanceTypes");
    assert_int_equal(json_array_size(calls), ((aws_ctx *)aws->ctx)->max_attempts);
    json_decref(calls);
    no_rules();
}

/* A dropped connection and a slow answer are survived; a region that fails is a note. */
static void test_dropped_and_slow(void **state)
{
    (void)state;
    const char *regions[] = {"us-east-1", "us-west-2"};
    offers c;
    sp_err err = {0};
    rules("[{\"action\": \"DescribeAvailabilityZones\", \"count\": 1, \"effect\": \"drop\"},"
          " {\"action\": \"DescribeInstanceTypeOfferings\", \"effect\": \"delay\", "
          "\"delay_ms\": 300}]");
    assert_int_equal(refresh(regions, 2, &c, &err), SP_OK);
    assert_true(c.h100_8 > 0);
    rules("[{\"action\": \"DescribeAvailabilityZones\", \"region\": \"us-west-2\", "
          "\"effect\": \"error\", \"code\": \"UnauthorizedOperation\"}]");
    assert_int_equal(refresh(regions, 2, &c, &err), SP_OK);
    assert_true(c.n > 0);
    assert_int_equal(c.n_notes, 1);
    assert_non_null(strstr(c.notes[0], "us-west-2"));
    assert_non_null(strstr(c.notes[0], "UnauthorizedOperation"));
    no_rules();
}

static void test_launch_describe_terminate(void **state)
{
    (void)state;
    sp_node node;
    sp_err err = {0};
    no_rules();
    if (launch("itest-a", "use1-az4", SP_MARKET_ON_DEMAND, "itest-a-0-1", &node, &err) != SP_OK)
        fail_msg("launch: %s", err.msg);
    assert_true(strncmp(node.id, "i-", 2) == 0);
    assert_string_equal(node.instance_type, "p5.48xlarge");
    json_t *run = logged("RunInstances");
    json_t *e = json_array_get(run, 0);
    expect_param(e, "ClientToken", "itest-a-0-1");
    expect_param(e, "TagSpecification.1.ResourceType", "instance");
    expect_param(e, "TagSpecification.1.Tag.2.Key", "skypool:pool");
    assert_non_null(param(e, "KeyName"));
    assert_non_null(param(e, "SecurityGroupId.1"));
    assert_non_null(param(e, "ImageId"));
    assert_non_null(param(e, "Placement.AvailabilityZone")); /* the zone ID became a name */
    assert_null(param(e, "InstanceMarketOptions.MarketType"));
    json_decref(run);
    nodes found;
    assert_int_equal(find_nodes("itest-a", &found), 1);
    assert_string_equal(found.items[0].id, node.id);
    assert_string_equal(found.items[0].name, "itest-0");
    assert_int_equal(aws->table.terminate(aws->ctx, &node, &err), SP_OK);
    assert_int_equal(find_nodes("itest-a", &found), 0);
    assert_int_equal(aws->table.terminate(aws->ctx, &node, &err), SP_OK); /* idempotent */
}

static void test_spot_launch(void **state)
{
    (void)state;
    sp_node node;
    sp_err err = {0};
    no_rules();
    assert_int_equal(launch("itest-s", "use1-az4", SP_MARKET_SPOT, "itest-s-0-1", &node, &err),
                     SP_OK);
    json_t *run = logged("RunInstances");
    json_t *e = json_array_get(run, 0);
    expect_param(e, "InstanceMarketOptions.MarketType", "spot");
    expect_param(e, "InstanceMarketOptions.SpotOptions.SpotInstanceType", "one-time");
    json_decref(run);
    assert_int_equal(aws->table.terminate(aws->ctx, &node, &err), SP_OK);
}

/* Capacity, quota and auth errors are told apart: each leads `up` somewhere else. */
static void test_error_classes(void **state)
{
    (void)state;
    sp_node node;
    sp_err err = {0};
    rules("[{\"action\": \"RunInstances\", \"effect\": \"error\", "
          "\"code\": \"InsufficientInstanceCapacity\"}]");
    assert_int_equal(launch("itest-e", "use1-az4", SP_MARKET_ON_DEMAND, "t1", &node, &err),
                     SP_E_CAPACITY);
    assert_non_null(strstr(err.msg, "InsufficientInstanceCapacity"));
    json_t *run = logged("RunInstances");
    assert_int_equal(json_array_size(run), 1); /* not retried: failover is the caller's */
    json_decref(run);
    rules("[{\"action\": \"RunInstances\", \"effect\": \"error\", \"code\": \"VcpuLimitExceeded\"}]");
    assert_int_equal(launch("itest-e", "use1-az4", SP_MARKET_ON_DEMAND, "t2", &node, &err),
                     SP_E_QUOTA);
    rules("[{\"action\": \"RunInstances\", \"effect\": \"error\", "
          "\"code\": \"MaxSpotInstanceCountExceeded\"}]");
    assert_int_equal(launch("itest-e", "use1-az4", SP_MARKET_SPOT, "t3", &node, &err), SP_E_QUOTA);
    rules("[{\"action\": \"RunInstances\", \"effect\": \"error\", \"code\": \"UnauthorizedOperation\"}]");
    assert_int_equal(launch("itest-e", "use1-az4", SP_MARKET_ON_DEMAND, "t4", &node, &err),
                     SP_E_AUTH);
    assert_non_null(strstr(err.msg, "(credentials from environment (AWS_ACCESS_KEY_ID))"));
    rules("[{\"action\": \"RunInstances\", \"effect\": \"error\", \"code\": \"Unsupported\"}]");
    assert_int_equal(launch("itest-e", "use1-az4", SP_MARKET_ON_DEMAND, "t5", &node, &err),
                     SP_E_CAPACITY);
    no_rules();
    nodes found;
    assert_int_equal(find_nodes("itest-e", &found), 0); /* nothing was made */
}

/* Just after a launch EC2 may not know the instance yet: *.NotFound is retried there. */
static void test_not_found_after_launch(void **state)
{
    (void)state;
    sp_node node;
    sp_err err = {0};
    no_rules();
    assert_int_equal(launch("itest-n", "use1-az4", SP_MARKET_ON_DEMAND, "itest-n-0", &node, &err),
                     SP_OK);
    rules("[{\"action\": \"GetConsoleOutput\", \"count\": 2, \"effect\": \"error\", "
          "\"code\": \"InvalidInstanceID.NotFound\"}]");
    char *text = NULL;
    if (aws_console_output(aws->ctx, "us-east-1", node.id, &text, &err) != SP_OK)
        fail_msg("console output: %s", err.msg);
    free(text);
    json_t *calls = logged("GetConsoleOutput");
    assert_int_equal(json_array_size(calls), 3);
    json_decref(calls);
    no_rules();
    assert_int_equal(aws->table.terminate(aws->ctx, &node, &err), SP_OK);
}

static void test_availability(void **state)
{
    (void)state;
    sp_err err = {0};
    no_rules();
    sp_offer here = p5_offer("use1-az4"), nowhere = p5_offer("use1-az99");
    assert_int_equal(aws->table.availability(aws->ctx, &here, SP_MARKET_ON_DEMAND, &err), SP_OK);
    assert_int_equal(aws->table.availability(aws->ctx, &nowhere, SP_MARKET_ON_DEMAND, &err),
                     SP_E_CAPACITY);
    assert_non_null(strstr(err.msg, "use1-az99"));
}

static void quota(const sp_offer *o, unsigned n_nodes, sp_market m, sp_quota_report *r)
{
    sp_quota_query q = {sizeof(q), o, n_nodes, m};
    sp_err err = {0};
    if (aws->table.quota(aws->ctx, &q, r, &err) != SP_OK)
        fail_msg("quota: %s", err.msg);
}

static void test_quota(void **state)
{
    (void)state;
    no_rules();
    sp_offer o = p5_offer("use1-az4");
    sp_quota_report r;
    set_quota("us-east-1", "L-417A185B", 0);
    quota(&o, 2, SP_MARKET_ON_DEMAND, &r);
    assert_string_equal(r.quota_code, "L-417A185B");
    assert_int_equal((int)r.needed, 384);
    assert_int_equal(r.verdict, SP_VERDICT_SHORT);
    assert_non_null(strstr(r.fix, "--quota-code L-417A185B --desired-value 384 --region us-east-1"));
    set_quota("us-east-1", "L-417A185B", 400);
    sp_node node;
    sp_err err = {0};
    assert_int_equal(launch("itest-q", "use1-az4", SP_MARKET_ON_DEMAND, "itest-q-0", &node, &err),
                     SP_OK);
    quota(&o, 2, SP_MARKET_ON_DEMAND, &r); /* 192 used + 384 needed > 400 */
    assert_int_equal((int)r.used, 192);
    assert_int_equal(r.verdict, SP_VERDICT_SHORT);
    assert_non_null(strstr(r.fix, "--desired-value 576"));
    quota(&o, 1, SP_MARKET_ON_DEMAND, &r);
    assert_int_equal(r.verdict, SP_VERDICT_OK);
    quota(&o, 1, SP_MARKET_SPOT, &r); /* the P5 spot quota, and no spot use yet */
    assert_string_equal(r.quota_code, "L-C4BD4855");
    assert_int_equal((int)r.used, 0);
    assert_int_equal(aws->table.terminate(aws->ctx, &node, &err), SP_OK);
}

static void test_images_keys_groups(void **state)
{
    (void)state;
    aws_ctx *ctx = aws->ctx;
    char ami[64], group[64], again[64];
    sp_err err = {0};
    no_rules();
    assert_int_equal(aws_find_image(ctx, "us-east-1", "x86_64", false, ami, sizeof(ami), &err),
                     SP_OK);
    assert_true(strncmp(ami, "ami-", 4) == 0);
    const char *key = ITEST_KEY;
    assert_int_equal(aws_ensure_key_pair(ctx, "us-east-1", "itest-key", key, &err), SP_OK);
    assert_int_equal(aws_ensure_key_pair(ctx, "us-east-1", "itest-key", key, &err), SP_OK);
    json_t *imports = logged("ImportKeyPair");
    assert_int_equal(json_array_size(imports), 1); /* the second call found it */
    json_decref(imports);
    assert_int_equal(aws_ensure_ssh_group(ctx, "us-east-1", "itest-ssh", group, sizeof(group),
                                          &err),
                     SP_OK);
    assert_int_equal(aws_ensure_ssh_group(ctx, "us-east-1", "itest-ssh", again, sizeof(again),
                                          &err),
                     SP_OK);
    assert_string_equal(group, again);
    json_t *ingress = logged("AuthorizeSecurityGroupIngress");
    assert_int_equal(json_array_size(ingress), 1);
    expect_param(json_array_get(ingress, 0), "IpPermissions.1.FromPort", "22");
    json_decref(ingress);
}

static int setup(void **state)
{
    (void)state;
    sp_err err = {0};
    if (sp_registry_open(&reg, &err) != SP_OK || !(aws = sp_registry_find(&reg, "aws"))) {
        fprintf(stderr, "cannot load the aws provider: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sp_registry_close(&reg);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_check_credentials),  cmocka_unit_test(test_refresh_offers),
        cmocka_unit_test(test_describe_paginates),  cmocka_unit_test(test_throttling),
        cmocka_unit_test(test_dropped_and_slow),   cmocka_unit_test(test_launch_describe_terminate),
        cmocka_unit_test(test_spot_launch),        cmocka_unit_test(test_error_classes),
        cmocka_unit_test(test_not_found_after_launch), cmocka_unit_test(test_availability),
        cmocka_unit_test(test_quota),              cmocka_unit_test(test_images_keys_groups),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
