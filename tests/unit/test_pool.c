/* Pool files: the examples, every field's forms, and the errors a user sees (file:line:column). */
#include <skypool/skypool.h>

#include "testutil.h"

#include <dirent.h>
#include <locale.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* Parses an inline document as "pool.yaml"; fails the test with the message if it is refused. */
static sp_pool *parse_ok(const char *yaml)
{
    sp_pool *pool = NULL;
    sp_err err = {0};
    int rc = sp_pool_parse(yaml, strlen(yaml), "pool.yaml", &pool, &err);
    if (rc != SP_OK)
        fail_msg("refused: %s\n--- input ---\n%s", err.msg, yaml);
    assert_non_null(pool);
    return pool;
}

static sp_pool *load_ok(const char *rel)
{
    sp_pool *pool = NULL;
    sp_err err = {0};
    int rc = sp_pool_load(tu_source_path(rel), &pool, &err);
    if (rc != SP_OK)
        fail_msg("%s refused: %s", rel, err.msg);
    return pool;
}

/* Whether the error starts with "<file>:<line>:<col>: " and contains what; prints it if not. */
static bool error_is(const sp_err *err, const char *file, unsigned line, unsigned col,
                     const char *what, const char *input)
{
    char where[SP_ERR_MSG_MAX];
    int n = snprintf(where, sizeof(where), "%s:%u:%u: ", file, line, col);
    if (n > 0 && (size_t)n < sizeof(where) && strncmp(err->msg, where, (size_t)n) == 0 &&
        strstr(err->msg, what))
        return true;
    print_error("expected \"%s...%s\"\n     got \"%s\"\n--- input ---\n%s\n-------------\n",
                where, what, err->msg, input);
    return false;
}

static bool refused_as(const char *yaml, unsigned line, unsigned col, const char *what)
{
    sp_pool *pool = (sp_pool *)1;
    sp_err err = {0};
    int rc = sp_pool_parse(yaml, strlen(yaml), "pool.yaml", &pool, &err);
    if (rc == SP_OK) {
        print_error("accepted, but should fail with \"%s\"\n--- input ---\n%s\n", what, yaml);
        sp_pool_free(pool);
        return false;
    }
    if (rc != SP_E_INVALID || err.code != SP_E_INVALID || pool != NULL) {
        print_error("status %d, err.code %d, pool %p for\n%s\n", rc, err.code, (void *)pool,
                    yaml);
        return false;
    }
    return error_is(&err, "pool.yaml", line, col, what, yaml);
}

static void parse_bad(const char *yaml, unsigned line, unsigned col, const char *what)
{
    if (!refused_as(yaml, line, col, what))
        fail();
}

#define HEAD "name: a\nresources:\n  accelerators: H100:8\n"

/* ---- The examples ------------------------------------------------------------------------ */

static void test_example_quickstart(void **state)
{
    (void)state;
    sp_pool *p = load_ok("examples/quickstart.yaml");
    assert_string_equal(p->name, "quickstart");
    assert_int_equal(p->nodes, 1);
    assert_int_equal(p->accelerators.kind, SP_SPEC_ONE);
    assert_int_equal(p->accelerators.n_terms, 1);
    assert_string_equal(p->accelerators.terms[0].models[0]->family, "H100");
    assert_int_equal(p->accelerators.terms[0].count_min, 8);
    assert_int_equal(p->spot, SP_SPOT_THEN_ON_DEMAND);
    assert_true(p->max_hourly_usd > 0);
    assert_int_equal(p->n_providers, 0);
    assert_int_equal(p->on_fail, SP_ON_FAIL_REPLACE);
    assert_non_null(strstr(p->path, "examples/quickstart.yaml"));
    sp_pool_free(p);
}

static void test_example_pool(void **state)
{
    (void)state;
    sp_pool *p = load_ok("examples/pool.yaml");
    assert_string_equal(p->name, "train-h100");
    assert_int_equal(p->nodes, 4);
    assert_int_equal(p->accelerators.kind, SP_SPEC_ORDERED);
    assert_int_equal(p->accelerators.n_terms, 2);
    assert_string_equal(p->accelerators.terms[0].models[0]->family, "H100");
    assert_int_equal(p->accelerators.terms[0].count_min, 8);
    assert_int_equal(p->accelerators.terms[1].n_models, 1);
    assert_string_equal(p->accelerators.terms[1].models[0]->key, "A100-80GB");
    assert_int_equal(p->accelerators.terms[1].count_min, 8);
    assert_int_equal(p->spot, SP_SPOT_THEN_ON_DEMAND);
    assert_true(p->max_hourly_usd == 200.0);
    assert_int_equal(p->n_providers, 2);
    assert_string_equal(p->providers[0], "aws");
    assert_string_equal(p->providers[1], "digitalocean");
    assert_int_equal(p->cuda_major, 12);
    assert_int_equal(p->cuda_minor, 4);
    assert_true(p->n_tags >= 2);
    assert_string_equal(p->tag_keys[0], "team");
    assert_string_equal(p->tag_values[0], "ml");
    sp_pool_free(p);
}

static void test_example_do_pool(void **state)
{
    (void)state;
    sp_pool *p = load_ok("examples/do-pool.yaml");
    assert_string_equal(p->name, "do-pool");
    assert_int_equal(p->accelerators.n_terms, 1);
    assert_string_equal(p->accelerators.terms[0].models[0]->family, "H100");
    assert_int_equal(p->accelerators.terms[0].count_min, 1);
    assert_int_equal(p->accelerators.terms[0].count_max, 1);
    assert_int_equal(p->n_providers, 1);
    assert_string_equal(p->providers[0], "digitalocean");
    sp_pool_free(p);
}

/* ---- Good inputs: each field's forms ----------------------------------------------------- */

static void test_defaults(void **state)
{
    (void)state;
    sp_pool *p = parse_ok(HEAD);
    assert_string_equal(p->path, "pool.yaml");
    assert_string_equal(p->name, "a");
    assert_int_equal(p->nodes, 1);
    assert_int_equal(p->spot, SP_SPOT_ON_DEMAND);
    assert_int_equal(p->on_fail, SP_ON_FAIL_REPLACE);
    assert_int_equal(p->cpus.value, 0);
    assert_int_equal(p->memory_gib.value, 0);
    assert_int_equal(p->disk_gib.value, 0);
    assert_int_equal(p->n_providers + p->n_regions + p->n_mig + p->n_tags, 0);
    assert_true(p->max_hourly_usd == 0.0);
    assert_null(p->image);
    assert_null(p->ssh_user);
    assert_null(p->ssh_key);
    assert_null(p->ssh_proxy);
    assert_int_equal(p->cuda_major, 0);
    sp_pool_free(p);
}

static void test_accelerators_forms(void **state)
{
    (void)state;
    static const struct {
        const char *value;
        sp_spec_kind kind;
        unsigned n_terms;
    } cases[] = {
        {"H100:8", SP_SPEC_ONE, 1},
        {"\"H100:8\"", SP_SPEC_ONE, 1},
        {"\"[H100:8, A100-80GB:8]\"", SP_SPEC_ORDERED, 2},
        {"\"{H100:8, H200:8, MI300X:8}\"", SP_SPEC_ANY_OF, 3},
        {"H100:8, A100:80GB:8", SP_SPEC_ORDERED, 2},
        {"[H100:8, A100-80GB:8]", SP_SPEC_ORDERED, 2},
        {"\n    - H100:8\n    - A100:80GB:8\n    - 24GB+:4", SP_SPEC_ORDERED, 3},
        {"[H100]", SP_SPEC_ORDERED, 1},
        {"{any_of: [H100:8, H200:8]}", SP_SPEC_ANY_OF, 2},
        {"\n    any_of:\n      - H100:8\n      - \"A100:80GB:8\"", SP_SPEC_ANY_OF, 2},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char yaml[256];
        snprintf(yaml, sizeof(yaml), "name: a\nresources:\n  accelerators: %s\n", cases[i].value);
        sp_pool *p = parse_ok(yaml);
        assert_int_equal(p->accelerators.kind, cases[i].kind);
        assert_int_equal(p->accelerators.n_terms, cases[i].n_terms);
        assert_true(p->accelerators.terms[0].n_models > 0);
        sp_pool_free(p);
    }
}

static void test_accelerators_values(void **state)
{
    (void)state;
    sp_pool *p = parse_ok("name: a\nresources:\n  accelerators:\n    - H100-SXM!:2..8\n"
                          "    - A100:80GB:4\n");
    const sp_spec_term *t = &p->accelerators.terms[0];
    assert_int_equal(t->n_models, 1);
    assert_string_equal(t->models[0]->key, "H100-SXM");
    assert_true(t->exact);
    assert_int_equal(t->count_min, 2);
    assert_int_equal(t->count_max, 8);
    t = &p->accelerators.terms[1];
    assert_int_equal(t->n_models, 1);
    assert_string_equal(t->models[0]->key, "A100-80GB");
    assert_int_equal(t->count_min, 4);
    sp_pool_free(p);
}

static void test_amounts(void **state)
{
    (void)state;
    static const struct {
        const char *key, *value;
        unsigned expect;
        bool at_least;
    } cases[] = {
        {"cpus", "32", 32, false},
        {"cpus", "32+", 32, true},
        {"cpus", "\"32\"", 32, false},
        {"cpus", "'8+'", 8, true},
        {"cpus", "1", 1, false},
        {"cpus", "9999", 9999, false},
        {"cpus", "9999+", 9999, true},
        {"cpus", "64.0", 64, false},
        {"cpus", "0x10", 16, false},
        {"memory", "256GB", 256, false},
        {"memory", "256GB+", 256, true},
        {"memory", "256GiB", 256, false},
        {"memory", "\"512GiB+\"", 512, true},
        {"memory", "1TB", 1024, false},
        {"memory", "2TiB+", 2048, true},
        {"memory", "999999TiB", 999999u * 1024u, false},
        {"disk", "500GB", 500, false},
        {"disk", "1GB+", 1, true},
        {"disk", "4TB", 4096, false},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char yaml[256];
        snprintf(yaml, sizeof(yaml), HEAD "  %s: %s\n", cases[i].key, cases[i].value);
        sp_pool *p = parse_ok(yaml);
        const sp_amount *a = strcmp(cases[i].key, "cpus") == 0     ? &p->cpus
                             : strcmp(cases[i].key, "memory") == 0 ? &p->memory_gib
                                                                   : &p->disk_gib;
        if (a->value != cases[i].expect || a->at_least != cases[i].at_least)
            fail_msg("%s: %s gave %u%s", cases[i].key, cases[i].value, a->value,
                     a->at_least ? "+" : "");
        sp_pool_free(p);
    }
}

static void test_min_cuda(void **state)
{
    (void)state;
    static const struct {
        const char *value;
        unsigned major, minor;
    } cases[] = {
        {"12.10", 12, 10}, {"\"12.10\"", 12, 10}, {"'12.10'", 12, 10}, {"12.1", 12, 1},
        {"12.4", 12, 4},   {"\"12.4\"", 12, 4},   {"12", 12, 0},       {"\"11\"", 11, 0},
        {"9.0", 9, 0},     {"12.01", 12, 1},      {"99.99", 99, 99},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char yaml[256];
        snprintf(yaml, sizeof(yaml), HEAD "check:\n  min_cuda: %s\n", cases[i].value);
        sp_pool *p = parse_ok(yaml);
        if (p->cuda_major != cases[i].major || p->cuda_minor != cases[i].minor)
            fail_msg("min_cuda: %s gave %u.%u", cases[i].value, p->cuda_major, p->cuda_minor);
        sp_pool_free(p);
    }
}

static void test_enums(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        sp_spot_policy spot;
        sp_on_fail on_fail;
    } cases[] = {
        {"spot: spot\ncheck: {on_fail: fail}\n", SP_SPOT_ONLY, SP_ON_FAIL_FAIL},
        {"spot: on-demand\ncheck: {on_fail: warn}\n", SP_SPOT_ON_DEMAND, SP_ON_FAIL_WARN},
        {"spot: \"spot-then-on-demand\"\ncheck: {on_fail: replace}\n", SP_SPOT_THEN_ON_DEMAND,
         SP_ON_FAIL_REPLACE},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char yaml[256];
        snprintf(yaml, sizeof(yaml), HEAD "%s", cases[i].text);
        sp_pool *p = parse_ok(yaml);
        assert_int_equal(p->spot, cases[i].spot);
        assert_int_equal(p->on_fail, cases[i].on_fail);
        sp_pool_free(p);
    }
}

static void test_lists_keep_order(void **state)
{
    (void)state;
    sp_pool *p = parse_ok(HEAD "providers:\n  - modal\n  - aws\n  - digitalocean\n"
                               "regions: [us-west-2, nyc2, us-east-1]\n");
    assert_int_equal(p->n_providers, 3);
    assert_string_equal(p->providers[0], "modal");
    assert_string_equal(p->providers[1], "aws");
    assert_string_equal(p->providers[2], "digitalocean");
    assert_int_equal(p->n_regions, 3);
    assert_string_equal(p->regions[0], "us-west-2");
    assert_string_equal(p->regions[1], "nyc2");
    assert_string_equal(p->regions[2], "us-east-1");
    sp_pool_free(p);
}

static void test_strings(void **state)
{
    (void)state;
    sp_pool *p = parse_ok("name: x-1\nnodes: 1024\nresources: {accelerators: H100}\n"
                          "image: \"166407044\"\nmax_hourly_usd: 12.5\n"
                          "ssh:\n  user: ec2-user\n  key: ~/.ssh/id_ed25519\n"
                          "  proxy: \"ssh -W %h:%p bastion\"\n");
    assert_string_equal(p->name, "x-1");
    assert_int_equal(p->nodes, 1024);
    assert_string_equal(p->image, "166407044");
    assert_true(p->max_hourly_usd == 12.5);
    assert_string_equal(p->ssh_user, "ec2-user");
    assert_string_equal(p->ssh_key, "~/.ssh/id_ed25519");
    assert_string_equal(p->ssh_proxy, "ssh -W %h:%p bastion");
    sp_pool_free(p);
}

static void test_tags(void **state)
{
    (void)state;
    sp_pool *p = parse_ok(HEAD "tags:\n  team: ml\n  \"kubernetes.io/cluster:x=y+z@w_-\": \"\"\n"
                               "  owner: Zoë\n  \"42\": \"7\"\n");
    assert_int_equal(p->n_tags, 4);
    assert_string_equal(p->tag_keys[0], "team");
    assert_string_equal(p->tag_values[0], "ml");
    assert_string_equal(p->tag_keys[1], "kubernetes.io/cluster:x=y+z@w_-");
    assert_string_equal(p->tag_values[1], "");
    assert_string_equal(p->tag_values[2], "Zoë");
    assert_string_equal(p->tag_keys[3], "42");
    sp_pool_free(p);
    p = parse_ok(HEAD "tags: {}\n");
    assert_int_equal(p->n_tags, 0);
    sp_pool_free(p);
}

static void test_mig(void **state)
{
    (void)state;
    sp_pool *p = parse_ok(HEAD "check:\n  mig: 3g.40gb\n");
    assert_int_equal(p->n_mig, 1);
    assert_string_equal(p->mig[0], "3g.40gb");
    sp_pool_free(p);
    p = parse_ok(HEAD "check:\n  mig: [4g.40gb, 2g.20gb, 1g.10gb]\n");
    assert_int_equal(p->n_mig, 3);
    assert_string_equal(p->mig[1], "2g.20gb");
    sp_pool_free(p);
    /* The accelerators may come after check; a profile of one candidate (the H200) is enough. */
    p = parse_ok("name: a\ncheck: {mig: 3g.71gb}\nresources:\n  accelerators: [H100:8, H200:8]\n");
    assert_int_equal(p->n_mig, 1);
    sp_pool_free(p);
    /* A memory-only term has MIG-capable candidates among others. */
    p = parse_ok("name: a\nresources: {accelerators: 40GB+}\ncheck: {mig: 7g.40gb}\n");
    sp_pool_free(p);
}

static void test_json_is_yaml(void **state)
{
    (void)state;
    sp_pool *p = parse_ok("{\"name\": \"j\", \"nodes\": 2, \"resources\": {\"accelerators\": "
                          "[\"H100:8\"], \"cpus\": 8}, \"max_hourly_usd\": 1e2}");
    assert_string_equal(p->name, "j");
    assert_int_equal(p->nodes, 2);
    assert_int_equal(p->cpus.value, 8);
    assert_true(p->max_hourly_usd == 100.0);
    sp_pool_free(p);
}

/* Numbers are read the same whatever LC_NUMERIC the program runs with. */
static void test_locale_independent(void **state)
{
    (void)state;
    const char *names[] = {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8"};
    const char *set = NULL;
    for (size_t i = 0; i < 4 && !set; i++)
        set = setlocale(LC_NUMERIC, names[i]);
    if (!set)
        fail_msg("no de_DE or fr_FR locale to test with; scripts/setup-debian.sh makes de_DE.UTF-8");
    sp_pool *p = parse_ok(HEAD "max_hourly_usd: 99.5\n");
    setlocale(LC_NUMERIC, "C");
    assert_true(p->max_hourly_usd == 99.5);
    sp_pool_free(p);
}

/* ---- Bad inputs: where, and what ---------------------------------------------------------- */

typedef struct bad_case {
    const char *yaml;
    unsigned line, col;
    const char *what;
} bad_case;

static const bad_case bad_cases[] = {
    /* The file as a whole. */
    {"", 1, 1, "the file is empty"},
    {"# nothing but a comment\n\n", 1, 1, "the file is empty"},
    {"---\n", 2, 1, "the document is empty"},
    {"~\n", 1, 1, "the document is empty"},
    {"- a\n- b\n", 1, 1, "expected a mapping of keys, found a list"},
    {"just text\n", 1, 1, "expected a mapping of keys, found a string"},
    {HEAD "---\nname: b\n", 4, 1, "a second YAML document"},
    {"name: a\n  bad: indent\n", 2, 6, "YAML syntax error: mapping values are not allowed"},
    {"name: [a\n", 2, 1, "YAML syntax error: did not find expected ',' or ']'"},
    {"name: \"a\n", 2, 1, "YAML syntax error: found unexpected end of stream"},
    {"name: a\tb: c\n", 1, 10, "YAML syntax error"},
    {"name: \x01x\n", 1, 7, "not valid YAML text: control characters are not allowed"},
    {"name: a\nimage: \"\xff\"\n", 2, 9, "not valid YAML text: invalid leading UTF-8 octet"},
    {"name: &a x\n", 1, 7, "YAML anchors (&a) are not supported; write the value out in full"},
    {"name: a\nnodes: *n\n", 2, 8, "YAML aliases (*n) are not supported"},
    {"tags: &t {a: b}\n", 1, 7, "YAML anchors (&t)"},
    {"name: !!str a\n", 1, 7, "YAML tags (!!str) are not supported"},
    {"name: !custom a\n", 1, 7, "YAML tags (!custom)"},
    {"? [a, b]\n: c\n", 1, 3, "a key must be a name, not a list"},
    /* Keys. */
    {"name: a\nnodez: 3\n", 2, 1, "unknown key 'nodez'; did you mean nodes?"},
    {"name: a\nflavour: x\n", 2, 1, "unknown key 'flavour'; the keys here are name, nodes"},
    {HEAD "  cpu: 8\n", 4, 3, "resources: unknown key 'cpu'; did you mean cpus?"},
    {HEAD "ssh:\n  usr: root\n", 5, 3, "ssh: unknown key 'usr'; did you mean user?"},
    {HEAD "check:\n  min-cuda: 12\n", 5, 3,
     "check: unknown key 'min-cuda'; did you mean min_cuda?"},
    {HEAD "name: b\n", 4, 1, "duplicate key 'name' (first at 1:1); keep one"},
    {HEAD "  accelerators: H100:1\n", 4, 3,
     "resources: duplicate key 'accelerators' (first at 3:3)"},
    {"resources:\n  accelerators: H100\n", 1, 1,
     "name: required key is missing; add it, like 'name: "},
    {"name: a\n", 1, 1, "resources: required key is missing"},
    {"name: a\nresources:\n  cpus: 8\n", 3, 3, "resources.accelerators: required key is missing"},
    {"name: a\nresources: {}\n", 2, 12, "resources.accelerators: required key is missing"},
    /* name */
    {"name: Train\n", 1, 7, "name: 'Train' is not a valid pool name"},
    {"name: 1a\n", 1, 7, "name: '1a' is not a valid pool name"},
    {"name: a_b\n", 1, 7, "name: 'a_b' is not a valid pool name"},
    {"name: 12\n", 1, 7, "name: expected a string, found a number; quote it"},
    {"name:\n", 1, 6, "name: expected a string, found an empty value"},
    {"name: [a]\n", 1, 7, "name: expected a string, found a list"},
    {"name: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n", 1, 7,
     "is not a valid pool name; use up to 63"},
    /* nodes */
    {HEAD "nodes: 0\n", 4, 8, "nodes: 0 is out of range; use 1 to 1024"},
    {HEAD "nodes: 1025\n", 4, 8, "nodes: 1025 is out of range"},
    {HEAD "nodes: -1\n", 4, 8, "nodes: -1 is out of range"},
    {HEAD "nodes: 2.5\n", 4, 8, "nodes: 2.5 is not a whole number"},
    {HEAD "nodes: .inf\n", 4, 8, "nodes: .inf is not a whole number"},
    {HEAD "nodes: \"4\"\n", 4, 8, "nodes: expected a whole number, found a string"},
    {HEAD "nodes: four\n", 4, 8, "nodes: expected a whole number, found a string"},
    {HEAD "nodes: true\n", 4, 8, "nodes: expected a whole number, found a boolean"},
    {HEAD "nodes: 99999999999999999999999\n", 4, 8, "is out of range"},
    /* resources */
    {"name: a\nresources: H100:8\n", 2, 12, "resources: expected a mapping, found a string"},
    {"name: a\nresources:\n  accelerators: H10:8\n", 3, 17,
     "resources.accelerators: unknown accelerator 'H10'; did you mean H100?"},
    {"name: a\nresources:\n  accelerators:\n    - H100:8\n    - H10:8\n", 5, 7,
     "resources.accelerators[1]: unknown accelerator 'H10'; did you mean H100?"},
    {"name: a\nresources:\n  accelerators: \"[H100:8, H10:8]\"\n", 3, 27,
     "resources.accelerators: unknown accelerator 'H10'"},
    {"name: a\nresources:\n  accelerators: [H100:8, H10:8]\n", 3, 26,
     "resources.accelerators[1]: unknown accelerator 'H10'"},
    {"name: a\nresources:\n  accelerators: {any_of: [H100:8, H10:8]}\n", 3, 35,
     "resources.accelerators.any_of[1]: unknown accelerator 'H10'"},
    {"name: a\nresources:\n  accelerators: H100:8:9\n", 3, 24, "count given twice"},
    {"name: a\nresources:\n  accelerators: H100:0\n", 3, 22, "count must be 1 to 1024"},
    {"name: a\nresources:\n  accelerators: \"\"\n", 3, 17, "empty accelerator spec"},
    {"name: a\nresources:\n  accelerators: \"H100:8, \"\n", 3, 25, "empty entry in the list"},
    {"name: a\nresources:\n  accelerators: |\n    H100:\n    8\n", 3, 17,
     "resources.accelerators: contains a control character (a tab or a line break); write"},
    {"name: a\nresources:\n  accelerators: [\"H100:8\\t\"]\n", 3, 18,
     "resources.accelerators[0]: contains a control character"},
    {"name: a\nresources:\n  accelerators: []\n", 3, 17,
     "resources.accelerators: is an empty list"},
    {"name: a\nresources:\n  accelerators: [H100, 8]\n", 3, 24,
     "resources.accelerators[1]: expected a string, found a number"},
    {"name: a\nresources:\n  accelerators: [\"[H100, A100]\"]\n", 3, 19,
     "resources.accelerators[0]: one accelerator here"},
    {"name: a\nresources:\n  accelerators: {H100:8, A100:8}\n", 3, 18,
     "'H100:8' reads as a YAML key; for a set of alternatives write {any_of:"},
    {"name: a\nresources:\n  accelerators: {anyof: [H100]}\n", 3, 18,
     "resources.accelerators: unknown key 'anyof'; did you mean any_of?"},
    {"name: a\nresources:\n  accelerators: {any_of: H100}\n", 3, 26,
     "resources.accelerators.any_of: expected a list, found a string"},
    {"name: a\nresources:\n  accelerators: {any_of: []}\n", 3, 26, "is an empty list"},
    {"name: a\nresources:\n  accelerators: [H100, H100, H100, H100, H100, H100, H100, H100, "
     "H100, H100, H100, H100, H100, H100, H100, H100, H100]\n",
     3, 114, "more than 16 accelerators"},
    {HEAD "  cpus: 0\n", 4, 9, "resources.cpus: 0 is out of range; use 1 to 9999"},
    {HEAD "  cpus: 10000\n", 4, 9, "resources.cpus: 10000 is out of range"},
    {HEAD "  cpus: 0+\n", 4, 9, "resources.cpus: '0+' is not a CPU count"},
    {HEAD "  cpus: 10000+\n", 4, 9, "'10000+' is not a CPU count"},
    {HEAD "  cpus: 32++\n", 4, 9, "'32++' is not a CPU count"},
    {HEAD "  cpus: \"+32\"\n", 4, 9, "'+32' is not a CPU count"},
    {HEAD "  cpus: 4.5\n", 4, 9, "resources.cpus: 4.5 is not a whole number"},
    {HEAD "  cpus: [8]\n", 4, 9, "resources.cpus: expected a string, found a list"},
    {HEAD "  memory: 256\n", 4, 11, "resources.memory: 256 has no unit; write it like 'memory:"},
    {HEAD "  memory: 256gb\n", 4, 11, "resources.memory: '256gb' is not a size"},
    {HEAD "  memory: 256 GB\n", 4, 11, "'256 GB' is not a size"},
    {HEAD "  memory: 0GB\n", 4, 11, "'0GB' is not a size"},
    {HEAD "  memory: 256MB\n", 4, 11, "'256MB' is not a size"},
    {HEAD "  memory: 1000000GB\n", 4, 11, "'1000000GB' is not a size"},
    {HEAD "  memory: 256GB+x\n", 4, 11, "'256GB+x' is not a size"},
    {HEAD "  disk: 1.5TB\n", 4, 9, "resources.disk: '1.5TB' is not a size"},
    {HEAD "  disk: true\n", 4, 9, "resources.disk: expected a string, found a boolean"},
    /* spot */
    {HEAD "spot: spto\n", 4, 7, "spot: unknown spot policy 'spto'; did you mean spot?"},
    {HEAD "spot: preemptible\n", 4, 7,
     "unknown spot policy 'preemptible'; use one of on-demand, spot, spot-then-on-demand"},
    {HEAD "spot: true\n", 4, 7, "spot: expected a string, found a boolean"},
    /* providers and regions */
    {HEAD "providers: [aws, awz]\n", 4, 18,
     "providers[1]: unknown provider 'awz'; did you mean aws?"},
    {HEAD "providers: [gcp]\n", 4, 13,
     "unknown provider 'gcp'; use one of aws, digitalocean, modal"},
    {HEAD "providers: [aws, modal, aws]\n", 4, 25,
     "providers[2]: 'aws' is listed twice (first at 4:13); list it once"},
    {HEAD "providers: aws\n", 4, 12, "providers: expected a list, found a string"},
    {HEAD "providers: []\n", 4, 12, "providers: is an empty list"},
    {HEAD "providers: [[aws]]\n", 4, 13, "providers[0]: expected a string, found a list"},
    {HEAD "regions: [us-east-1, US-WEST-2]\n", 4, 22, "regions[1]: 'US-WEST-2' is not a region"},
    {HEAD "regions: [nyc2, nyc2]\n", 4, 17, "regions[1]: 'nyc2' is listed twice"},
    {HEAD "regions: [2]\n", 4, 11, "regions[0]: expected a string, found a number"},
    /* max_hourly_usd */
    {HEAD "max_hourly_usd: 0\n", 4, 17, "max_hourly_usd: 0 is not a budget"},
    {HEAD "max_hourly_usd: -1.5\n", 4, 17, "max_hourly_usd: -1.5 is not a budget"},
    {HEAD "max_hourly_usd: .nan\n", 4, 17, "max_hourly_usd: .nan is not a budget"},
    {HEAD "max_hourly_usd: \"200\"\n", 4, 17,
     "max_hourly_usd: expected a number of US dollars, found a string"},
    {HEAD "max_hourly_usd: 200 USD\n", 4, 17, "found a string"},
    /* image, ssh */
    {HEAD "image: 166407044\n", 4, 8,
     "image: expected a string, found a number; quote it: \"166407044\""},
    {HEAD "image: \"\"\n", 4, 8, "image: is empty; give a value or remove the key"},
    {HEAD "image: \"a\\tb\"\n", 4, 8, "image: contains a control character"},
    {HEAD "image: \"a\\0b\"\n", 4, 8, "image: contains a NUL character"},
    {HEAD "ssh: root\n", 4, 6, "ssh: expected a mapping, found a string"},
    {HEAD "ssh:\n", 4, 5, "ssh: expected a mapping, found an empty value"},
    {HEAD "ssh:\n  user: \"root user\"\n", 5, 9, "ssh.user: 'root user' is not a user name"},
    {HEAD "ssh:\n  user: 1000\n", 5, 9, "ssh.user: expected a string, found a number"},
    {HEAD "ssh:\n  proxy: |\n    ssh -W %h:%p a\n    b\n", 5, 10, "ssh.proxy: contains a control"},
    {HEAD "ssh:\n  key:\n", 5, 7, "ssh.key: expected a string, found an empty value"},
    /* check */
    {HEAD "check: replace\n", 4, 8, "check: expected a mapping, found a string"},
    {HEAD "check:\n  min_cuda: 12.x\n", 5, 13, "check.min_cuda: '12.x' is not a CUDA version"},
    {HEAD "check:\n  min_cuda: 12.100\n", 5, 13, "'12.100' is not a CUDA version"},
    {HEAD "check:\n  min_cuda: \"v12\"\n", 5, 13, "'v12' is not a CUDA version"},
    {HEAD "check:\n  min_cuda: 0.9\n", 5, 13, "'0.9' is not a CUDA version"},
    {HEAD "check:\n  min_cuda: 100\n", 5, 13, "'100' is not a CUDA version"},
    {HEAD "check:\n  min_cuda: true\n", 5, 13,
     "check.min_cuda: expected a version, found a boolean"},
    {HEAD "check:\n  on_fail: reboot\n", 5, 12,
     "check.on_fail: unknown on_fail action 'reboot'; use one of replace, fail, warn"},
    {HEAD "check:\n  on_fail: replcae\n", 5, 12, "did you mean replace?"},
    {HEAD "check:\n  mig: 3g.40g\n", 5, 8,
     "check.mig: unknown MIG profile '3g.40g' for NVIDIA H100 80GB SXM5; did you mean 3g.40gb?"},
    {HEAD "check:\n  mig: [4g.40gb, 3g.4gb]\n", 5, 18,
     "check.mig[1]: unknown MIG profile '3g.4gb'"},
    {HEAD "check:\n  mig: [4g.40gb, 4g.40gb]\n", 5, 8,
     "check.mig: MIG layout 4g.40gb + 4g.40gb does not fit on one"},
    {HEAD "check:\n  mig: [1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, "
          "1g.10gb]\n",
     5, 72, "check.mig: more than 7 entries"},
    {HEAD "check:\n  mig: []\n", 5, 8, "check.mig: is an empty list"},
    {HEAD "check:\n  mig: 7\n", 5, 8, "check.mig: expected a string, found a number"},
    {"name: a\nresources:\n  accelerators: L4:1\ncheck:\n  mig: 3g.40gb\n", 5, 8,
     "check.mig: NVIDIA L4 does not support MIG; MIG needs A100, H100, H200 or B200"},
    {"name: a\nresources:\n  accelerators: \"{L4, T4, MI300X}\"\ncheck:\n  mig: 1g.5gb\n", 5, 8,
     "check.mig: none of NVIDIA L4, NVIDIA T4, AMD MI300X supports MIG; MIG needs A100"},
    {"name: a\ncheck:\n  mig: 3g.40gb\nresources:\n  accelerators: H200:8\n", 3, 8,
     "check.mig: unknown MIG profile '3g.40gb' for NVIDIA H200 141GB SXM5; did you mean 3g.71gb?"},
    /* tags */
    {HEAD "tags: [a, b]\n", 4, 7, "tags: expected a mapping, found a list"},
    {HEAD "tags:\n  cost center: x\n", 5, 3, "tags: 'cost center' is not a tag key"},
    {HEAD "tags:\n  \"\": x\n", 5, 3, "tags: '' is not a tag key"},
    {HEAD "tags:\n  [a]: x\n", 5, 3, "tags: 'a list' is not a tag key"},
    {HEAD "tags:\n  team: 42\n", 5, 9,
     "tags.team: expected a string, found a number; quote it: \"42\""},
    {HEAD "tags:\n  team:\n", 5, 8, "tags.team: expected a string, found an empty value"},
    {HEAD "tags:\n  team: ml\n  team: infra\n", 6, 3, "tags: duplicate key 'team' (first at 5:3)"},
    {HEAD "tags:\n  a: \"x\\ny\"\n", 5, 6, "tags.a: contains a control character"},
};

static void test_bad_inputs(void **state)
{
    (void)state;
    size_t failed = 0, n = sizeof(bad_cases) / sizeof(bad_cases[0]);
    for (size_t i = 0; i < n; i++)
        failed += !refused_as(bad_cases[i].yaml, bad_cases[i].line, bad_cases[i].col,
                              bad_cases[i].what);
    if (failed)
        fail_msg("%zu of %zu bad inputs were not refused as expected", failed, n);
}

/* Long values appear in messages cut short, and never overflow them. */
static void test_long_values(void **state)
{
    (void)state;
    size_t n = 300;
    char *yaml = malloc(64 + 2 * n);
    assert_non_null(yaml);
    int len = snprintf(yaml, 64, "name: a\nresources: {accelerators: H100}\ntags:\n  t: ");
    memset(yaml + len, 'x', 257);
    strcpy(yaml + len + 257, "\n");
    parse_bad(yaml, 4, 6, "tags.t: is longer than 256 characters");
    len = snprintf(yaml, 64, "name: a\nresources: {accelerators: H100}\n");
    memset(yaml + len, 'k', n);
    strcpy(yaml + len + n, ": 1\n");
    parse_bad(yaml, 3, 1, "unknown key 'kkkk");
    len = snprintf(yaml, 64, "name: a\nresources: {accelerators: H100}\ntags:\n  ");
    memset(yaml + len, 'k', 129);
    strcpy(yaml + len + 129, ": v\n");
    parse_bad(yaml, 4, 3, "is not a tag key");
    free(yaml);
}

static void test_too_many_tags(void **state)
{
    (void)state;
    char yaml[2048];
    int len = snprintf(yaml, sizeof(yaml), HEAD "tags:\n");
    for (int i = 0; i < 33; i++)
        len += snprintf(yaml + len, sizeof(yaml) - (size_t)len, "  t%d: v\n", i);
    parse_bad(yaml, 4 + 1 + 32, 3, "tags: more than 32 tags; keep at most 32");
    /* 32 is fine. */
    yaml[strlen(yaml) - strlen("  t32: v\n")] = '\0';
    sp_pool *p = parse_ok(yaml);
    assert_int_equal(p->n_tags, 32);
    sp_pool_free(p);
}

/* ---- Limits: the reader is fed untrusted files --------------------------------------------- */

static void test_too_large(void **state)
{
    (void)state;
    size_t n = 1024 * 1024 + 1;
    char *buf = malloc(n);
    assert_non_null(buf);
    memset(buf, '#', n);
    sp_pool *pool = NULL;
    sp_err err = {0};
    assert_int_equal(sp_pool_parse(buf, n, "big.yaml", &pool, &err), SP_E_INVALID);
    assert_null(pool);
    assert_non_null(strstr(err.msg, "big.yaml: the file is larger than 1 MiB"));
    free(buf);
}

static void test_deep_nesting(void **state)
{
    (void)state;
    char yaml[4096];
    int len = snprintf(yaml, sizeof(yaml), "name: a\ntags: ");
    for (int i = 0; i < 1000; i++)
        yaml[len++] = '[';
    yaml[len] = '\0';
    parse_bad(yaml, 2, 7 + 31, "nested more than 32 levels deep");
}

/* The billion laughs: refused at the first anchor, long before anything expands. */
static void test_billion_laughs(void **state)
{
    (void)state;
    parse_bad("name: a\nresources: {accelerators: H100}\ntags:\n"
              "  a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
              "  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
              "  c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n",
              4, 6, "YAML anchors (&a) are not supported");
}

/* The buffer need not be NUL-terminated: only len bytes are read. */
static void test_length_bounded(void **state)
{
    (void)state;
    const char *text = HEAD "nodes: 4\nthis is not: read";
    size_t len = strlen(HEAD "nodes: 4\n");
    char *copy = malloc(len);
    assert_non_null(copy);
    memcpy(copy, text, len);
    sp_pool *pool = NULL;
    sp_err err = {0};
    assert_int_equal(sp_pool_parse(copy, len, NULL, &pool, &err), SP_OK);
    assert_int_equal(pool->nodes, 4);
    assert_string_equal(pool->path, "<input>");
    sp_pool_free(pool);
    free(copy);
}

static void test_api_misuse(void **state)
{
    (void)state;
    sp_pool *pool = (sp_pool *)1;
    sp_err err = {0};
    assert_int_equal(sp_pool_parse(NULL, 0, "x", &pool, &err), SP_E_INVALID);
    assert_null(pool);
    assert_int_equal(sp_pool_parse("name: a", 7, "x", NULL, &err), SP_E_INVALID);
    assert_int_equal(sp_pool_load(NULL, &pool, &err), SP_E_INVALID);
    /* A NULL err is allowed: the status alone tells. */
    assert_int_equal(sp_pool_parse("name: A", 7, "x", &pool, NULL), SP_E_INVALID);
    assert_null(pool);
    sp_pool_free(NULL);
}

static void test_load_errors(void **state)
{
    (void)state;
    sp_pool *pool = (sp_pool *)1;
    sp_err err = {0};
    assert_int_equal(sp_pool_load("/nonexistent/pool.yaml", &pool, &err), SP_E_IO);
    assert_null(pool);
    assert_non_null(strstr(err.msg, "/nonexistent/pool.yaml: cannot open the pool file"));
    assert_int_equal(sp_pool_load(tu_source_path("examples"), &pool, &err), SP_E_IO);
    assert_non_null(strstr(err.msg, "is a directory"));
    assert_null(pool);
}

/* ---- Fixtures: tests/fixtures/pools, shared with the schema test (tests/schema) ------------ */

/* "# error: 7:7: what" on the first line of a bad fixture. */
static void check_bad_fixture(const char *path, const char *text)
{
    unsigned line, col;
    int used = 0;
    if (sscanf(text, "# error: %u:%u: %n", &line, &col, &used) != 2 || used == 0)
        fail_msg("%s: the first line must be '# error: LINE:COL: message'", path);
    const char *nl = strchr(text + used, '\n');
    char what[512];
    size_t n = nl ? (size_t)(nl - (text + used)) : strlen(text + used);
    assert_true(n < sizeof(what));
    memcpy(what, text + used, n);
    what[n] = '\0';
    sp_pool *pool = NULL;
    sp_err err = {0};
    if (sp_pool_load(path, &pool, &err) == SP_OK)
        fail_msg("%s: accepted, but should fail with \"%s\"", path, what);
    assert_null(pool);
    if (!error_is(&err, path, line, col, what, text))
        fail();
}

static void check_fixture(const char *dir, const char *name, unsigned *good, unsigned *bad)
{
    char path[4096];
    int n = snprintf(path, sizeof(path), "%s/%s", dir, name);
    assert_true(n > 0 && (size_t)n < sizeof(path));
    char *text = tu_read_file(path, NULL);
    assert_non_null(text);
    if (strncmp(name, "good-", 5) == 0) {
        sp_pool *pool = NULL;
        sp_err err = {0};
        if (sp_pool_load(path, &pool, &err) != SP_OK)
            fail_msg("%s refused: %s", path, err.msg);
        sp_pool_free(pool);
        (*good)++;
    } else if (strncmp(name, "bad-", 4) == 0) {
        check_bad_fixture(path, text);
        (*bad)++;
    } else
        fail_msg("%s: fixtures are named good-*.yaml or bad-*.yaml", path);
    free(text);
}

static void test_fixtures(void **state)
{
    (void)state;
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s", tu_source_path("tests/fixtures/pools"));
    DIR *d = opendir(dir);
    assert_non_null(d);
    unsigned good = 0, bad = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n > 5 && strcmp(e->d_name + n - 5, ".yaml") == 0)
            check_fixture(dir, e->d_name, &good, &bad);
    }
    closedir(d);
    assert_true(good >= 5);
    assert_true(bad >= 40);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_example_quickstart),
        cmocka_unit_test(test_example_pool),
        cmocka_unit_test(test_example_do_pool),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_accelerators_forms),
        cmocka_unit_test(test_accelerators_values),
        cmocka_unit_test(test_amounts),
        cmocka_unit_test(test_min_cuda),
        cmocka_unit_test(test_enums),
        cmocka_unit_test(test_lists_keep_order),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_tags),
        cmocka_unit_test(test_mig),
        cmocka_unit_test(test_json_is_yaml),
        cmocka_unit_test(test_locale_independent),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_long_values),
        cmocka_unit_test(test_too_many_tags),
        cmocka_unit_test(test_too_large),
        cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_billion_laughs),
        cmocka_unit_test(test_length_bounded),
        cmocka_unit_test(test_api_misuse),
        cmocka_unit_test(test_load_errors),
        cmocka_unit_test(test_fixtures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
