/* The node check, core side: expectations, flags, reports, the nvidia-smi fallback, the ssh
 * command line, and the child-process runner under them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "bootstrap.h"
#include "proc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sp_pool *pool_of(const char *yaml)
{
    sp_pool *pool = NULL;
    sp_err err = {0};
    if (sp_pool_parse(yaml, strlen(yaml), "test.yaml", &pool, &err) != SP_OK)
        fail_msg("pool: %s", err.msg);
    return pool;
}

/* The flags, joined with spaces, for easy comparison. */
static void joined(const sp_check_expect *e, char *out, size_t size)
{
    const char *argv[40];
    char buf[2048];
    size_t n = sp_check_args(e, argv, 40, buf, sizeof(buf)), at = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n; i++)
        at += (size_t)snprintf(out + at, size - at, "%s%s", i ? " " : "", argv[i]);
}

static sp_node_row bought(const char *accel, unsigned count, unsigned mem_mib)
{
    sp_node_row r = {0};
    snprintf(r.accel, sizeof(r.accel), "%s", accel);
    r.accel_count = count;
    r.accel_mem_mib = mem_mib;
    return r;
}

static void test_expect_of_node_with_mig(void **state)
{
    (void)state;
    sp_pool *pool = pool_of("name: p\nresources: {accelerators: \"H100:8\"}\n"
                            "check: {min_cuda: \"12.4\", mig: 3g.40gb}\n");
    sp_node_row r = bought("H100-SXM", 8, 81920);
    sp_check_expect e;
    sp_err err = {0};
    assert_int_equal(sp_check_expect_of_node(pool, &r, &e, &err), SP_OK);
    char args[1024];
    joined(&e, args, sizeof(args));
    /* "3g.40gb" alone means as many as fit: two on an 80 GB H100. */
    assert_string_equal(args, "--expect-count 8 --expect-model H100-SXM --expect-mem-mib 81920 "
                              "--expect-form-factor sxm --expect-mig 3g.40gb,3g.40gb "
                              "--min-cuda 12.4");
    sp_pool_free(pool);
}

/* A node adopted after a crash has no record of what it was bought as: any model the pool
 * allows, no count, and no form factor where the models differ in it. */
static void test_expect_of_adopted_node(void **state)
{
    (void)state;
    sp_pool *pool = pool_of("name: p\nresources: {accelerators: \"H100:8\"}\n");
    sp_node_row r = {0};
    sp_check_expect e;
    sp_err err = {0};
    assert_int_equal(sp_check_expect_of_node(pool, &r, &e, &err), SP_OK);
    assert_int_equal(e.count, 0);
    assert_true(e.n_models >= 3);
    assert_null(e.form_factor);
    char args[1024];
    joined(&e, args, sizeof(args));
    assert_non_null(strstr(args, "--expect-model H100-SXM,H100-PCIe,H100-NVL"));
    assert_null(strstr(args, "--expect-count"));
    sp_pool_free(pool);
}

static void test_expect_of_term(void **state)
{
    (void)state;
    sp_spec_term t;
    sp_err err = {0};
    assert_int_equal(sp_spec_term_parse("A100:80GB:4", &t, &err), SP_OK);
    sp_check_expect e;
    sp_check_expect_of_term(&t, &e);
    char args[1024];
    joined(&e, args, sizeof(args));
    assert_string_equal(args, "--expect-count 4 --expect-model A100-80GB --expect-mem-mib 81920 "
                              "--expect-form-factor sxm");
}

static const char ok_report[] =
    "{\"schema\":\"skypool-nodecheck/1\",\"status\":\"ok\",\"exit_code\":0,"
    "\"driver\":{\"loaded\":true,\"version\":\"550.54.15\",\"cuda_max\":\"12.4\"},"
    "\"devices\":[{\"index\":0,\"name\":\"NVIDIA H100 80GB HBM3\",\"tests\":{\"d2d_gbps\":2650.5}},"
    "{\"index\":1,\"name\":\"NVIDIA H100 80GB HBM3\"}],"
    "\"workers\":[{\"uuid\":\"GPU-a\",\"device\":0,\"profile\":null},"
    "{\"uuid\":\"GPU-b\",\"device\":1,\"profile\":null}],\"mismatches\":[]}";

static void test_read_ok_report(void **state)
{
    (void)state;
    sp_check_result r;
    sp_err err = {0};
    assert_int_equal(sp_check_read_report(ok_report, strlen(ok_report), 0, &r, &err), SP_OK);
    assert_string_equal(r.verdict, "ok");
    assert_int_equal(r.devices, 2);
    assert_string_equal(r.summary,
                        "2 x NVIDIA H100 80GB HBM3, driver 550.54.15 (CUDA 12.4), 2650 GB/s on "
                        "device");
    assert_non_null(strstr(r.workers, "\"GPU-b\""));
    assert_non_null(strstr(r.report, "skypool-nodecheck/1"));
    assert_true(sp_check_verdict_passes(r.verdict));
    sp_check_result_free(&r);
}

static void test_read_failing_report(void **state)
{
    (void)state;
    const char rep[] =
        "{\"schema\":\"skypool-nodecheck/1\",\"status\":\"hardware_mismatch\",\"exit_code\":6,"
        "\"devices\":[],\"workers\":[],\"mismatches\":["
        "{\"what\":\"count\",\"expected\":\"8\",\"found\":\"4\",\"message\":\"4 GPUs, 8 expected\"},"
        "{\"what\":\"model\",\"expected\":\"H100-SXM\",\"found\":\"H100-PCIe\","
        "\"message\":\"H100-PCIe, H100-SXM expected\"}]}";
    sp_check_result r;
    sp_err err = {0};
    assert_int_equal(sp_check_read_report(rep, strlen(rep), 6, &r, &err), SP_OK);
    assert_string_equal(r.verdict, "hardware_mismatch");
    assert_string_equal(r.summary, "4 GPUs, 8 expected; H100-PCIe, H100-SXM expected");
    assert_false(sp_check_verdict_passes(r.verdict));
    assert_int_equal(r.exit_code, 6);
    sp_check_result_free(&r);
    /* No driver: the driver's error is the summary. */
    const char none[] = "{\"schema\":\"skypool-nodecheck/1\",\"status\":\"no_driver\","
                        "\"driver\":{\"loaded\":false,\"error\":\"libcuda.so.1: cannot open\"},"
                        "\"devices\":[],\"mismatches\":[]}";
    assert_int_equal(sp_check_read_report(none, strlen(none), 3, &r, &err), SP_OK);
    assert_string_equal(r.summary, "libcuda.so.1: cannot open");
    sp_check_result_free(&r);
}

static void test_read_not_a_report(void **state)
{
    (void)state;
    static const char *const bad[] = {"", "not json", "{\"status\":\"ok\"}",
                                      "{\"schema\":\"other/1\",\"status\":\"ok\"}",
                                      "{\"schema\":\"skypool-nodecheck/1\"}",
                                      "{\"schema\":\"skypool-nodecheck/1\",\"status\":7}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sp_check_result r;
        sp_err err = {0};
        assert_int_equal(sp_check_read_report(bad[i], strlen(bad[i]), 1, &r, &err),
                         SP_E_PROTOCOL);
        assert_non_null(strstr(err.msg, "skypool-nodecheck/1"));
        sp_check_result_free(&r);
    }
}

static const char smi8[] =
    "NVIDIA H100 80GB HBM3, GPU-0, 81559, 550.54.15, 00000000:18:00.0\n"
    "NVIDIA H100 80GB HBM3, GPU-1, 81559, 550.54.15, 00000000:2A:00.0\n"
    "NVIDIA H100 80GB HBM3, GPU-2, 81559, 550.54.15, 00000000:3A:00.0\n"
    "NVIDIA H100 80GB HBM3, GPU-3, 81559, 550.54.15, 00000000:5D:00.0\n"
    "NVIDIA H100 80GB HBM3, GPU-4, 81559, 550.54.15, 00000000:9A:00.0\n"
    "NVIDIA H100 80GB HBM3, GPU-5, 81559, 550.54.15, 00000000:AB:00.0\n"
    "NVIDIA H100 80GB HBM3, GPU-6, 81559, 550.54.15, 00000000:BA:00.0\n"
    "NVIDIA H100 80GB HBM3, GPU-7, 81559, 550.54.15, 00000000:DB:00.0\n";

static sp_check_expect h100x8(void)
{
    sp_check_expect e = {.count = 8, .mem_mib = 81920, .cuda_major = 12, .cuda_minor = 4};
    e.models[0] = "H100-SXM";
    e.n_models = 1;
    return e;
}

static void test_smi_fallback(void **state)
{
    (void)state;
    sp_check_expect e = h100x8();
    sp_check_result r;
    sp_check_read_smi(smi8, &e, &r);
    assert_string_equal(r.verdict, "partial");
    assert_int_equal(r.devices, 8);
    assert_non_null(strstr(r.summary, "CUDA 12.4"));
    assert_non_null(strstr(r.workers, "\"GPU-7\""));
    assert_true(sp_check_verdict_passes(r.verdict));
    sp_check_result_free(&r);
    /* Half the GPUs. */
    sp_check_read_smi(smi8 + strlen(smi8) / 2, &e, &r);
    assert_string_equal(r.verdict, "hardware_mismatch");
    assert_string_equal(r.summary, "4 GPUs where 8 were bought (nvidia-smi)");
    sp_check_result_free(&r);
    /* The PCIe card where SXM was bought. */
    e.count = 1;
    sp_check_read_smi("NVIDIA H100 PCIe, GPU-0, 81559, 550.54.15, 0:1:0.0\n", &e, &r);
    assert_string_equal(r.verdict, "hardware_mismatch");
    assert_non_null(strstr(r.summary, "H100-PCIe"));
    sp_check_result_free(&r);
    /* Driver 535 runs CUDA 12.2 at most. */
    sp_check_read_smi("NVIDIA H100 80GB HBM3, GPU-0, 81559, 535.161.08, 0:1:0.0\n", &e, &r);
    assert_string_equal(r.verdict, "driver_too_old");
    assert_non_null(strstr(r.summary, "12.2"));
    sp_check_result_free(&r);
    sp_check_read_smi("", &e, &r);
    assert_string_equal(r.verdict, "no_device");
    sp_check_result_free(&r);
}

static void ssh_joined(const sp_ssh_target *t, const sp_ssh_opts *o, char *out, size_t size)
{
    const char *argv[48];
    char buf[4096];
    size_t n = sp_ssh_argv(t, o, argv, 48, buf, sizeof(buf)), at = 0;
    assert_null(argv[n]);
    for (size_t i = 0; i < n; i++)
        at += (size_t)snprintf(out + at, size - at, "%s%s", i ? " " : "", argv[i]);
}

static void test_ssh_argv(void **state)
{
    (void)state;
    unsetenv("SKYPOOL_SSH");
    unsetenv("SKYPOOL_SSH_CONFIG");
    sp_ssh_target t = {.struct_size = sizeof(t), .host = "203.0.113.7", .port = 22,
                       .user = "ubuntu"};
    sp_ssh_opts o = {.known_hosts = "/s/ssh/p.known_hosts", .connect_timeout_s = 15};
    char line[2048];
    ssh_joined(&t, &o, line, sizeof(line));
    /* Port 22 is the user's ssh config's to change; the target's user when the pool has none. */
    assert_string_equal(line, "ssh -T -o BatchMode=yes -o ConnectTimeout=15 "
                              "-o StrictHostKeyChecking=accept-new "
                              "-o UserKnownHostsFile=/s/ssh/p.known_hosts -o LogLevel=ERROR "
                              "-l ubuntu 203.0.113.7");
    t.port = 2222;
    o.user = "root";
    o.key = "/k/id";
    o.proxy = "ssh -W %h:%p bastion";
    setenv("SKYPOOL_SSH_CONFIG", "/etc/test_ssh_config", 1);
    ssh_joined(&t, &o, line, sizeof(line));
    assert_string_equal(line, "ssh -F /etc/test_ssh_config -T -o BatchMode=yes "
                              "-o ConnectTimeout=15 -o StrictHostKeyChecking=accept-new "
                              "-o UserKnownHostsFile=/s/ssh/p.known_hosts -o LogLevel=ERROR "
                              "-i /k/id -o IdentitiesOnly=yes "
                              "-o ProxyCommand=ssh -W %h:%p bastion -p 2222 -l root 203.0.113.7");
    unsetenv("SKYPOOL_SSH_CONFIG");
}

static void test_proc_io_and_exit(void **state)
{
    (void)state;
    size_t len = 3u << 20;
    unsigned char *in = malloc(len);
    for (size_t i = 0; i < len; i++)
        in[i] = (unsigned char)('a' + i % 26);
    const char *argv[] = {"sh", "-c", "cat; echo oops >&2; exit 3", NULL};
    sp_proc_opts o = {in, len, 20000, 0};
    sp_proc_result r;
    sp_err err = {0};
    assert_int_equal(sp_proc_run(argv, &o, &r, &err), SP_OK);
    assert_int_equal(r.exit_code, 3);
    assert_int_equal(r.out_len, len);
    assert_memory_equal(r.out, in, len);
    char tail[64];
    assert_string_equal(sp_proc_err_tail(&r, tail, sizeof(tail)), "oops");
    sp_proc_result_free(&r);
    /* Output past the bound is read and dropped: the child never blocks on it. */
    o.max_out = 1000;
    assert_int_equal(sp_proc_run(argv, &o, &r, &err), SP_OK);
    assert_int_equal(r.out_len, 1000);
    assert_true(r.truncated);
    assert_int_equal(r.exit_code, 3);
    sp_proc_result_free(&r);
    free(in);
}

static void test_proc_deadline_and_missing(void **state)
{
    (void)state;
    /* The deadline kills the whole process group: the shell's own child too. */
    const char *slow[] = {"sh", "-c", "sleep 30 & wait", NULL};
    sp_proc_opts o = {NULL, 0, 300, 0};
    sp_proc_result r;
    sp_err err = {0};
    assert_int_equal(sp_proc_run(slow, &o, &r, &err), SP_E_NETWORK);
    assert_true(r.timed_out);
    assert_int_equal(r.exit_code, 128 + 9);
    sp_proc_result_free(&r);
    const char *missing[] = {"skypool-no-such-program", NULL};
    assert_int_equal(sp_proc_run(missing, &o, &r, &err), SP_E_NOTFOUND);
    assert_non_null(strstr(err.msg, "skypool-no-such-program"));
    sp_proc_result_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_expect_of_node_with_mig),
        cmocka_unit_test(test_expect_of_adopted_node),
        cmocka_unit_test(test_expect_of_term),
        cmocka_unit_test(test_read_ok_report),
        cmocka_unit_test(test_read_failing_report),
        cmocka_unit_test(test_read_not_a_report),
        cmocka_unit_test(test_smi_fallback),
        cmocka_unit_test(test_ssh_argv),
        cmocka_unit_test(test_proc_io_and_exit),
        cmocka_unit_test(test_proc_deadline_and_missing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
