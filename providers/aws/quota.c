/*
 * Quotas: EC2 limits running accelerator instances by vCPUs per instance family, region and
 * market. The limit comes from Service Quotas (GetServiceQuota, else the AWS default), the use
 * from the account's pending and running instances of the family (DescribeInstances).
 */
#include "aws.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const p_prefixes[] = {"p2.", "p3.", "p3dn.", "p4d.", "p4de.", NULL};
static const char *const p5_prefixes[] = {"p5.", "p5e.", "p5en.", "p6-", NULL};
static const char *const p_all_prefixes[] = {"p", NULL};
static const char *const g_prefixes[] = {"g", "vt", NULL};
static const char *const inf_prefixes[] = {"inf", NULL};
static const char *const trn_prefixes[] = {"trn", NULL};
static const char *const dl_prefixes[] = {"dl", NULL};

/* First match wins: the P5 spot quota is separate from the other P spot requests. */
static const aws_quota_def on_demand[] = {
    {"P", "L-417A185B", "Running On-Demand P instances", p_all_prefixes},
    {"G and VT", "L-DB2E81BA", "Running On-Demand G and VT instances", g_prefixes},
    {"Inf", "L-1945791B", "Running On-Demand Inf instances", inf_prefixes},
    {"Trn", "L-2C3B7624", "Running On-Demand Trn instances", trn_prefixes},
    {"DL", "L-6E869C2A", "Running On-Demand DL instances", dl_prefixes},
};

static const aws_quota_def spot[] = {
    {"P5", "L-C4BD4855", "All P5 Spot Instance Requests", p5_prefixes},
    {"P", "L-7212CCBC", "All P4, P3 and P2 Spot Instance Requests", p_prefixes},
    {"G and VT", "L-3819A6DF", "All G and VT Spot Instance Requests", g_prefixes},
    {"Inf", "L-B5D1601B", "All Inf Spot Instance Requests", inf_prefixes},
    {"Trn", "L-6B0D517C", "All Trn Spot Instance Requests", trn_prefixes},
    {"DL", "L-85EED4F7", "All DL Spot Instance Requests", dl_prefixes},
};

static bool covers(const aws_quota_def *d, const char *type)
{
    /* Every EC2 family that begins with one of these letters is of that quota family. */
    for (const char *const *p = d->prefixes; *p; p++)
        if (strncmp(type, *p, strlen(*p)) == 0)
            return true;
    return false;
}

const aws_quota_def *aws_quota_for(const char *instance_type, sp_market market)
{
    const aws_quota_def *defs = market == SP_MARKET_SPOT ? spot : on_demand;
    size_t n = market == SP_MARKET_SPOT ? sizeof(spot) / sizeof(spot[0])
                                        : sizeof(on_demand) / sizeof(on_demand[0]);
    for (size_t i = 0; i < n; i++)
        if (covers(&defs[i], instance_type))
            return &defs[i];
    return NULL;
}

/* The quota's value: the applied one, else AWS's default. */
static int quota_value(aws_ctx *ctx, const char *region, const aws_quota_def *d, double *value,
                       sp_err *err)
{
    static const char *const targets[] = {"ServiceQuotasV20190624.GetServiceQuota",
                                          "ServiceQuotasV20190624.GetAWSDefaultServiceQuota"};
    json_t *obj = json_pack("{s:s, s:s}", "ServiceCode", "ec2", "QuotaCode", d->code);
    char *req = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
    json_decref(obj);
    int rc = SP_E_NOMEM;
    for (size_t i = 0; req && i < 2; i++) {
        char *body = NULL;
        aws_error e;
        rc = aws_json_call(ctx, "servicequotas", region, targets[i], req, &body, &e, err);
        if (rc == SP_E_NOTFOUND && i == 0)
            continue;
        if (rc == SP_OK) {
            json_t *j = json_loads(body, 0, NULL);
            json_t *v = json_object_get(json_object_get(j, "Quota"), "Value");
            rc = json_is_number(v) ? SP_OK
                                   : sp_err_set(err, SP_E_PROTOCOL,
                                                "servicequotas in %s: no Quota.Value for %s",
                                                region, d->code);
            *value = json_number_value(v);
            json_decref(j);
        }
        free(body);
        break;
    }
    free(req);
    return rc;
}

typedef struct usage {
    aws_ctx *ctx;
    const char *region;
    const aws_quota_def *def;
    sp_market market;
    double vcpus;
    int rc;
    sp_err *err;
} usage;

static unsigned vcpus_of(const aws_xml_node *inst)
{
    unsigned long long cores = aws_xml_ull(inst, "cpuOptions/coreCount");
    unsigned long long threads = aws_xml_ull(inst, "cpuOptions/threadsPerCore");
    return (unsigned)(cores * (threads ? threads : 1));
}

/* vCPUs of a type, for instances whose description lacks cpuOptions. */
static unsigned type_vcpus(aws_ctx *ctx, const char *region, const char *type, sp_err *err)
{
    aws_params p;
    aws_params_init(&p);
    aws_params_add(&p, "InstanceType.1", type);
    aws_xml_doc *doc;
    unsigned v = 0;
    if (aws_ec2_call(ctx, region, "DescribeInstanceTypes", &p, false, &doc, NULL, err) == SP_OK) {
        aws_xml_node *it = aws_xml_item(aws_xml_child(aws_xml_root(doc), "instanceTypeSet"),
                                        NULL);
        v = (unsigned)aws_xml_ull(it, "vCpuInfo/defaultVCpus");
        aws_xml_free(doc);
    }
    aws_params_free(&p);
    return v;
}

static void count_instance(const aws_xml_node *inst, usage *u)
{
    char type[48], lifecycle[16];
    aws_xml_text(inst, "instanceType", type, sizeof(type));
    aws_xml_text(inst, "instanceLifecycle", lifecycle, sizeof(lifecycle));
    bool is_spot = strcmp(lifecycle, "spot") == 0;
    if (is_spot != (u->market == SP_MARKET_SPOT) || aws_quota_for(type, u->market) != u->def)
        return;
    unsigned v = vcpus_of(inst);
    u->vcpus += v ? v : type_vcpus(u->ctx, u->region, type, u->err);
}

static void count_page(aws_xml_doc *doc, usage *u)
{
    aws_xml_node *root = aws_xml_root(doc);
    for (aws_xml_node *r = aws_xml_item(aws_xml_child(root, "reservationSet"), NULL); r;
         r = aws_xml_item(NULL, r))
        for (aws_xml_node *i = aws_xml_item(aws_xml_child(r, "instancesSet"), NULL); i;
             i = aws_xml_item(NULL, i))
            count_instance(i, u);
}

/* vCPUs of the family's pending and running instances in the region and market. */
static int quota_usage(usage *u)
{
    static const char *const states[] = {"pending", "running"};
    char token[2048] = "";
    for (int page = 0; page < 1000; page++) {
        aws_params p;
        aws_params_init(&p);
        aws_params_filter(&p, 1, "instance-state-name", states, 2);
        aws_params_addf(&p, "MaxResults", "%u", aws_page(u->ctx, 1000));
        if (token[0])
            aws_params_add(&p, "NextToken", token);
        aws_xml_doc *doc;
        u->rc = aws_ec2_call(u->ctx, u->region, "DescribeInstances", &p, false, &doc, NULL,
                             u->err);
        aws_params_free(&p);
        if (u->rc)
            return u->rc;
        count_page(doc, u);
        aws_xml_text(aws_xml_root(doc), "nextToken", token, sizeof(token));
        aws_xml_free(doc);
        if (!token[0])
            break;
    }
    return SP_OK;
}

static void fill_report(sp_quota_report *r, const aws_quota_def *d, const sp_quota_query *q,
                        double limit, double used)
{
    unsigned vcpus = q->offer->vcpus ? q->offer->vcpus : 0;
    r->struct_size = sizeof(*r);
    snprintf(r->quota_name, sizeof(r->quota_name), "%s", d->name);
    snprintf(r->quota_code, sizeof(r->quota_code), "%s", d->code);
    snprintf(r->unit, sizeof(r->unit), "vCPU");
    r->limit = limit;
    r->used = used;
    r->needed = (double)vcpus * q->nodes;
    r->verdict = used + r->needed <= limit ? SP_VERDICT_OK : SP_VERDICT_SHORT;
    if (r->verdict == SP_VERDICT_SHORT)
        snprintf(r->fix, sizeof(r->fix),
                 "request quota %s (%s) in %s to at least %.0f vCPUs: aws service-quotas "
                 "request-service-quota-increase --service-code ec2 --quota-code %s "
                 "--desired-value %.0f --region %s",
                 d->code, d->name, q->offer->region, used + r->needed, d->code,
                 used + r->needed, q->offer->region);
    else
        r->fix[0] = '\0';
}

int aws_quota(void *vctx, const sp_quota_query *q, sp_quota_report *r, sp_err *err)
{
    aws_ctx *ctx = vctx;
    const sp_offer *o = q->offer;
    memset(r, 0, sizeof(*r));
    const aws_quota_def *d = aws_quota_for(o->instance_type, q->market);
    if (!d)
        return sp_err_set(err, SP_E_UNSUPPORTED,
                          "aws: no vCPU quota is known for %s; check the Service Quotas console",
                          o->instance_type);
    double limit = 0;
    int rc = quota_value(ctx, o->region, d, &limit, err);
    if (rc)
        return rc;
    usage u = {ctx, o->region, d, q->market, 0, SP_OK, err};
    if ((rc = quota_usage(&u)))
        return rc;
    fill_report(r, d, q, limit, u.vcpus);
    return SP_OK;
}

int aws_availability(void *vctx, const sp_offer *offer, sp_market market, sp_err *err)
{
    (void)market;
    aws_ctx *ctx = vctx;
    aws_params p;
    aws_params_init(&p);
    aws_params_add(&p, "LocationType", "availability-zone-id");
    const char *type[] = {offer->instance_type}, *zone[] = {offer->zone};
    aws_params_filter(&p, 1, "instance-type", type, 1);
    aws_params_filter(&p, 2, "location", zone, 1);
    aws_xml_doc *doc;
    int rc = aws_ec2_call(ctx, offer->region, "DescribeInstanceTypeOfferings", &p, false, &doc,
                          NULL, err);
    aws_params_free(&p);
    if (rc)
        return rc;
    bool offered = aws_xml_item(aws_xml_child(aws_xml_root(doc),
                                              "instanceTypeOfferingSet"),
                                NULL) != NULL;
    aws_xml_free(doc);
    if (!offered)
        return sp_err_set(err, SP_E_CAPACITY, "aws: %s is not offered in %s (%s)",
                          offer->instance_type, offer->zone, offer->region);
    return SP_OK;
}
