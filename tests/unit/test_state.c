/* The state store: what it keeps, where, how privately, and how it fails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "state.h"
#include "testutil.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int setup(void **state)
{
    *state = tu_mkdtemp();
    return *state ? 0 : -1;
}

static int teardown(void **state)
{
    tu_rmtree(*state);
    free(*state);
    return 0;
}

static sp_state *open_in(const char *dir)
{
    sp_state *st = NULL;
    sp_err err = {0};
    if (sp_state_open(dir, &st, &err) != SP_OK)
        fail_msg("open: %s", err.msg);
    return st;
}

static void test_file_private_and_wal(void **state)
{
    sp_state *st = open_in(*state);
    sp_pool_row p;
    sp_err err = {0};
    assert_int_equal(sp_state_pool_create(st, "train", "pool.yaml", 4, &p, &err), SP_OK);
    struct stat sb;
    assert_int_equal(stat(sp_state_path(st), &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0600);
    char wal[4200];
    snprintf(wal, sizeof(wal), "%s-wal", sp_state_path(st));
    assert_int_equal(stat(wal, &sb), 0); /* write-ahead log in use */
    sp_state_close(st);
}

static int count_pool(void *ctx, const sp_pool_row *r)
{
    (void)r;
    (*(int *)ctx)++;
    return 0;
}

static void test_pools(void **state)
{
    sp_state *st = open_in(*state);
    sp_pool_row a, b, dup, found;
    sp_err err = {0};
    assert_int_equal(sp_state_pool_create(st, "train", "pool.yaml", 4, &a, &err), SP_OK);
    assert_int_equal(strlen(a.id), SP_POOL_ID_LEN);
    assert_int_equal(sp_state_pool_create(st, "infer", "", 1, &b, &err), SP_OK);
    assert_string_not_equal(a.id, b.id);
    assert_int_equal(sp_state_pool_create(st, "train", "", 1, &dup, &err), SP_E_IO);
    assert_non_null(strstr(err.msg, "UNIQUE"));
    assert_int_equal(sp_state_pool_find(st, "train", &found, &err), SP_OK);
    assert_string_equal(found.id, a.id);
    assert_int_equal(found.nodes_wanted, 4);
    assert_string_equal(found.state, "planning");
    assert_int_equal(sp_state_pool_set(st, a.id, "ready", &err), SP_OK);
    assert_int_equal(sp_state_pool_find(st, "train", &found, &err), SP_OK);
    assert_string_equal(found.state, "ready");
    assert_int_equal(sp_state_pool_find(st, "nope", &found, &err), SP_E_NOTFOUND);
    assert_non_null(strstr(err.msg, "skypool ls"));
    int n = 0;
    assert_int_equal(sp_state_pools(st, count_pool, &n, &err), SP_OK);
    assert_int_equal(n, 2);
    assert_int_equal(sp_state_pool_delete(st, b.id, &err), SP_OK);
    n = 0;
    assert_int_equal(sp_state_pools(st, count_pool, &n, &err), SP_OK);
    assert_int_equal(n, 1);
    sp_state_close(st);
}

typedef struct seen_nodes {
    sp_node_row rows[8];
    int n;
} seen_nodes;

static int keep_node(void *ctx, const sp_node_row *r)
{
    seen_nodes *s = ctx;
    s->rows[s->n++] = *r;
    return 0;
}

static void test_nodes_survive_reopen(void **state)
{
    sp_state *st = open_in(*state);
    sp_pool_row p;
    sp_err err = {0};
    assert_int_equal(sp_state_pool_create(st, "train", "", 2, &p, &err), SP_OK);
    sp_node_row n = {.idx = 1, .attempt = 2, .price = 98.32};
    snprintf(n.pool_id, sizeof(n.pool_id), "%s", p.id);
    snprintf(n.state, sizeof(n.state), "launching");
    snprintf(n.provider, sizeof(n.provider), "aws");
    snprintf(n.instance_type, sizeof(n.instance_type), "p5.48xlarge");
    assert_int_equal(sp_state_node_put(st, &n, &err), SP_OK);
    snprintf(n.state, sizeof(n.state), "running"); /* the same node, updated */
    snprintf(n.cloud_id, sizeof(n.cloud_id), "i-0123");
    assert_int_equal(sp_state_node_put(st, &n, &err), SP_OK);
    sp_state_close(st);
    st = open_in(*state);
    seen_nodes s = {0};
    assert_int_equal(sp_state_nodes(st, p.id, keep_node, &s, &err), SP_OK);
    assert_int_equal(s.n, 1);
    assert_string_equal(s.rows[0].state, "running");
    assert_string_equal(s.rows[0].cloud_id, "i-0123");
    assert_int_equal(s.rows[0].attempt, 2);
    assert_true(s.rows[0].price == 98.32);
    /* Forgetting a pool forgets its nodes. */
    assert_int_equal(sp_state_pool_delete(st, p.id, &err), SP_OK);
    s.n = 0;
    assert_int_equal(sp_state_nodes(st, p.id, keep_node, &s, &err), SP_OK);
    assert_int_equal(s.n, 0);
    sp_state_close(st);
}

static int keep_op(void *ctx, const sp_op_row *r)
{
    *(sp_op_row *)ctx = *r;
    return 0;
}

/* An intent is on disk before the call; a crash leaves it unfinished for recovery to see. */
static void test_journal(void **state)
{
    sp_state *st = open_in(*state);
    sp_err err = {0};
    sp_op_row in = {.node_idx = 3};
    snprintf(in.pool_id, sizeof(in.pool_id), "0123456789abcdef");
    snprintf(in.kind, sizeof(in.kind), "launch");
    snprintf(in.provider, sizeof(in.provider), "aws");
    snprintf(in.region, sizeof(in.region), "us-east-1");
    sp_state_client_token(in.pool_id, 3, 0, in.token, sizeof(in.token));
    int64_t id = 0;
    assert_int_equal(sp_state_op_begin(st, &in, &id, &err), SP_OK);
    sp_state_close(st); /* the process "dies" here */
    st = open_in(*state);
    sp_op_row open_op = {0};
    assert_int_equal(sp_state_ops_unfinished(st, in.pool_id, keep_op, &open_op, &err), SP_OK);
    assert_int_equal(open_op.id, id);
    assert_string_equal(open_op.token, "skypool-0123456789abcdef-3-0");
    assert_int_equal(open_op.finished_at, 0);
    assert_int_equal(sp_state_op_end(st, id, "ok", "i-0abc", "", &err), SP_OK);
    memset(&open_op, 0, sizeof(open_op));
    assert_int_equal(sp_state_ops_unfinished(st, in.pool_id, keep_op, &open_op, &err), SP_OK);
    assert_int_equal(open_op.id, 0);
    sp_state_close(st);
}

static void test_client_tokens(void **state)
{
    (void)state;
    char a[80], b[80], c[80];
    sp_state_client_token("ffffffffffffffff", 1023, 99, a, sizeof(a));
    sp_state_client_token("ffffffffffffffff", 1023, 99, b, sizeof(b));
    sp_state_client_token("ffffffffffffffff", 1023, 100, c, sizeof(c));
    assert_string_equal(a, b);
    assert_string_not_equal(a, c);
    assert_true(strlen(a) <= 64); /* EC2's limit for ClientToken */
}

static void test_damaged_file_untouched(void **state)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/state.db", (char *)*state);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    for (int i = 0; i < 512; i++)
        fputs("not a database ", f);
    fclose(f);
    size_t before_len = 0, after_len = 0;
    char *before = tu_read_file(path, &before_len);
    sp_state *st = NULL;
    sp_err err = {0};
    assert_int_equal(sp_state_open(*state, &st, &err), SP_E_IO);
    assert_null(st);
    assert_non_null(strstr(err.msg, "is damaged"));
    assert_non_null(strstr(err.msg, "status --refresh"));
    char *after = tu_read_file(path, &after_len);
    assert_int_equal(before_len, after_len);
    assert_memory_equal(before, after, before_len);
    free(before);
    free(after);
}

static void test_locked(void **state)
{
    sp_state *st = open_in(*state);
    sqlite3 *other;
    assert_int_equal(sqlite3_open(sp_state_path(st), &other), SQLITE_OK);
    assert_int_equal(sqlite3_exec(other, "BEGIN IMMEDIATE;", NULL, NULL, NULL), SQLITE_OK);
    sp_pool_row p;
    sp_err err = {0};
    assert_int_equal(sp_state_pool_create(st, "x", "", 1, &p, &err), SP_E_IO);
    assert_non_null(strstr(err.msg, "locked by another skypool"));
    sqlite3_exec(other, "ROLLBACK;", NULL, NULL, NULL);
    sqlite3_close(other);
    assert_int_equal(sp_state_pool_create(st, "x", "", 1, &p, &err), SP_OK);
    sp_state_close(st);
}

static void test_default_location(void **state)
{
    char xdg[4200], want[4300];
    snprintf(xdg, sizeof(xdg), "%s/xdg", (char *)*state);
    setenv("XDG_STATE_HOME", xdg, 1);
    unsetenv("SKYPOOL_STATE_DIR");
    sp_state *st = open_in(NULL);
    snprintf(want, sizeof(want), "%s/skypool/state.db", xdg);
    assert_string_equal(sp_state_path(st), want);
    sp_state_close(st);
    struct stat sb;
    snprintf(want, sizeof(want), "%s/skypool", xdg);
    assert_int_equal(stat(want, &sb), 0);
    assert_int_equal(sb.st_mode & 0777, 0700);
}

int main(void)
{
    setenv("SKYPOOL_STATE_BUSY_MS", "300", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_file_private_and_wal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pools, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nodes_survive_reopen, setup, teardown),
        cmocka_unit_test_setup_teardown(test_journal, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_tokens, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_file_untouched, setup, teardown),
        cmocka_unit_test_setup_teardown(test_locked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_default_location, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
