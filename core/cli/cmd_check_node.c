/* skypool check-node [--expect SPEC]: the node check, on this machine (a node of your own). */
#include "cli.h"

#include "bootstrap.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

typedef struct check_args {
    const char *expect, *mig, *min_cuda;
    bool json, no_tests;
} check_args;

static int parse_args(int argc, char **argv, check_args *a)
{
    static const struct option opts[] = {{"expect", required_argument, NULL, 'e'},
                                         {"mig", required_argument, NULL, 'm'},
                                         {"min-cuda", required_argument, NULL, 'c'},
                                         {"no-tests", no_argument, NULL, 'T'},
                                         {"json", no_argument, NULL, 'j'},
                                         {NULL, 0, NULL, 0}};
    int ch;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        if (ch == 'e')
            a->expect = optarg;
        else if (ch == 'm')
            a->mig = optarg;
        else if (ch == 'c')
            a->min_cuda = optarg;
        else if (ch == 'T')
            a->no_tests = true;
        else if (ch == 'j')
            a->json = true;
        else
            return cli_fail(EXIT_USAGE, "see skypool check-node --help");
    }
    if (optind != argc)
        return cli_fail(EXIT_USAGE, "check-node takes no operands; see skypool check-node --help");
    return EXIT_OK;
}

/* "3g.40gb" or "3g.40gb,2g.20gb,..." for the one MIG-capable model of the spec. */
static int expect_mig(const char *list, sp_check_expect *e)
{
    const sp_accel_model *m = e->n_models == 1 ? sp_accel_by_key(e->models[0]) : NULL;
    if (!m || !m->mig)
        return cli_fail(EXIT_INVALID, "--mig needs --expect naming one MIG-capable GPU model "
                                      "(A100-40GB, A100-80GB, H100-SXM, H100-PCIe, H100-NVL, "
                                      "H200, B200)");
    char copy[512], *names[SP_MIG_MAX_INSTANCES + 1];
    size_t n = 0;
    snprintf(copy, sizeof(copy), "%s", list);
    for (char *save = NULL, *t = strtok_r(copy, ",", &save); t && n <= SP_MIG_MAX_INSTANCES;
         t = strtok_r(NULL, ",", &save))
        names[n++] = t;
    sp_mig_layout layout;
    sp_err err = {0};
    if (sp_mig_layout_parse(m->key, (const char *const *)names, n, &layout, &err) != SP_OK)
        return cli_fail(EXIT_INVALID, "--mig %s: %s", list, err.msg);
    size_t at = 0;
    for (unsigned i = 0; i < layout.n && at < sizeof(e->mig); i++)
        at += (size_t)snprintf(e->mig + at, sizeof(e->mig) - at, "%s%s", i ? "," : "",
                               layout.profiles[i]->name);
    return EXIT_OK;
}

static int expectation(const check_args *a, sp_check_expect *e)
{
    memset(e, 0, sizeof(*e));
    if (a->expect) {
        sp_spec_term term;
        sp_err err = {0};
        if (sp_spec_term_parse(a->expect, &term, &err) != SP_OK)
            return cli_fail(EXIT_INVALID, "--expect %s: %s", a->expect, err.msg);
        sp_check_expect_of_term(&term, e);
    }
    if (a->min_cuda) {
        char *end;
        unsigned long major = strtoul(a->min_cuda, &end, 10), minor = 0;
        if (*end == '.')
            minor = strtoul(end + 1, &end, 10);
        if (*end || !major || major > 99 || minor > 99)
            return cli_fail(EXIT_INVALID, "--min-cuda %s: give a CUDA version such as 12.4",
                            a->min_cuda);
        e->cuda_major = (unsigned)major;
        e->cuda_minor = (unsigned)minor;
    }
    e->no_tests = a->no_tests;
    return a->mig ? expect_mig(a->mig, e) : EXIT_OK;
}

static int run(const check_args *a)
{
    sp_check_expect e;
    int rc = expectation(a, &e);
    if (rc)
        return rc;
    sp_check_result r;
    sp_err err = {0};
    if (sp_check_local(&e, &r, &err) != SP_OK)
        return cli_fail(cli_exit_code(err.code), "%s", err.msg);
    if (a->json)
        printf("%s\n", r.report ? r.report : "{}");
    else
        printf("%s: %s\n", r.verdict, r.summary);
    rc = sp_check_verdict_passes(r.verdict) ? EXIT_OK : EXIT_CHECK;
    sp_check_result_free(&r);
    return rc;
}

static int check_node_exec(int argc, char **argv)
{
    check_args a = {0};
    int rc = parse_args(argc, argv, &a);
    return rc ? rc : run(&a);
}

const sp_cmd cmd_check_node = {
    "check-node",
    "check this machine's GPUs, driver and CUDA version against a spec",
    "[--expect SPEC] [--min-cuda X.Y] [--mig PROFILES] [--no-tests] [--json]\n"
    "\n"
    "Runs skypool-nodecheck here, the check `skypool up` runs on every node it launches: the\n"
    "GPUs' model, count, memory and form factor as the driver reports them, the driver's\n"
    "highest CUDA version, the MIG layout, an arithmetic kernel and a memory pattern test, and\n"
    "device-to-device and host-to-device bandwidth. It needs only the NVIDIA driver.\n"
    "\n"
    "  --expect SPEC     what the machine must have, e.g. H100-SXM:8, A100:80GB:4, L4\n"
    "  --min-cuda X.Y    the CUDA version your code needs from the driver\n"
    "  --mig PROFILES    the MIG layout every GPU must carry (e.g. 3g.40gb, or a list)\n"
    "  --no-tests        skip the kernel, memory and bandwidth tests\n"
    "  --json            the check program's whole report\n"
    "\n"
    "The program is found in skypool's libexec directory, or at $SKYPOOL_NODECHECK.\n"
    "exit codes: 0 the machine matches, 8 it does not (the verdict says why: no_driver,\n"
    "no_device, driver_too_old, hardware_mismatch, mig_mismatch, test_failed), 1 the check\n"
    "could not run, 2 bad command line, 3 invalid spec\n",
    check_node_exec,
};
