/* skypool up POOL.yaml: launch the pool's nodes, with failover, within budget. */
#include "cli.h"

#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

typedef struct up_args {
    const char *path;
    bool yes, json, no_bootstrap, no_quota;
    unsigned parallel, wait_s;
} up_args;

static int parse_args(int argc, char **argv, up_args *a)
{
    static const struct option opts[] = {
        {"yes", no_argument, NULL, 'y'},          {"json", no_argument, NULL, 'j'},
        {"no-bootstrap", no_argument, NULL, 'B'}, {"no-quota-check", no_argument, NULL, 'Q'},
        {"parallel", required_argument, NULL, 'P'}, {"wait", required_argument, NULL, 'W'},
        {NULL, 0, NULL, 0}};
    int ch;
    char *end;
    optind = 1;
    while ((ch = getopt_long(argc, argv, "yj", opts, NULL)) != -1) {
        unsigned long v = optarg ? strtoul(optarg, &end, 10) : 0;
        if (ch == 'y')
            a->yes = true;
        else if (ch == 'j')
            a->json = true;
        else if (ch == 'B')
            a->no_bootstrap = true;
        else if (ch == 'Q')
            a->no_quota = true;
        else if (ch == 'P' && !*end && v >= 1 && v <= 64)
            a->parallel = (unsigned)v;
        else if (ch == 'W' && !*end && v >= 1 && v <= 86400)
            a->wait_s = (unsigned)v;
        else
            return cli_fail(EXIT_USAGE, "see skypool up --help");
    }
    if (optind != argc - 1)
        return cli_fail(EXIT_USAGE, "up takes one pool file; see skypool up --help");
    a->path = argv[optind];
    return EXIT_OK;
}

/* After Ctrl-C: keep what runs, or tear it down; never leave it untracked either way. */
static void after_interrupt(sp_registry *reg, sp_state *st, const sp_pool *pool, bool yes)
{
    sp_pool_row row;
    sp_err err = {0};
    if (sp_state_pool_find(st, pool->name, &row, &err) != SP_OK)
        return;
    interrupted = 0;
    bool tear = !yes && isatty(STDIN_FILENO) &&
                cli_confirm("interrupted: tear down the nodes launched so far?", false);
    if (!tear) {
        fprintf(stderr, "skypool: kept what was launched; `skypool down %s` tears it down, "
                        "`skypool up` resumes\n",
                pool->name);
        return;
    }
    sp_down_result dr;
    if (sp_down(reg, st, &row, NULL, NULL, &dr, &err) != SP_OK)
        fprintf(stderr, "skypool: %s\n", err.msg);
    else
        fprintf(stderr, "skypool: terminated %u node%s\n", dr.terminated,
                dr.terminated == 1 ? "" : "s");
}

static void report_checks(const sp_pool *pool, const sp_up_result *r)
{
    static const char *const actions[] = {"replaced", "the pool fails", "kept (on_fail: warn)"};
    printf("node check: %u passed, %u failed, %u unreachable", r->check_passed,
           r->check_failed, r->unreachable);
    if (r->replaced)
        printf("; %u node%s replaced", r->replaced, r->replaced == 1 ? "" : "s");
    printf("\n");
    if (r->check_failed)
        printf("failing nodes: %s; see skypool status %s\n", actions[pool->on_fail],
               pool->name);
}

static int report(const up_args *a, const sp_pool *pool, const sp_up_result *r)
{
    if (a->json) {
        json_t *j = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:f, s:b, s:b, s:I}", "event",
                              "done", "pool", pool->name, "wanted", (json_int_t)r->wanted,
                              "running", (json_int_t)r->running, "launched",
                              (json_int_t)r->launched_now, "adopted", (json_int_t)r->adopted,
                              "failed", (json_int_t)r->failed, "hourly_usd", r->hourly_usd,
                              "nothing_to_do", r->nothing_to_do, "interrupted", r->interrupted,
                              "reachable", (json_int_t)r->reachable);
        json_object_update_new(j, json_pack("{s:I, s:I, s:I, s:I, s:I}", "checked",
                                            (json_int_t)r->checked, "check_passed",
                                            (json_int_t)r->check_passed, "check_failed",
                                            (json_int_t)r->check_failed, "unreachable",
                                            (json_int_t)r->unreachable, "replaced",
                                            (json_int_t)r->replaced));
        cli_print_json_line(j);
    } else if (r->nothing_to_do && !r->checked) {
        printf("pool %s is complete: %u node%s running, $%.2f/h; nothing to do\n", pool->name,
               r->running, r->running == 1 ? "" : "s", r->hourly_usd);
    } else {
        printf("pool %s: %u of %u node%s running (%u launched now, %u adopted), $%.2f/h\n",
               pool->name, r->running, r->wanted, r->wanted == 1 ? "" : "s", r->launched_now,
               r->adopted, r->hourly_usd);
        if (!a->no_bootstrap && r->running)
            report_checks(pool, r);
    }
    if (r->check_failed && pool->on_fail != SP_ON_FAIL_WARN)
        return EXIT_CHECK;
    if (r->running == r->wanted && !r->unreachable)
        return EXIT_OK;
    return r->running ? EXIT_PARTIAL : EXIT_FAILURE_;
}

/* The public half of the pool's key (ssh.key + ".pub"), else of the first default key in
 * ~/.ssh, for new nodes' authorized keys. *line is NULL when there is none. */
static int public_key(const sp_pool *pool, bool need, char **line)
{
    static const char *const defaults[] = {"id_ed25519", "id_ecdsa", "id_rsa"};
    const char *home = getenv("HOME");
    char path[4096];
    *line = NULL;
    for (size_t i = 0; i < (pool->ssh_key ? 1 : 3); i++) {
        if (pool->ssh_key && pool->ssh_key[0] == '~' && home)
            snprintf(path, sizeof(path), "%s%s.pub", home, pool->ssh_key + 1);
        else if (pool->ssh_key)
            snprintf(path, sizeof(path), "%s.pub", pool->ssh_key);
        else
            snprintf(path, sizeof(path), "%s/.ssh/%s.pub", home ? home : "", defaults[i]);
        FILE *f = fopen(path, "r");
        char buf[16384];
        if (f && fgets(buf, sizeof(buf), f) && !strncmp(buf, "ssh-", 4)) {
            buf[strcspn(buf, "\r\n")] = '\0';
            *line = strdup(buf);
        }
        if (f)
            fclose(f);
        if (*line)
            return EXIT_OK;
        if (pool->ssh_key)
            return cli_fail(EXIT_INVALID, "%s: ssh.key: no public key at %s; make it with "
                                          "ssh-keygen -y -f %s > %s",
                            pool->path, path, pool->ssh_key, path);
    }
    if (need)
        return cli_fail(EXIT_INVALID, "%s: no SSH key for the nodes: set ssh.key in the pool, "
                                      "or create ~/.ssh/id_ed25519 with ssh-keygen -t ed25519 "
                                      "(or pass --no-bootstrap to launch without one)",
                        pool->path);
    return EXIT_OK;
}

static int run(const up_args *a)
{
    sp_pool *pool = NULL;
    sp_err err = {0};
    if (sp_pool_load(a->path, &pool, &err) != SP_OK)
        return cli_fail(EXIT_INVALID, "%s", err.msg);
    char question[256];
    snprintf(question, sizeof(question), "launch pool %s: %u node%s, up to $%.2f/h?",
             pool->name, pool->nodes, pool->nodes == 1 ? "" : "s", pool->max_hourly_usd);
    if (pool->max_hourly_usd <= 0)
        snprintf(question, sizeof(question), "launch pool %s: %u node%s, no budget set?",
                 pool->name, pool->nodes, pool->nodes == 1 ? "" : "s");
    if (!cli_confirm(question, a->yes)) {
        sp_pool_free(pool);
        return EXIT_USAGE;
    }
    char *pubkey = NULL;
    int rc = public_key(pool, !a->no_bootstrap, &pubkey);
    if (rc) {
        sp_pool_free(pool);
        return rc;
    }
    sp_registry reg;
    sp_state *st = NULL;
    rc = cli_open_registry(&reg, a->json);
    if (!rc && (rc = cli_open_state(&st)) != EXIT_OK)
        sp_registry_close(&reg);
    if (rc) {
        free(pubkey);
        sp_pool_free(pool);
        return rc;
    }
    cli_progress prog;
    cli_progress_init(&prog, a->json, pool->nodes);
    struct sigaction sa = {.sa_handler = on_sigint}, old;
    sigaction(SIGINT, &sa, &old);
    sp_up_opts opts = {.parallel = a->parallel,
                       .wait_s = a->wait_s,
                       .check_quota = !a->no_quota,
                       .bootstrap = !a->no_bootstrap,
                       .ssh_public_key = pubkey,
                       .on_event = cli_progress_event,
                       .event_ctx = &prog,
                       .interrupted = (volatile int *)&interrupted};
    sp_up_result res;
    int up = sp_up(&reg, st, pool, &opts, &res, &err);
    sigaction(SIGINT, &old, NULL);
    cli_progress_done(&prog);
    if (res.interrupted)
        after_interrupt(&reg, st, pool, a->yes);
    rc = up ? cli_fail(cli_exit_code(up), "%s", err.msg) : report(a, pool, &res);
    sp_state_close(st);
    sp_registry_close(&reg);
    sp_pool_free(pool);
    free(pubkey);
    return rc;
}

static int up_exec(int argc, char **argv)
{
    up_args a = {0};
    int rc = parse_args(argc, argv, &a);
    return rc ? rc : run(&a);
}

const sp_cmd cmd_up = {
    "up",
    "launch a pool: plan, check quotas, launch with failover, wait",
    "POOL.yaml [--yes] [--json] [--no-bootstrap] [--no-quota-check] [--parallel N] [--wait S]\n"
    "\n"
    "Plans the pool (see skypool plan), skips regions whose quota cannot hold it, and launches\n"
    "the missing nodes in parallel in the plan's order, failing over zone -> region -> provider\n"
    "on capacity errors, from spot to on-demand as the pool's spot policy says, never above\n"
    "max_hourly_usd. Every launch is journaled in the state store before it is made and carries\n"
    "a client token and the pool's tags, so a crash leaves nothing untracked and a rerun never\n"
    "launches a node twice. Run it again to resume a partial pool; on a complete pool it does\n"
    "nothing. Ctrl-C stops launching and asks whether to keep or tear down what exists.\n"
    "\n"
    "Then, unless --no-bootstrap, every node is checked over SSH (the system ssh client, so\n"
    "your ssh config applies; SKYPOOL_SSH_CONFIG names another config file): skypool-nodecheck\n"
    "is copied there and compares the GPUs, driver, CUDA version and MIG layout with what was\n"
    "bought and what the pool's check section asks, and tests memory and bandwidth. A node that\n"
    "fails is replaced, fails the pool, or is kept with a warning, as check.on_fail says.\n"
    "New nodes get the public half of ssh.key (KEY.pub), else of ~/.ssh/id_ed25519.\n"
    "\n"
    "  --yes             answer every confirmation (needed without a terminal)\n"
    "  --json            one JSON event per line\n"
    "  --no-bootstrap    stop at running: do not wait for SSH nor run the node check\n"
    "  --no-quota-check  do not ask providers for quota first\n"
    "  --parallel N      launches at once (default 16)\n"
    "  --wait S          seconds to wait for nodes to run (default 600)\n"
    "\n"
    "exit codes: 0 all nodes run (and passed their check), 7 some do (or some could not be\n"
    "reached), 1 none, 2 not confirmed, 3 invalid pool file or no SSH key, 8 a node failed its\n"
    "check and on_fail is fail (or replace, with no replacement passing)\n",
    up_exec,
};
