/*
 * Live offers: what each region sells now (DescribeInstanceTypes, DescribeInstanceTypeOfferings
 * by zone ID, DescribeSpotPriceHistory), one thread per region. On-demand prices are not in
 * EC2's API (they are in the Pricing API's price lists); they come from the catalog.
 */
#include "aws.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_REGIONS 64

/* Instance families that carry accelerators. */
static const char *const accel_patterns[] = {"p*", "g*", "trn*", "inf*", "dl*"};
#define N_PATTERNS (sizeof(accel_patterns) / sizeof(accel_patterns[0]))

typedef struct type_info {
    char type[40];
    const char *accel;
    unsigned count;
    unsigned accel_mem_mib;
    unsigned vcpus;
    unsigned mem_mib;
    char arch[16];
} type_info;

typedef struct zone_map {
    char name[40];
    char id[40];
} zone_map;

typedef struct spot_price {
    char type[40];
    char zone_id[40];
    char when[40];
    double price;
} spot_price;

typedef struct live_offer {
    char type[40];
    char zone_id[40];
    const type_info *info;
    double spot;
} live_offer;

/* A growable array of fixed-size records. */
typedef struct vec {
    void *data;
    size_t n, cap, size;
} vec;

static void *vec_push(vec *v)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 64;
        void *d = realloc(v->data, cap * v->size);
        if (!d)
            return NULL;
        v->data = d;
        v->cap = cap;
    }
    void *slot = (char *)v->data + v->n++ * v->size;
    memset(slot, 0, v->size);
    return slot;
}

typedef struct region_job {
    aws_ctx *ctx;
    const char *region;
    vec types, zones, spots, offers;
    int rc;
    sp_err err;
} region_job;

/* ---- EC2 accelerator names -> skypool models ----------------------------------------------- */

const char *aws_model_key(const char *name, unsigned long long mem_mib)
{
    static const struct {
        const char *name;
        unsigned long long min_mib, max_mib; /* per device, inclusive */
        const char *key;
    } map[] = {
        {"T4", 0, ~0ull, "T4"},           {"T4g", 0, ~0ull, "T4G"},
        {"L4", 20000, ~0ull, "L4"},       {"L40S", 0, ~0ull, "L40S"},
        {"A10G", 0, ~0ull, "A10G"},       {"V100", 0, 20000, "V100"},
        {"V100", 20001, ~0ull, "V100-32GB"}, {"A100", 0, 50000, "A100-40GB"},
        {"A100", 50001, ~0ull, "A100-80GB"}, {"H100", 0, ~0ull, "H100-SXM"},
        {"H200", 0, ~0ull, "H200"},       {"B200", 0, ~0ull, "B200"},
        {"B300", 0, ~0ull, "B300"},       {"Gaudi HL-205", 0, ~0ull, "Gaudi-HL205"},
        {"Inferentia", 0, ~0ull, "Inferentia"}, {"Inferentia2", 0, ~0ull, "Inferentia2"},
        {"Trainium", 0, ~0ull, "Trainium"}, {"Trainium2", 0, ~0ull, "Trainium2"},
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (strcmp(map[i].name, name) == 0 && mem_mib >= map[i].min_mib &&
            mem_mib <= map[i].max_mib)
            return map[i].key;
    return NULL;
}

/* The first accelerator set that an instance type reports: GPUs, Neuron devices, or the older
 * inference accelerators (inf1). Fractional GPUs (g6f) are not whole accelerators: skipped. */
static bool read_accel(const aws_xml_node *it, type_info *t)
{
    static const char *const sets[] = {"gpuInfo/gpus", "neuronInfo/neuronDevices",
                                       "inferenceAcceleratorInfo/accelerators"};
    for (size_t s = 0; s < 3; s++) {
        aws_xml_node *item = aws_xml_item(aws_xml_path(it, sets[s]), NULL);
        if (!item)
            continue;
        char name[64], part[32];
        aws_xml_text(item, "name", name, sizeof(name));
        unsigned long long mem = aws_xml_ull(item, "memoryInfo/sizeInMiB");
        if (aws_xml_text(it, "gpuInfo/gpus/item/gpuPartitionSize", part, sizeof(part))[0] &&
            strtod(part, NULL) < 1.0)
            return false;
        t->accel = aws_model_key(name, mem);
        t->count = (unsigned)aws_xml_ull(item, "count");
        t->accel_mem_mib = (unsigned)mem;
        return t->accel && t->count;
    }
    return false;
}

static void read_type(const aws_xml_node *it, region_job *job)
{
    type_info t;
    memset(&t, 0, sizeof(t));
    aws_xml_text(it, "instanceType", t.type, sizeof(t.type));
    if (!t.type[0] || !read_accel(it, &t))
        return;
    t.vcpus = (unsigned)aws_xml_ull(it, "vCpuInfo/defaultVCpus");
    t.mem_mib = (unsigned)aws_xml_ull(it, "memoryInfo/sizeInMiB");
    aws_xml_text(it, "processorInfo/supportedArchitectures/item", t.arch, sizeof(t.arch));
    if (strcmp(t.arch, "arm64_mac") == 0 || !t.arch[0])
        snprintf(t.arch, sizeof(t.arch), "x86_64");
    type_info *slot = vec_push(&job->types);
    if (slot)
        *slot = t;
}

/* Calls a paginated action until NextToken runs out, handing each page's set to fn. */
static int paged(region_job *job, const char *action, aws_params *base, const char *set,
                 void (*fn)(const aws_xml_node *item, region_job *job))
{
    char token[2048] = "";
    for (int page = 0; page < 1000; page++) {
        aws_params p;
        aws_params_init(&p);
        for (size_t i = 0; i < base->n; i++)
            aws_params_add(&p, base->keys[i], base->values[i]);
        if (token[0])
            aws_params_add(&p, "NextToken", token);
        aws_xml_doc *doc;
        int rc = aws_ec2_call(job->ctx, job->region, action, &p, false, &doc, NULL, &job->err);
        aws_params_free(&p);
        if (rc)
            return rc;
        aws_xml_node *root = aws_xml_root(doc);
        for (aws_xml_node *it = aws_xml_item(aws_xml_child(root, set), NULL); it;
             it = aws_xml_item(NULL, it))
            fn(it, job);
        aws_xml_text(root, "nextToken", token, sizeof(token));
        aws_xml_free(doc);
        if (!token[0])
            return SP_OK;
    }
    return sp_err_set(&job->err, SP_E_PROTOCOL, "ec2 %s in %s: more than 1000 pages", action,
                      job->region);
}

static void read_zone(const aws_xml_node *it, region_job *job)
{
    zone_map *z = vec_push(&job->zones);
    if (!z)
        return;
    aws_xml_text(it, "zoneName", z->name, sizeof(z->name));
    aws_xml_text(it, "zoneId", z->id, sizeof(z->id));
}

static const type_info *find_type(const region_job *job, const char *type)
{
    const type_info *t = job->types.data;
    for (size_t i = 0; i < job->types.n; i++)
        if (strcmp(t[i].type, type) == 0)
            return &t[i];
    return NULL;
}

static void read_offering(const aws_xml_node *it, region_job *job)
{
    char type[40];
    aws_xml_text(it, "instanceType", type, sizeof(type));
    const type_info *info = find_type(job, type);
    if (!info)
        return;
    live_offer *o = vec_push(&job->offers);
    if (!o)
        return;
    snprintf(o->type, sizeof(o->type), "%s", type);
    aws_xml_text(it, "location", o->zone_id, sizeof(o->zone_id));
    o->info = info;
    o->spot = SP_PRICE_UNKNOWN;
}

static const char *zone_id_of(const region_job *job, const char *name)
{
    const zone_map *z = job->zones.data;
    for (size_t i = 0; i < job->zones.n; i++)
        if (strcmp(z[i].name, name) == 0)
            return z[i].id;
    return NULL;
}

/* Keeps the latest price per (type, zone). */
static void read_spot(const aws_xml_node *it, region_job *job)
{
    spot_price s;
    char zone[40], price[32];
    memset(&s, 0, sizeof(s));
    aws_xml_text(it, "instanceType", s.type, sizeof(s.type));
    aws_xml_text(it, "availabilityZone", zone, sizeof(zone));
    aws_xml_text(it, "timestamp", s.when, sizeof(s.when));
    s.price = strtod(aws_xml_text(it, "spotPrice", price, sizeof(price)), NULL);
    const char *id = zone_id_of(job, zone);
    if (!id || !price[0])
        return;
    snprintf(s.zone_id, sizeof(s.zone_id), "%s", id);
    spot_price *all = job->spots.data;
    for (size_t i = 0; i < job->spots.n; i++)
        if (strcmp(all[i].type, s.type) == 0 && strcmp(all[i].zone_id, s.zone_id) == 0) {
            if (strcmp(s.when, all[i].when) > 0)
                all[i] = s;
            return;
        }
    spot_price *slot = vec_push(&job->spots);
    if (slot)
        *slot = s;
}

static void add_patterns(aws_params *p, unsigned filter)
{
    aws_params_filter(p, filter, "instance-type", accel_patterns, N_PATTERNS);
}

static int fetch_types_and_zones(region_job *job)
{
    aws_params p;
    aws_params_init(&p);
    int rc = paged(job, "DescribeAvailabilityZones", &p, "availabilityZoneInfo", read_zone);
    if (!rc) {
        add_patterns(&p, 1);
        aws_params_addf(&p, "MaxResults", "%u", aws_page(job->ctx, 100));
        rc = paged(job, "DescribeInstanceTypes", &p, "instanceTypeSet", read_type);
    }
    aws_params_free(&p);
    return rc;
}

/* Exact type names, not patterns: not every EC2 endpoint takes wildcards in these calls. */
#define TYPES_PER_CALL 100

/* Names types [from, from + TYPES_PER_CALL) as an instance-type filter or InstanceType.N. */
static void add_types(aws_params *p, const region_job *job, size_t from, bool as_filter)
{
    const type_info *t = job->types.data;
    const char *names[TYPES_PER_CALL] = {NULL};
    size_t n = 0;
    for (size_t i = from; i < job->types.n && n < TYPES_PER_CALL; i++)
        names[n++] = t[i].type;
    if (as_filter)
        aws_params_filter(p, 1, "instance-type", names, n);
    for (size_t i = 0; !as_filter && i < n; i++) {
        char key[32];
        snprintf(key, sizeof(key), "InstanceType.%zu", i + 1);
        aws_params_add(p, key, names[i]);
    }
}

static int fetch_offerings(region_job *job, size_t from)
{
    aws_params p;
    aws_params_init(&p);
    aws_params_add(&p, "LocationType", "availability-zone-id");
    add_types(&p, job, from, true);
    aws_params_addf(&p, "MaxResults", "%u", aws_page(job->ctx, 1000));
    int rc = paged(job, "DescribeInstanceTypeOfferings", &p, "instanceTypeOfferingSet",
                   read_offering);
    aws_params_free(&p);
    return rc;
}

/* The latest spot price per type and zone: prices since now, Linux. */
static int fetch_spot(region_job *job, size_t from)
{
    char now[32];
    time_t t = time(NULL);
    strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
    aws_params p;
    aws_params_init(&p);
    aws_params_add(&p, "StartTime", now);
    aws_params_add(&p, "ProductDescription.1", "Linux/UNIX");
    add_types(&p, job, from, false);
    aws_params_addf(&p, "MaxResults", "%u", aws_page(job->ctx, 1000));
    int rc = paged(job, "DescribeSpotPriceHistory", &p, "spotPriceHistorySet", read_spot);
    aws_params_free(&p);
    return rc;
}

static int fetch_offerings_and_spot(region_job *job)
{
    int rc = SP_OK;
    for (size_t from = 0; !rc && from < job->types.n; from += TYPES_PER_CALL)
        rc = fetch_offerings(job, from);
    for (size_t from = 0; !rc && from < job->types.n; from += TYPES_PER_CALL)
        rc = fetch_spot(job, from);
    return rc;
}

static void join_spot_prices(region_job *job)
{
    live_offer *o = job->offers.data;
    const spot_price *s = job->spots.data;
    for (size_t i = 0; i < job->offers.n; i++)
        for (size_t k = 0; k < job->spots.n; k++)
            if (strcmp(o[i].type, s[k].type) == 0 && strcmp(o[i].zone_id, s[k].zone_id) == 0)
                o[i].spot = s[k].price;
}

static void *run_region(void *arg)
{
    region_job *job = arg;
    job->rc = fetch_types_and_zones(job);
    if (!job->rc)
        job->rc = fetch_offerings_and_spot(job);
    if (!job->rc)
        join_spot_prices(job);
    return NULL;
}

/* ---- On-demand prices from the catalog ------------------------------------------------------ */

typedef struct od_price {
    char key[96]; /* "type|region" */
    double price;
} od_price;

static int collect_od(sp_offer_sink *sink, const sp_offer *o)
{
    vec *v = sink->opaque;
    if (o->price_on_demand < 0)
        return SP_OK;
    od_price *p = vec_push(v);
    if (!p)
        return SP_E_NOMEM;
    snprintf(p->key, sizeof(p->key), "%s|%s", o->instance_type, o->region);
    p->price = o->price_on_demand;
    return SP_OK;
}

static int ignore_note(sp_offer_sink *sink, const char *m)
{
    (void)sink;
    (void)m;
    return SP_OK;
}

static double od_lookup(const vec *v, const char *type, const char *region)
{
    char key[96];
    snprintf(key, sizeof(key), "%s|%s", type, region);
    const od_price *p = v->data;
    for (size_t i = 0; i < v->n; i++)
        if (strcmp(p[i].key, key) == 0)
            return p[i].price;
    return SP_PRICE_UNKNOWN;
}

static int emit_region(region_job *job, const vec *od, sp_offer_sink *sink)
{
    const live_offer *o = job->offers.data;
    for (size_t i = 0; i < job->offers.n; i++) {
        const type_info *t = o[i].info;
        sp_offer out = {.struct_size = sizeof(out), .region = job->region, .zone = o[i].zone_id,
                        .instance_type = t->type, .accelerator = t->accel,
                        .accel_count = t->count, .accel_mem_mib = t->accel_mem_mib,
                        .vcpus = t->vcpus, .mem_mib = t->mem_mib,
                        .price_on_demand = od_lookup(od, t->type, job->region),
                        .price_spot = o[i].spot, .arch = t->arch};
        int rc = sink->offer(sink, &out);
        if (rc)
            return rc;
    }
    return SP_OK;
}

static void free_job(region_job *job)
{
    free(job->types.data);
    free(job->zones.data);
    free(job->spots.data);
    free(job->offers.data);
}

static void init_job(region_job *job, aws_ctx *ctx, const char *region)
{
    memset(job, 0, sizeof(*job));
    job->ctx = ctx;
    job->region = region;
    job->types.size = sizeof(type_info);
    job->zones.size = sizeof(zone_map);
    job->spots.size = sizeof(spot_price);
    job->offers.size = sizeof(live_offer);
}

/* Emits every region's offers; a region that failed becomes a note, unless all failed. */
static int emit_all(region_job *jobs, size_t n, const vec *od, sp_offer_sink *sink, sp_err *err)
{
    size_t failed = 0;
    int first_rc = SP_OK, rc = SP_OK;
    for (size_t i = 0; i < n && !rc; i++) {
        if (jobs[i].rc) {
            if (!failed++) {
                first_rc = jobs[i].rc;
                *err = jobs[i].err;
            }
            rc = sink->note(sink, jobs[i].err.msg);
            continue;
        }
        rc = emit_region(&jobs[i], od, sink);
    }
    if (!rc && failed == n)
        return first_rc;
    return rc;
}

int aws_refresh_offers(void *vctx, const char *const *regions, size_t n_regions,
                       sp_offer_sink *sink, sp_err *err)
{
    aws_ctx *ctx = vctx;
    if (n_regions == 0 || n_regions > MAX_REGIONS)
        return sp_err_set(err, SP_E_INVALID, "aws: name 1 to %d regions to refresh", MAX_REGIONS);
    vec od = {.size = sizeof(od_price)};
    sp_offer_sink od_sink = {sizeof(od_sink), &od, collect_od, ignore_note};
    sp_offer_query all = {.struct_size = sizeof(all), .count_min = 1, .count_max = UINT32_MAX};
    sp_err od_err = {0};
    if (ctx->host->catalog_query(ctx->host, "aws", &all, &od_sink, &od_err) != SP_OK) {
        char note[SP_ERR_MSG_MAX + 64];
        snprintf(note, sizeof(note), "on-demand prices are unknown: %s", od_err.msg);
        sink->note(sink, note); /* EC2 does not say them; the catalog could not either */
    }
    region_job *jobs = calloc(n_regions, sizeof(*jobs));
    pthread_t threads[MAX_REGIONS];
    bool started[MAX_REGIONS] = {false};
    if (!jobs) {
        free(od.data);
        return sp_err_set(err, SP_E_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < n_regions; i++) {
        init_job(&jobs[i], ctx, regions[i]);
        started[i] = pthread_create(&threads[i], NULL, run_region, &jobs[i]) == 0;
        if (!started[i]) /* no thread to be had: do it here */
            run_region(&jobs[i]);
    }
    for (size_t i = 0; i < n_regions; i++)
        if (started[i])
            pthread_join(threads[i], NULL);
    int rc = emit_all(jobs, n_regions, &od, sink, err);
    for (size_t i = 0; i < n_regions; i++)
        free_job(&jobs[i]);
    free(jobs);
    free(od.data);
    return rc;
}
