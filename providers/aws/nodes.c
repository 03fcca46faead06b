/*
 * Nodes on EC2: the image, key pair and SSH security group a launch needs, RunInstances with
 * a client token (a retried launch never makes a second instance), DescribeInstances by tags,
 * TerminateInstances and GetConsoleOutput.
 */
#include "aws.h"
#include "crypto.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SSH_GROUP_DESCRIPTION "skypool: SSH to GPU nodes"

/* ---- Images -------------------------------------------------------------------------------- */

/* Newest first by creationDate (ISO 8601 strings compare in time order). */
static void newest_image(aws_xml_doc *doc, char *ami, size_t size, char *best_date, size_t dsize)
{
    aws_xml_node *set = aws_xml_child(aws_xml_root(doc), "imagesSet");
    for (aws_xml_node *it = aws_xml_item(set, NULL); it; it = aws_xml_item(NULL, it)) {
        char date[40], id[40];
        aws_xml_text(it, "creationDate", date, sizeof(date));
        aws_xml_text(it, "imageId", id, sizeof(id));
        if (id[0] && strcmp(date, best_date) >= 0) {
            snprintf(ami, size, "%s", id);
            snprintf(best_date, dsize, "%s", date);
        }
    }
}

static int search_images(aws_ctx *ctx, const char *region, const char *pattern, const char *arch,
                         char *ami, size_t size, sp_err *err)
{
    aws_params p;
    aws_params_init(&p);
    aws_params_add(&p, "Owner.1", "amazon");
    const char *names[] = {pattern}, *archs[] = {arch}, *states[] = {"available"};
    aws_params_filter(&p, 1, "name", names, 1);
    aws_params_filter(&p, 2, "architecture", archs, 1);
    aws_params_filter(&p, 3, "state", states, 1);
    aws_xml_doc *doc;
    int rc = aws_ec2_call(ctx, region, "DescribeImages", &p, false, &doc, NULL, err);
    aws_params_free(&p);
    if (rc)
        return rc;
    char date[40] = "";
    ami[0] = '\0';
    newest_image(doc, ami, size, date, sizeof(date));
    aws_xml_free(doc);
    return SP_OK;
}

int aws_find_image(aws_ctx *ctx, const char *region, const char *arch, bool neuron, char *ami,
                   size_t size, sp_err *err)
{
    /* AWS's GPU-ready images, most specific first; the last is a broad fallback. */
    const char *gpu_x86[] = {"Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04)*",
                             "Deep Learning Base*GPU*Ubuntu*", "Deep Learning*Ubuntu*"};
    const char *gpu_arm[] = {"Deep Learning ARM64 Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04)*",
                             "Deep Learning ARM64*Ubuntu*", "Deep Learning*Ubuntu*"};
    const char *neuron_x86[] = {"Deep Learning AMI Neuron (Ubuntu 22.04)*",
                                "Deep Learning*Neuron*Ubuntu*", "Deep Learning*Ubuntu*"};
    bool arm = strcmp(arch, "arm64") == 0;
    const char **patterns = neuron ? neuron_x86 : arm ? gpu_arm : gpu_x86;
    for (size_t i = 0; i < 3; i++) {
        int rc = search_images(ctx, region, patterns[i], arch, ami, size, err);
        if (rc || ami[0])
            return rc;
    }
    return sp_err_set(err, SP_E_NOTFOUND,
                      "aws: no GPU-ready Deep Learning AMI for %s in %s; set image: in the pool "
                      "file",
                      arch, region);
}

/* ---- Key pair and security group ------------------------------------------------------------ */

/* NULL when out of memory or libcrypto failed (aws_launch checks that it loads first). */
static char *base64(const char *s)
{
    size_t n = strlen(s);
    char *out = malloc(AWS_BASE64_SIZE(n));
    if (out && !aws_base64_encode(out, s, n) && n) {
        free(out);
        out = NULL;
    }
    return out;
}

int aws_ensure_key_pair(aws_ctx *ctx, const char *region, const char *name,
                        const char *public_key, sp_err *err)
{
    aws_params p;
    aws_params_init(&p);
    aws_params_add(&p, "KeyName.1", name);
    aws_xml_doc *doc = NULL;
    aws_error e;
    int rc = aws_ec2_call(ctx, region, "DescribeKeyPairs", &p, false, &doc, &e, err);
    aws_params_free(&p);
    aws_xml_free(doc);
    if (rc != SP_E_NOTFOUND)
        return rc;
    char *material = base64(public_key);
    if (!material)
        return sp_err_set(err, SP_E_NOMEM, "out of memory");
    aws_params_init(&p);
    aws_params_add(&p, "KeyName", name);
    aws_params_add(&p, "PublicKeyMaterial", material);
    rc = aws_ec2_call(ctx, region, "ImportKeyPair", &p, false, &doc, &e, err);
    aws_params_free(&p);
    free(material);
    aws_xml_free(doc);
    /* Another skypool imported it a moment ago: the name follows from the key, so it is ours. */
    return rc && !strcmp(e.code, "InvalidKeyPair.Duplicate") ? SP_OK : rc;
}

static int find_group(aws_ctx *ctx, const char *region, const char *name, char *id, size_t size,
                      sp_err *err)
{
    aws_params p;
    aws_params_init(&p);
    const char *names[] = {name};
    aws_params_filter(&p, 1, "group-name", names, 1);
    aws_xml_doc *doc;
    int rc = aws_ec2_call(ctx, region, "DescribeSecurityGroups", &p, false, &doc, NULL, err);
    aws_params_free(&p);
    if (rc)
        return rc;
    aws_xml_node *it = aws_xml_item(aws_xml_child(aws_xml_root(doc), "securityGroupInfo"),
                                    NULL);
    aws_xml_text(it, "groupId", id, size);
    aws_xml_free(doc);
    return SP_OK;
}

static int open_ssh(aws_ctx *ctx, const char *region, const char *group_id, sp_err *err)
{
    aws_params p;
    aws_params_init(&p);
    aws_params_add(&p, "GroupId", group_id);
    aws_params_add(&p, "IpPermissions.1.IpProtocol", "tcp");
    aws_params_add(&p, "IpPermissions.1.FromPort", "22");
    aws_params_add(&p, "IpPermissions.1.ToPort", "22");
    aws_params_add(&p, "IpPermissions.1.IpRanges.1.CidrIp", "0.0.0.0/0");
    aws_xml_doc *doc = NULL;
    aws_error e;
    int rc = aws_ec2_call(ctx, region, "AuthorizeSecurityGroupIngress", &p, false, &doc, &e,
                          err);
    aws_params_free(&p);
    aws_xml_free(doc);
    return rc && !strcmp(e.code, "InvalidPermission.Duplicate") ? SP_OK : rc;
}

int aws_ensure_ssh_group(aws_ctx *ctx, const char *region, const char *name, char *group_id,
                         size_t size, sp_err *err)
{
    int rc = find_group(ctx, region, name, group_id, size, err);
    if (rc || group_id[0])
        return rc;
    aws_params p;
    aws_params_init(&p);
    aws_params_add(&p, "GroupName", name);
    aws_params_add(&p, "GroupDescription", SSH_GROUP_DESCRIPTION);
    aws_xml_doc *doc;
    aws_error e;
    rc = aws_ec2_call(ctx, region, "CreateSecurityGroup", &p, false, &doc, &e, err);
    aws_params_free(&p);
    /* Made by another skypool between our look and our create: use that one. */
    if (rc && !strcmp(e.code, "InvalidGroup.Duplicate"))
        return find_group(ctx, region, name, group_id, size, err);
    if (rc)
        return rc;
    aws_xml_text(aws_xml_root(doc), "groupId", group_id, size);
    aws_xml_free(doc);
    if (!group_id[0])
        return sp_err_set(err, SP_E_PROTOCOL, "ec2 CreateSecurityGroup in %s: no groupId",
                          region);
    return open_ssh(ctx, region, group_id, err);
}

/* ---- Instances ----------------------------------------------------------------------------- */

static sp_node_state state_of(const char *name)
{
    if (strcmp(name, "pending") == 0)
        return SP_NODE_PENDING;
    if (strcmp(name, "running") == 0)
        return SP_NODE_RUNNING;
    if (strcmp(name, "stopping") == 0 || strcmp(name, "stopped") == 0 ||
        strcmp(name, "shutting-down") == 0)
        return SP_NODE_STOPPING;
    if (strcmp(name, "terminated") == 0)
        return SP_NODE_GONE;
    return SP_NODE_UNKNOWN;
}

static void read_node(const aws_xml_node *inst, const char *region, sp_node *n)
{
    char state[32], lifecycle[16];
    memset(n, 0, sizeof(*n));
    n->struct_size = sizeof(*n);
    aws_xml_text(inst, "instanceId", n->id, sizeof(n->id));
    aws_xml_text(inst, "instanceType", n->instance_type, sizeof(n->instance_type));
    aws_xml_text(inst, "placement/availabilityZone", n->zone, sizeof(n->zone));
    aws_xml_text(inst, "ipAddress", n->public_ip, sizeof(n->public_ip));
    aws_xml_text(inst, "privateIpAddress", n->private_ip, sizeof(n->private_ip));
    n->state = state_of(aws_xml_text(inst, "instanceState/name", state, sizeof(state)));
    aws_xml_text(inst, "instanceLifecycle", lifecycle, sizeof(lifecycle));
    n->market = strcmp(lifecycle, "spot") == 0 ? SP_MARKET_SPOT : SP_MARKET_ON_DEMAND;
    snprintf(n->region, sizeof(n->region), "%s", region);
    for (aws_xml_node *t = aws_xml_item(aws_xml_child(inst, "tagSet"), NULL); t;
         t = aws_xml_item(NULL, t)) {
        char key[32];
        if (strcmp(aws_xml_text(t, "key", key, sizeof(key)), "Name") == 0)
            aws_xml_text(t, "value", n->name, sizeof(n->name));
    }
}

static int zone_name(aws_ctx *ctx, const char *region, const char *zone_id, char *name,
                     size_t size, sp_err *err)
{
    aws_params p;
    aws_params_init(&p);
    const char *ids[] = {zone_id};
    aws_params_filter(&p, 1, "zone-id", ids, 1);
    aws_xml_doc *doc;
    int rc = aws_ec2_call(ctx, region, "DescribeAvailabilityZones", &p, false, &doc, NULL, err);
    aws_params_free(&p);
    if (rc)
        return rc;
    aws_xml_node *it = aws_xml_item(aws_xml_child(aws_xml_root(doc), "availabilityZoneInfo"),
                                    NULL);
    aws_xml_text(it, "zoneName", name, size);
    aws_xml_free(doc);
    if (!name[0])
        return sp_err_set(err, SP_E_CAPACITY, "aws: zone %s is not available in %s", zone_id,
                          region);
    return SP_OK;
}

static void add_tags(aws_params *p, const sp_launch_request *req)
{
    aws_params_add(p, "TagSpecification.1.ResourceType", "instance");
    aws_params_add(p, "TagSpecification.1.Tag.1.Key", "Name");
    aws_params_add(p, "TagSpecification.1.Tag.1.Value", req->name ? req->name : "skypool");
    for (size_t i = 0; i < req->n_tags; i++) {
        char key[64];
        snprintf(key, sizeof(key), "TagSpecification.1.Tag.%zu.Key", i + 2);
        aws_params_add(p, key, req->tags[i].key);
        snprintf(key, sizeof(key), "TagSpecification.1.Tag.%zu.Value", i + 2);
        aws_params_add(p, key, req->tags[i].value);
    }
}

static void add_market(aws_params *p, sp_market market)
{
    if (market != SP_MARKET_SPOT)
        return;
    aws_params_add(p, "InstanceMarketOptions.MarketType", "spot");
    aws_params_add(p, "InstanceMarketOptions.SpotOptions.SpotInstanceType", "one-time");
    aws_params_add(p, "InstanceMarketOptions.SpotOptions.InstanceInterruptionBehavior",
                   "terminate");
}

/* The key pair's name follows from the key itself, so that every pool with the same key
 * shares one. */
static int key_name(const char *public_key, char *name, size_t size, sp_err *err)
{
    unsigned char md[32];
    if (aws_sha256(public_key, strlen(public_key), md))
        return sp_err_set(err, SP_E_INTERNAL, "aws: SHA-256 failed in libcrypto");
    snprintf(name, size, "skypool-%02x%02x%02x%02x%02x%02x", md[0], md[1], md[2], md[3], md[4],
             md[5]);
    return SP_OK;
}

typedef struct launch_parts {
    char zone[64];
    char ami[64];
    char key[64];
    char group[64];
} launch_parts;

/* The cached answer for "region|what|arg", or "" (call with setup_lock held). */
static const char *setup_get(aws_ctx *ctx, const char *key)
{
    for (size_t i = 0; i < ctx->n_setup; i++)
        if (!strcmp(ctx->setup[i].key, key))
            return ctx->setup[i].value;
    return "";
}

static void setup_put(aws_ctx *ctx, const char *key, const char *value)
{
    if (ctx->n_setup == sizeof(ctx->setup) / sizeof(ctx->setup[0]))
        return;
    snprintf(ctx->setup[ctx->n_setup].key, sizeof(ctx->setup[0].key), "%s", key);
    snprintf(ctx->setup[ctx->n_setup].value, sizeof(ctx->setup[0].value), "%s", value);
    ctx->n_setup++;
}

typedef int (*setup_fn)(aws_ctx *ctx, const sp_launch_request *req, char *out, size_t size,
                        sp_err *err);

/* Runs fn once per key and process; later launches reuse its answer. */
static int once(aws_ctx *ctx, const char *key, setup_fn fn, const sp_launch_request *req,
                char *out, size_t size, sp_err *err)
{
    pthread_mutex_lock(&ctx->setup_lock);
    snprintf(out, size, "%s", setup_get(ctx, key));
    int rc = out[0] ? SP_OK : fn(ctx, req, out, size, err);
    if (!rc && out[0] && !setup_get(ctx, key)[0])
        setup_put(ctx, key, out);
    pthread_mutex_unlock(&ctx->setup_lock);
    return rc;
}

static int setup_image(aws_ctx *ctx, const sp_launch_request *req, char *out, size_t size,
                       sp_err *err)
{
    const sp_offer *o = req->offer;
    return aws_find_image(ctx, o->region, o->arch && *o->arch ? o->arch : "x86_64",
                          strncmp(o->accelerator, "Trainium", 8) == 0 ||
                              strncmp(o->accelerator, "Inferentia", 10) == 0,
                          out, size, err);
}

static int setup_key(aws_ctx *ctx, const sp_launch_request *req, char *out, size_t size,
                     sp_err *err)
{
    int rc = key_name(req->ssh_public_key, out, size, err);
    if (!rc)
        rc = aws_ensure_key_pair(ctx, req->offer->region, out, req->ssh_public_key, err);
    if (rc)
        out[0] = '\0';
    return rc;
}

static int setup_group(aws_ctx *ctx, const sp_launch_request *req, char *out, size_t size,
                       sp_err *err)
{
    return aws_ensure_ssh_group(ctx, req->offer->region, "skypool-ssh", out, size, err);
}

static int prepare_launch(aws_ctx *ctx, const sp_launch_request *req, launch_parts *lp,
                          sp_err *err)
{
    const sp_offer *o = req->offer;
    memset(lp, 0, sizeof(*lp));
    int rc = aws_crypto_ready(err); /* before key_name and base64 need it */
    if (!rc && o->zone && *o->zone && strcmp(o->zone, "-") != 0)
        rc = zone_name(ctx, o->region, o->zone, lp->zone, sizeof(lp->zone), err);
    char key[160];
    const char *kind = strncmp(o->accelerator, "Trainium", 8) == 0 ||
                               strncmp(o->accelerator, "Inferentia", 10) == 0
                           ? "neuron"
                           : "gpu";
    if (!rc && req->image && *req->image)
        snprintf(lp->ami, sizeof(lp->ami), "%s", req->image);
    else if (!rc) {
        snprintf(key, sizeof(key), "%s|image|%s|%s", o->region, o->arch ? o->arch : "", kind);
        rc = once(ctx, key, setup_image, req, lp->ami, sizeof(lp->ami), err);
    }
    if (!rc && req->ssh_public_key && *req->ssh_public_key) {
        char name[64];
        rc = key_name(req->ssh_public_key, name, sizeof(name), err);
        snprintf(key, sizeof(key), "%s|key|%s", o->region, name);
        if (!rc)
            rc = once(ctx, key, setup_key, req, lp->key, sizeof(lp->key), err);
    }
    if (!rc) {
        snprintf(key, sizeof(key), "%s|group", o->region);
        rc = once(ctx, key, setup_group, req, lp->group, sizeof(lp->group), err);
    }
    return rc;
}

static void run_params(aws_params *p, const sp_launch_request *req, const launch_parts *lp)
{
    aws_params_add(p, "ImageId", lp->ami);
    aws_params_add(p, "InstanceType", req->offer->instance_type);
    aws_params_add(p, "MinCount", "1");
    aws_params_add(p, "MaxCount", "1");
    if (req->client_token)
        aws_params_add(p, "ClientToken", req->client_token);
    if (lp->key[0])
        aws_params_add(p, "KeyName", lp->key);
    aws_params_add(p, "SecurityGroupId.1", lp->group);
    if (lp->zone[0])
        aws_params_add(p, "Placement.AvailabilityZone", lp->zone);
    add_tags(p, req);
    add_market(p, req->market);
    if (req->user_data && *req->user_data) {
        char *b64 = base64(req->user_data);
        if (b64)
            aws_params_add(p, "UserData", b64);
        else
            p->oom = true;
        free(b64);
    }
}

int aws_launch(void *vctx, const sp_launch_request *req, sp_node *node, sp_err *err)
{
    aws_ctx *ctx = vctx;
    launch_parts lp;
    int rc = prepare_launch(ctx, req, &lp, err);
    if (rc)
        return rc;
    aws_params p;
    aws_params_init(&p);
    run_params(&p, req, &lp);
    aws_xml_doc *doc;
    rc = aws_ec2_call(ctx, req->offer->region, "RunInstances", &p, false, &doc, NULL, err);
    aws_params_free(&p);
    if (rc)
        return rc;
    aws_xml_node *inst = aws_xml_item(aws_xml_child(aws_xml_root(doc), "instancesSet"), NULL);
    read_node(inst, req->offer->region, node);
    aws_xml_free(doc);
    if (!node->id[0])
        return sp_err_set(err, SP_E_PROTOCOL, "ec2 RunInstances in %s: no instance in the answer",
                          req->offer->region);
    return SP_OK;
}

static int describe_page(aws_ctx *ctx, const char *region, aws_params *p, sp_node_sink *sink,
                         char *token, size_t tsize, sp_err *err)
{
    aws_xml_doc *doc;
    int rc = aws_ec2_call(ctx, region, "DescribeInstances", p, false, &doc, NULL, err);
    if (rc)
        return rc;
    aws_xml_node *root = aws_xml_root(doc);
    for (aws_xml_node *r = aws_xml_item(aws_xml_child(root, "reservationSet"), NULL); r && !rc;
         r = aws_xml_item(NULL, r))
        for (aws_xml_node *i = aws_xml_item(aws_xml_child(r, "instancesSet"), NULL); i && !rc;
             i = aws_xml_item(NULL, i)) {
            sp_node n;
            read_node(i, region, &n);
            rc = sink->node(sink, &n);
        }
    aws_xml_text(root, "nextToken", token, tsize);
    aws_xml_free(doc);
    return rc;
}

static void filter_params(aws_params *p, const sp_node_filter *f)
{
    static const char *const live[] = {"pending", "running", "stopping", "stopped",
                                       "shutting-down"};
    aws_params_filter(p, 1, "instance-state-name", live, 5);
    for (size_t i = 0; i < f->n_tags; i++) {
        char name[160];
        snprintf(name, sizeof(name), "tag:%s", f->tags[i].key);
        const char *v[] = {f->tags[i].value};
        aws_params_filter(p, (unsigned)i + 2, name, v, 1);
    }
}

int aws_describe_nodes(void *vctx, const sp_node_filter *f, sp_node_sink *sink, sp_err *err)
{
    aws_ctx *ctx = vctx;
    if (!f->n_regions)
        return sp_err_set(err, SP_E_INVALID, "aws: name the regions to look in");
    for (size_t r = 0; r < f->n_regions; r++) {
        char token[2048] = "";
        for (int page = 0; page < 1000; page++) {
            aws_params p;
            aws_params_init(&p);
            filter_params(&p, f);
            aws_params_addf(&p, "MaxResults", "%u", aws_page(ctx, 100));
            if (token[0])
                aws_params_add(&p, "NextToken", token);
            int rc = describe_page(ctx, f->regions[r], &p, sink, token, sizeof(token), err);
            aws_params_free(&p);
            if (rc)
                return rc;
            if (!token[0])
                break;
        }
    }
    return SP_OK;
}

int aws_terminate(void *vctx, const sp_node *node, sp_err *err)
{
    aws_ctx *ctx = vctx;
    aws_params p;
    aws_params_init(&p);
    aws_params_add(&p, "InstanceId.1", node->id);
    aws_xml_doc *doc = NULL;
    int rc = aws_ec2_call(ctx, node->region, "TerminateInstances", &p, false, &doc, NULL, err);
    aws_params_free(&p);
    aws_xml_free(doc);
    return rc == SP_E_NOTFOUND ? SP_OK : rc; /* already gone is what was asked for */
}

int aws_ssh_target(void *vctx, const sp_node *node, sp_ssh_target *t, sp_err *err)
{
    (void)vctx;
    const char *ip = node->public_ip[0] ? node->public_ip : node->private_ip;
    if (!ip[0])
        return sp_err_set(err, SP_E_NOTFOUND, "aws: %s has no IP address yet", node->id);
    memset(t, 0, sizeof(*t));
    t->struct_size = sizeof(*t);
    snprintf(t->host, sizeof(t->host), "%s", ip);
    t->port = 22;
    snprintf(t->user, sizeof(t->user), "ubuntu"); /* the Deep Learning AMIs' user */
    return SP_OK;
}

int aws_console_output(aws_ctx *ctx, const char *region, const char *instance_id, char **text,
                       sp_err *err)
{
    aws_params p;
    aws_params_init(&p);
    aws_params_add(&p, "InstanceId", instance_id);
    aws_xml_doc *doc;
    int rc = aws_ec2_call(ctx, region, "GetConsoleOutput", &p, true, &doc, NULL, err);
    aws_params_free(&p);
    if (rc)
        return rc;
    const char *b64 = aws_xml_content(aws_xml_child(aws_xml_root(doc), "output"));
    size_t n = strlen(b64);
    *text = calloc(1, n / 4 * 3 + 4);
    if (*text && n)
        aws_base64_decode((unsigned char *)*text, b64, n);
    aws_xml_free(doc);
    return *text ? SP_OK : sp_err_set(err, SP_E_NOMEM, "out of memory");
}
