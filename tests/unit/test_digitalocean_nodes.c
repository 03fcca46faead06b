/* The DigitalOcean provider's droplets: SSH key fingerprints and import, the shapes of single and
 * batch creates (names, shared tags, image, ssh_keys), a lost create that is looked for before
 * it is repeated, tag encoding, droplet -> sp_node, describe by tag, terminate, ssh_target. */
#include "test_digitalocean_fake.h"

#include "docrypto.h"

#define FP_ED25519 "55:71:9c:f6:fa:b4:5c:ea:78:96:d9:98:b5:e7:84:0c"
#define FP_RSA "21:e8:9f:aa:10:9d:e6:f9:c6:75:59:e3:af:31:50:fe"
#define POOL_ID "p0123456789abcdef"

static const char *key_line(void)
{
    static char line[512];
    snprintf(line, sizeof(line), "%s", dof_fixture("id_ed25519.pub"));
    return line;
}

/* What `ssh-keygen -l -E md5` says of a fixture key, when ssh-keygen is there. */
static void ssh_keygen_agrees(const char *file, const char *fp)
{
    char cmd[4200], *out = NULL;
    char rel[128];
    snprintf(rel, sizeof(rel), "tests/fixtures/digitalocean/%s", file);
    snprintf(cmd, sizeof(cmd), "command -v ssh-keygen >/dev/null || exit 77; ssh-keygen -l -E "
                               "md5 -f '%s'", tu_source_path(rel));
    int rc = tu_run(cmd, &out, 0);
    if (rc == 0) {
        char want[80];
        snprintf(want, sizeof(want), "MD5:%s ", fp);
        if (!strstr(out, want))
            fail_msg("ssh-keygen says %s, we say %s", out, fp);
    }
    free(out);
}

static void test_fingerprints(void **state)
{
    (void)state;
    char fp[64];
    sp_err err = {0};
    assert_int_equal(do_key_fingerprint(key_line(), fp, sizeof(fp), &err), SP_OK);
    assert_string_equal(fp, FP_ED25519);
    ssh_keygen_agrees("id_ed25519.pub", fp);
    assert_int_equal(do_key_fingerprint(dof_fixture("id_rsa.pub"), fp, sizeof(fp), &err), SP_OK);
    assert_string_equal(fp, FP_RSA);
    ssh_keygen_agrees("id_rsa.pub", fp);
    assert_int_equal(do_key_fingerprint("ssh-ed25519", fp, sizeof(fp), &err), SP_E_INVALID);
    assert_int_equal(do_key_fingerprint("ssh-ed25519 AAAA$$$$ x", fp, sizeof(fp), &err),
                     SP_E_INVALID);
    /* Valid base64 of another key type than the line claims. */
    assert_int_equal(do_key_fingerprint("ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIDnnFbrBt7kNdBq20219"
                                        "J3PukjXZkYKmYLjVsVGcBZpu x",
                                        fp, sizeof(fp), &err),
                     SP_E_INVALID);
    unsigned char out[8];
    assert_int_equal(do_base64_decode(out, "aGk=", 4), 2);
    assert_int_equal(do_base64_decode(out, "a=k=", 4), -1);
    assert_int_equal(do_base64_decode(out, "aGk", 3), -1);
}

static void test_tag_encoding(void **state)
{
    (void)state;
    char t[300];
    do_tag_encode(&(sp_tag){"skypool:pool", "train-h100"}, t, sizeof(t));
    assert_string_equal(t, "skypool:pool:train-h100");
    do_tag_encode(&(sp_tag){"team", "ml research/v2.0=x"}, t, sizeof(t));
    assert_string_equal(t, "team:ml_research_v2_0_x");
    do_tag_encode(&(sp_tag){"k", ""}, t, sizeof(t));
    assert_string_equal(t, "k:");
    char longv[400];
    memset(longv, 'v', sizeof(longv) - 1);
    longv[sizeof(longv) - 1] = '\0';
    do_tag_encode(&(sp_tag){"k", longv}, t, sizeof(t));
    assert_int_equal(strlen(t), 255); /* the API's maxLength */
}

static void test_droplet_to_node(void **state)
{
    (void)state;
    json_t *j = json_loads(dof_fixture("droplet-active.json"), 0, NULL);
    sp_node n;
    do_read_droplet(json_object_get(j, "droplet"), &n);
    assert_string_equal(n.id, "448543583");
    assert_string_equal(n.name, "train-3");
    assert_string_equal(n.region, "tor1");
    assert_string_equal(n.zone, "");
    assert_string_equal(n.instance_type, "gpu-h100x1-80gb");
    assert_string_equal(n.public_ip, "192.0.2.54");
    assert_string_equal(n.private_ip, "10.128.192.124");
    assert_int_equal(n.state, SP_NODE_RUNNING);
    assert_int_equal(n.market, SP_MARKET_ON_DEMAND);
    static const struct {
        const char *status;
        sp_node_state state;
    } states[] = {{"new", SP_NODE_PENDING},
                  {"off", SP_NODE_STOPPING},
                  {"archive", SP_NODE_GONE},
                  {"weird", SP_NODE_UNKNOWN}};
    for (size_t i = 0; i < 4; i++) {
        json_object_set_new(json_object_get(j, "droplet"), "status",
                            json_string(states[i].status));
        do_read_droplet(json_object_get(j, "droplet"), &n);
        assert_int_equal(n.state, states[i].state);
    }
    json_decref(j);
    /* Nothing in it: an empty node, no crash. */
    json_t *empty = json_object();
    do_read_droplet(empty, &n);
    assert_string_equal(n.id, "");
    json_decref(empty);
}

static sp_offer h100x8 = {.struct_size = sizeof(sp_offer), .provider = "digitalocean",
                          .region = "nyc2", .zone = "", .instance_type = "gpu-h100x8-640gb",
                          .accelerator = "H100-SXM", .accel_count = 8, .accel_mem_mib = 81920,
                          .price_on_demand = 23.92, .price_spot = -1, .arch = "x86_64"};

typedef struct req_set {
    sp_launch_request reqs[12];
    const sp_launch_request *ptrs[12];
    sp_tag tags[12][4];
    char names[12][32], idx[12][8];
} req_set;

static void make_requests(req_set *s, size_t n, const sp_offer *offer, const char *key)
{
    memset(s, 0, sizeof(*s));
    for (size_t i = 0; i < n; i++) {
        snprintf(s->names[i], 32, "train-%zu", i);
        snprintf(s->idx[i], 8, "%zu", i);
        s->tags[i][0] = (sp_tag){"skypool:pool", "train"};
        s->tags[i][1] = (sp_tag){"skypool:pool-id", POOL_ID};
        s->tags[i][2] = (sp_tag){"skypool:node", s->idx[i]};
        s->tags[i][3] = (sp_tag){"team", "ml research"};
        s->reqs[i] = (sp_launch_request){.struct_size = sizeof(sp_launch_request),
                                         .offer = offer, .market = SP_MARKET_ON_DEMAND,
                                         .name = s->names[i], .client_token = "unused",
                                         .tags = s->tags[i], .n_tags = 4, .ssh_user = "root",
                                         .ssh_public_key = key,
                                         .user_data = "#!/bin/sh\necho hi\n"};
        s->ptrs[i] = &s->reqs[i];
    }
}

static void reply_droplet(const char *name, long long id, bool batch_of_one)
{
    char body[512];
    snprintf(body, sizeof(body),
             "{%s{\"id\": %lld, \"name\": \"%s\", \"status\": \"new\", \"region\": {\"slug\": "
             "\"nyc2\"}, \"size_slug\": \"gpu-h100x8-640gb\", \"networks\": {\"v4\": []}}%s, "
             "\"links\": {\"actions\": [{\"id\": 1, \"rel\": \"create\"}]}}",
             batch_of_one ? "\"droplets\": [" : "\"droplet\": ", id, name,
             batch_of_one ? "]" : "");
    dof_reply(202, body);
}

static void expect_strings(const json_t *array, const char *const *want, size_t n)
{
    assert_true(json_is_array(array));
    assert_int_equal(json_array_size(array), n);
    for (size_t i = 0; i < n; i++)
        assert_string_equal(json_string_value(json_array_get(array, i)), want[i]);
}

static void test_launch_one(void **state)
{
    (void)state;
    dof_init();
    dof_defaults();
    do_ctx *ctx = dof_ctx();
    req_set s;
    make_requests(&s, 1, &h100x8, key_line());
    /* The key is not in the account yet: listed, then imported. */
    dof_reply(200, "{\"ssh_keys\": [{\"id\": 1, \"fingerprint\": \"00:11\", \"public_key\": "
                   "\"ssh-rsa AAAA\", \"name\": \"other\"}], \"links\": {}, \"meta\": "
                   "{\"total\": 1}}");
    dof_reply(201, "{\"ssh_key\": {\"id\": 512190, \"fingerprint\": \"" FP_ED25519 "\", "
                   "\"public_key\": \"x\", \"name\": \"skypool-55719cf6\"}}");
    reply_droplet("train-0", 3164444, false);
    sp_node node;
    sp_err err = {0};
    assert_int_equal(do_launch(ctx, &s.reqs[0], &node, &err), SP_OK);
    assert_string_equal(node.id, "3164444");
    assert_string_equal(node.name, "train-0");
    assert_int_equal(node.state, SP_NODE_PENDING);
    dof_expect_request(0, "GET", "/v2/account/keys?per_page=200&page=1");
    dof_expect_request(1, "POST", "/v2/account/keys");
    json_t *key = dof_body(1);
    assert_string_equal(do_str(key, "name"), "skypool-55719cf6");
    char want[512];
    snprintf(want, sizeof(want), "%.*s", (int)strcspn(key_line(), "\r\n"), key_line());
    assert_string_equal(do_str(key, "public_key"), want); /* the line, without its newline */
    json_decref(key);
    dof_expect_request(2, "POST", "/v2/droplets");
    json_t *b = dof_body(2);
    assert_string_equal(do_str(b, "name"), "train-0");
    assert_null(json_object_get(b, "names"));
    assert_string_equal(do_str(b, "region"), "nyc2");
    assert_string_equal(do_str(b, "size"), "gpu-h100x8-640gb");
    assert_string_equal(do_str(b, "image"), "gpu-h100x8-base");
    assert_int_equal(json_integer_value(json_array_get(json_object_get(b, "ssh_keys"), 0)),
                     512190);
    const char *tags[] = {"skypool:pool:train", ("skypool:pool-id:" POOL_ID), "skypool:node:0",
                          "team:ml_research"};
    expect_strings(json_object_get(b, "tags"), tags, 4);
    assert_string_equal(do_str(b, "user_data"), "#!/bin/sh\necho hi\n");
    json_decref(b);
    /* The key is remembered: the next launch goes straight to the create. */
    reply_droplet("train-0", 3164445, false);
    assert_int_equal(do_launch(ctx, &s.reqs[0], &node, &err), SP_OK);
    assert_int_equal(dof.n_log, 4);
    dof_expect_request(3, "POST", "/v2/droplets");
    /* The remembered key was deleted from the account meanwhile: found or imported again. */
    dof_reply(422, "{\"id\": \"unprocessable_entity\", \"message\": \"512190 are invalid key "
                   "identifiers for Droplet creation.\"}");
    dof_reply(200, "{\"ssh_keys\": [], \"links\": {}, \"meta\": {\"total\": 0}}");
    dof_reply(201, "{\"ssh_key\": {\"id\": 777, \"fingerprint\": \"" FP_ED25519 "\"}}");
    reply_droplet("train-0", 3164446, false);
    assert_int_equal(do_launch(ctx, &s.reqs[0], &node, &err), SP_OK);
    assert_int_equal(dof.n_log, 8);
    b = dof_body(7);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(b, "ssh_keys"), 0)), 777);
    json_decref(b);
    dof_ctx_free(ctx);
}

static void test_launch_key_found_and_images(void **state)
{
    (void)state;
    dof_init();
    dof_defaults();
    do_ctx *ctx = dof_ctx();
    sp_offer mi300 = h100x8, l40s = h100x8;
    mi300.accelerator = "MI300X";
    mi300.accel_count = 1;
    mi300.instance_type = "gpu-mi300x1-192gb";
    l40s.accelerator = "L40S";
    l40s.accel_count = 1;
    l40s.instance_type = "gpu-l40sx1-48gb";
    assert_string_equal(do_default_image(&mi300), "gpu-amd-base");
    assert_string_equal(do_default_image(&l40s), "gpu-h100x1-base");
    assert_string_equal(do_default_image(&h100x8), "gpu-h100x8-base");
    req_set s;
    make_requests(&s, 1, &l40s, key_line());
    s.reqs[0].image = "12345678"; /* an image ID */
    s.reqs[0].user_data = NULL;
    dof_reply(200, "{\"ssh_keys\": [{\"id\": 7, \"fingerprint\": \"" FP_ED25519 "\", "
                   "\"public_key\": \"x\", \"name\": \"mine\"}], \"links\": {}, \"meta\": "
                   "{\"total\": 1}}");
    reply_droplet("train-0", 9, false);
    sp_node node;
    sp_err err = {0};
    assert_int_equal(do_launch(ctx, &s.reqs[0], &node, &err), SP_OK);
    assert_int_equal(dof.n_log, 2); /* found by fingerprint: not imported again */
    json_t *b = dof_body(1);
    assert_int_equal(json_integer_value(json_object_get(b, "image")), 12345678);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(b, "ssh_keys"), 0)), 7);
    assert_null(json_object_get(b, "user_data"));
    json_decref(b);
    /* No SSH key asked for: no ssh_keys, no key calls; a slug image stays a string. */
    s.reqs[0].ssh_public_key = NULL;
    s.reqs[0].image = "ubuntu-24-04-x64";
    reply_droplet("train-0", 10, false);
    assert_int_equal(do_launch(ctx, &s.reqs[0], &node, &err), SP_OK);
    b = dof_body(2);
    assert_null(json_object_get(b, "ssh_keys"));
    assert_string_equal(do_str(b, "image"), "ubuntu-24-04-x64");
    json_decref(b);
    /* Spot is refused before any call. */
    s.reqs[0].market = SP_MARKET_SPOT;
    assert_int_equal(do_launch(ctx, &s.reqs[0], &node, &err), SP_E_UNSUPPORTED);
    assert_int_equal(dof.n_log, 3);
    dof_ctx_free(ctx);
}

static void test_launch_batch(void **state)
{
    (void)state;
    dof_init();
    dof_defaults();
    do_ctx *ctx = dof_ctx();
    req_set s;
    make_requests(&s, 3, &h100x8, NULL);
    /* The answer's order is not the request's: droplets are matched by name. */
    dof_reply(202, "{\"droplets\": [{\"id\": 12, \"name\": \"train-2\", \"status\": \"new\"}, "
                   "{\"id\": 10, \"name\": \"train-0\", \"status\": \"new\"}, "
                   "{\"id\": 11, \"name\": \"train-1\", \"status\": \"new\"}], \"links\": {}}");
    sp_node nodes[12];
    sp_err errs[12];
    assert_int_equal(do_launch_batch(ctx, s.ptrs, 3, nodes, errs), SP_OK);
    assert_int_equal(dof.n_log, 1);
    for (size_t i = 0; i < 3; i++) {
        char id[8];
        snprintf(id, sizeof(id), "%zu", 10 + i);
        assert_int_equal(errs[i].code, SP_OK);
        assert_string_equal(nodes[i].id, id);
        assert_string_equal(nodes[i].name, s.names[i]);
        assert_string_equal(nodes[i].region, "nyc2"); /* from the request when not answered */
    }
    json_t *b = dof_body(0);
    const char *names[] = {"train-0", "train-1", "train-2"};
    expect_strings(json_object_get(b, "names"), names, 3);
    assert_null(json_object_get(b, "name"));
    /* One tag set for the call: the node index differs, so it is dropped. */
    const char *tags[] = {"skypool:pool:train", ("skypool:pool-id:" POOL_ID), "team:ml_research"};
    expect_strings(json_object_get(b, "tags"), tags, 3);
    json_decref(b);
    /* Twelve: ten in one call (the API's limit), then two. */
    dof_reset();
    make_requests(&s, 12, &h100x8, NULL);
    char body[2048];
    size_t len = (size_t)snprintf(body, sizeof(body), "{\"droplets\": [");
    for (int i = 0; i < 10; i++)
        len += (size_t)snprintf(body + len, sizeof(body) - len,
                                "%s{\"id\": %d, \"name\": \"train-%d\", \"status\": \"new\"}",
                                i ? ", " : "", 100 + i, i);
    snprintf(body + len, sizeof(body) - len, "], \"links\": {}}");
    dof_reply(202, body);
    dof_reply(202, "{\"droplets\": [{\"id\": 110, \"name\": \"train-10\", \"status\": \"new\"}, "
                   "{\"id\": 111, \"name\": \"train-11\", \"status\": \"new\"}], \"links\": {}}");
    assert_int_equal(do_launch_batch(ctx, s.ptrs, 12, nodes, errs), SP_OK);
    assert_int_equal(dof.n_log, 2);
    b = dof_body(0);
    assert_int_equal(json_array_size(json_object_get(b, "names")), 10);
    json_decref(b);
    b = dof_body(1);
    assert_int_equal(json_array_size(json_object_get(b, "names")), 2);
    json_decref(b);
    assert_string_equal(nodes[11].id, "111");
    dof_ctx_free(ctx);
}

static void test_launch_batch_errors(void **state)
{
    (void)state;
    dof_init();
    dof_defaults();
    do_ctx *ctx = dof_ctx();
    req_set s;
    make_requests(&s, 3, &h100x8, NULL);
    sp_node nodes[3];
    sp_err errs[3];
    dof_reply(422, "{\"id\": \"unprocessable_entity\", \"message\": \"Size is not available in "
                   "this region.\"}");
    assert_int_equal(do_launch_batch(ctx, s.ptrs, 3, nodes, errs), SP_E_CAPACITY);
    assert_int_equal(dof.n_log, 1); /* failover is the caller's */
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(errs[i].code, SP_E_CAPACITY);
        assert_non_null(strstr(errs[i].msg, "POST /v2/droplets in nyc2 (gpu-h100x8-640gb)"));
    }
    /* A droplet the answer lacks is that node's error, not the others'. */
    dof_reply(202, "{\"droplets\": [{\"id\": 10, \"name\": \"train-0\"}, {\"id\": 12, \"name\": "
                   "\"train-2\"}], \"links\": {}}");
    assert_int_equal(do_launch_batch(ctx, s.ptrs, 3, nodes, errs), SP_E_PROTOCOL);
    assert_int_equal(errs[0].code, SP_OK);
    assert_int_equal(errs[1].code, SP_E_PROTOCOL);
    assert_non_null(strstr(errs[1].msg, "no droplet named train-1"));
    assert_int_equal(errs[2].code, SP_OK);
    /* Requests of different sizes cannot share a call. */
    sp_offer other = h100x8;
    other.instance_type = "gpu-h100x1-80gb";
    s.reqs[1].offer = &other;
    assert_int_equal(do_launch_batch(ctx, s.ptrs, 3, nodes, errs), SP_E_INVALID);
    dof_ctx_free(ctx);
}

/* A create whose answer was lost is looked for by tag before it is asked for again. */
static void test_lost_create(void **state)
{
    (void)state;
    dof_init();
    dof_defaults();
    do_ctx *ctx = dof_ctx();
    req_set s;
    make_requests(&s, 2, &h100x8, NULL);
    sp_node nodes[2];
    sp_err errs[2];
    dof_reply(502, "");
    /* The tag listing shows nothing (GPU droplets are not in it); the GPU listing has one of
     * them, and another pool's droplet of the same name. */
    dof_reply(200, "{\"droplets\": [], \"links\": {}, \"meta\": {\"total\": 0}}");
    dof_reply(200, "{\"droplets\": [{\"id\": 20, \"name\": \"train-0\", \"status\": \"new\", "
                   "\"tags\": [\"skypool:pool-id:" POOL_ID "\"]}, {\"id\": 99, \"name\": "
                   "\"train-1\", \"status\": \"active\", \"tags\": [\"skypool:pool-id:other\"]}], "
                   "\"links\": {}, \"meta\": {\"total\": 2}}");
    reply_droplet("train-1", 21, true);
    assert_int_equal(do_launch_batch(ctx, s.ptrs, 2, nodes, errs), SP_OK);
    assert_int_equal(dof.n_log, 4);
    assert_string_equal(dof_path(1), "/v2/droplets?tag_name=skypool%3Apool-id%3A" POOL_ID
                                     "&per_page=200&page=1");
    assert_string_equal(dof_path(2), "/v2/droplets?type=gpus&per_page=200&page=1");
    json_t *b = dof_body(3);
    assert_string_equal(do_str(b, "name"), "train-1"); /* only the one not found */
    json_decref(b);
    assert_string_equal(nodes[0].id, "20");
    assert_string_equal(nodes[1].id, "21");
    /* Found both: no second create at all. */
    dof_reset();
    dof_transport_failure("timed out");
    dof_reply(200, "{\"droplets\": [{\"id\": 30, \"name\": \"train-0\", \"status\": \"new\", "
                   "\"tags\": [\"skypool:pool-id:" POOL_ID "\"]}, {\"id\": 31, \"name\": "
                   "\"train-1\", \"status\": \"new\", \"tags\": [\"SKYPOOL:POOL-ID:" POOL_ID
                   "\"]}], \"links\": {}, \"meta\": {\"total\": 2}}");
    dof_reply(200, "{\"droplets\": [], \"links\": {}, \"meta\": {\"total\": 0}}");
    assert_int_equal(do_launch_batch(ctx, s.ptrs, 2, nodes, errs), SP_OK);
    assert_int_equal(dof.n_log, 3);
    assert_string_equal(nodes[1].id, "31");
    dof_ctx_free(ctx);
}

static void test_describe_nodes(void **state)
{
    (void)state;
    dof_init();
    dof_defaults();
    do_ctx *ctx = dof_ctx();
    const char *tagged = "{\"droplets\": [{\"id\": 1, \"name\": \"train-0\", \"status\": "
                         "\"active\", \"region\": {\"slug\": \"nyc2\"}, \"tags\": "
                         "[\"skypool:pool-id:" POOL_ID "\", \"skypool:pool:train\"]}], "
                         "\"links\": {}, \"meta\": {\"total\": 1}}";
    const char *gpus = "{\"droplets\": [{\"id\": 1, \"name\": \"train-0\", \"status\": "
                       "\"active\", \"region\": {\"slug\": \"nyc2\"}, \"tags\": "
                       "[\"skypool:pool-id:" POOL_ID "\", \"skypool:pool:train\"]}, "
                       "{\"id\": 2, \"name\": \"train-1\", \"status\": \"new\", \"region\": "
                       "{\"slug\": \"nyc2\"}, \"tags\": [\"skypool:pool-id:" POOL_ID "\", "
                       "\"skypool:pool:train\"]}, {\"id\": 3, \"name\": \"train-2\", \"status\": "
                       "\"new\", \"region\": {\"slug\": \"tor1\"}, \"tags\": "
                       "[\"skypool:pool-id:" POOL_ID "\", \"skypool:pool:train\"]}, {\"id\": 4, "
                       "\"name\": \"other-0\", \"status\": \"active\", \"region\": {\"slug\": "
                       "\"nyc2\"}, \"tags\": [\"skypool:pool-id:q1\"]}], \"links\": {}, "
                       "\"meta\": {\"total\": 4}}";
    dof_reply(200, tagged);
    dof_reply(200, gpus);
    sp_tag tags[] = {{"skypool:pool", "train"}, {"skypool:pool-id", POOL_ID}};
    const char *regions[] = {"nyc2"};
    sp_node_filter f = {sizeof(f), tags, 2, regions, 1};
    dof_nodes c;
    dof_nodes_init(&c);
    sp_err err = {0};
    assert_int_equal(do_describe_nodes(ctx, &f, &c.sink, &err), SP_OK);
    /* The pool ID goes to the server; the rest is checked here. Seen twice, emitted once. */
    assert_string_equal(dof_path(0), "/v2/droplets?tag_name=skypool%3Apool-id%3A" POOL_ID
                                     "&per_page=200&page=1");
    assert_string_equal(dof_path(1), "/v2/droplets?type=gpus&per_page=200&page=1");
    assert_int_equal(c.n, 2);
    assert_string_equal(c.items[0].id, "1");
    assert_string_equal(c.items[1].name, "train-1");
    assert_int_equal(c.items[1].state, SP_NODE_PENDING);
    /* No region filter: all regions. */
    dof_reply(200, tagged);
    dof_reply(200, gpus);
    f.n_regions = 0;
    dof_nodes_init(&c);
    assert_int_equal(do_describe_nodes(ctx, &f, &c.sink, &err), SP_OK);
    assert_int_equal(c.n, 3);
    /* An error in a listing is the caller's. */
    dof_reply(403, "{\"id\": \"forbidden\", \"message\": \"needs tag:read\"}");
    assert_int_equal(do_describe_nodes(ctx, &f, &c.sink, &err), SP_E_PERM);
    dof_ctx_free(ctx);
}

static void test_terminate_and_ssh(void **state)
{
    (void)state;
    dof_init();
    dof_defaults();
    do_ctx *ctx = dof_ctx();
    sp_node n = {.struct_size = sizeof(n), .id = "3164444", .region = "nyc2"};
    sp_err err = {0};
    dof_reply(204, "");
    assert_int_equal(do_terminate(ctx, &n, &err), SP_OK);
    dof_expect_request(0, "DELETE", "/v2/droplets/3164444");
    dof_reply(404, "{\"id\": \"not_found\", \"message\": \"The resource you were accessing could "
                   "not be found.\"}");
    assert_int_equal(do_terminate(ctx, &n, &err), SP_OK); /* already gone */
    dof_reply(500, "{\"id\": \"server_error\", \"message\": \"x\"}");
    dof_reply(500, "{\"id\": \"server_error\", \"message\": \"x\"}");
    dof_reply(500, "{\"id\": \"server_error\", \"message\": \"x\"}");
    assert_int_equal(do_terminate(ctx, &n, &err), SP_E_NETWORK);
    assert_non_null(strstr(err.msg, "DELETE /v2/droplets/3164444 in nyc2"));
    snprintf(n.id, sizeof(n.id), "../account");
    assert_int_equal(do_terminate(ctx, &n, &err), SP_E_INVALID);
    dof_reply(204, "");
    assert_int_equal(do_delete_tagged(ctx, "skypool:pool-id:" POOL_ID, &err), SP_OK);
    assert_string_equal(dof_path(5), "/v2/droplets?tag_name=skypool%3Apool-id%3A" POOL_ID);
    sp_ssh_target t;
    snprintf(n.public_ip, sizeof(n.public_ip), "192.0.2.54");
    snprintf(n.private_ip, sizeof(n.private_ip), "10.1.2.3");
    assert_int_equal(do_ssh_target(ctx, &n, &t, &err), SP_OK);
    assert_string_equal(t.host, "192.0.2.54");
    assert_int_equal(t.port, 22);
    assert_string_equal(t.user, "root");
    /* Seen before it had an address: the droplet is asked for (GET /v2/droplets/<id>). */
    n.public_ip[0] = n.private_ip[0] = '\0';
    snprintf(n.id, sizeof(n.id), "448543583");
    dof_reply(200, dof_fixture("droplet-active.json"));
    assert_int_equal(do_ssh_target(ctx, &n, &t, &err), SP_OK);
    dof_expect_request(6, "GET", "/v2/droplets/448543583");
    assert_string_equal(t.host, "192.0.2.54");
    dof_reply(200, "{\"droplet\": {\"id\": 448543583, \"status\": \"new\", \"networks\": "
                   "{\"v4\": []}}}");
    assert_int_equal(do_ssh_target(ctx, &n, &t, &err), SP_E_NOTFOUND);
    assert_non_null(strstr(err.msg, "448543583 has no IP address yet"));
    dof_reply(404, "{\"id\": \"not_found\", \"message\": \"gone\"}");
    assert_int_equal(do_ssh_target(ctx, &n, &t, &err), SP_E_NOTFOUND);
    dof_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fingerprints),
        cmocka_unit_test(test_tag_encoding),
        cmocka_unit_test(test_droplet_to_node),
        cmocka_unit_test(test_launch_one),
        cmocka_unit_test(test_launch_key_found_and_images),
        cmocka_unit_test(test_launch_batch),
        cmocka_unit_test(test_launch_batch_errors),
        cmocka_unit_test(test_lost_create),
        cmocka_unit_test(test_describe_nodes),
        cmocka_unit_test(test_terminate_and_ssh),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    dof_reset();
    return rc;
}
