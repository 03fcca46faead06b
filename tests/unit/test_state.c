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

/* A node's checks: the latest one wins, with its workers and report; pools take theirs along. */
static void test_checks(void **state)
{
    sp_state *st = open_in(*state);
    sp_pool_row p;
    sp_err err = {0};
    assert_int_equal(sp_state_pool_create(st, "train", "pool.yaml", 2, &p, &err), SP_OK);
    sp_check_row got;
    assert_int_equal(sp_state_check_last(st, p.id, 0, &got, NULL, &err), SP_E_NOTFOUND);
    sp_check_row first = {.idx = 0, .verdict = "hardware_mismatch", .summary = "4 GPUs",
                          .workers = "[]", .report = "{\"status\":\"hardware_mismatch\"}"};
    snprintf(first.pool_id, sizeof(first.pool_id), "%s", p.id);
    snprintf(first.cloud_id, sizeof(first.cloud_id), "i-1");
    assert_int_equal(sp_state_check_put(st, &first, &err), SP_OK);
    sp_check_row second = first;
    snprintf(second.verdict, sizeof(second.verdict), "ok");
    snprintf(second.cloud_id, sizeof(second.cloud_id), "i-2");
    second.workers = "[{\"uuid\":\"GPU-1\",\"device\":0,\"profile\":null}]";
    second.report = "{\"status\":\"ok\"}";
    assert_int_equal(sp_state_check_put(st, &second, &err), SP_OK);
    char *report = NULL;
    assert_int_equal(sp_state_check_last(st, p.id, 0, &got, &report, &err), SP_OK);
    assert_string_equal(got.verdict, "ok");
    assert_string_equal(got.cloud_id, "i-2");
    assert_string_equal(got.workers_copy, second.workers);
    assert_string_equal(report, "{\"status\":\"ok\"}");
    assert_true(got.checked_at > 0);
    free(report);
    free(got.workers_copy);
    assert_int_equal(sp_state_pool_delete(st, p.id, &err), SP_OK);
    assert_int_equal(sp_state_check_last(st, p.id, 0, &got, NULL, &err), SP_E_NOTFOUND);
    sp_state_close(st);
}

/* A database written by the first version gains the new node columns and keeps its rows. */
static void test_upgrade_from_v1(void **state)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/state.db", (char *)*state);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    const char *v1 =
        "CREATE TABLE pools (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, path TEXT NOT NULL"
        " DEFAULT '', state TEXT NOT NULL, nodes_wanted INTEGER NOT NULL, created_at INTEGER NOT"
        " NULL, updated_at INTEGER NOT NULL);"
        "CREATE TABLE nodes (pool_id TEXT NOT NULL REFERENCES pools(id) ON DELETE CASCADE,"
        " idx INTEGER NOT NULL, attempt INTEGER NOT NULL DEFAULT 0, state TEXT NOT NULL,"
        " provider TEXT NOT NULL DEFAULT '', region TEXT NOT NULL DEFAULT '', zone TEXT NOT NULL"
        " DEFAULT '', instance_type TEXT NOT NULL DEFAULT '', market TEXT NOT NULL DEFAULT '',"
        " price REAL NOT NULL DEFAULT 0, cloud_id TEXT NOT NULL DEFAULT '', public_ip TEXT NOT"
        " NULL DEFAULT '', private_ip TEXT NOT NULL DEFAULT '', check_verdict TEXT NOT NULL"
        " DEFAULT '', updated_at INTEGER NOT NULL, PRIMARY KEY (pool_id, idx));"
        "INSERT INTO pools VALUES ('0011223344556677', 'old', 'p.yaml', 'ready', 1, 1, 1);"
        "INSERT INTO nodes (pool_id, idx, state, provider, cloud_id, updated_at)"
        " VALUES ('0011223344556677', 0, 'running', 'aws', 'i-0abc', 1);"
        "PRAGMA user_version=1;";
    assert_int_equal(sqlite3_exec(db, v1, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    sp_state *st = open_in(*state);
    sp_pool_row p;
    sp_err err = {0};
    assert_int_equal(sp_state_pool_find(st, "old", &p, &err), SP_OK);
    sp_node_row n = {0};
    snprintf(n.pool_id, sizeof(n.pool_id), "%s", p.id);
    snprintf(n.state, sizeof(n.state), "running");
    snprintf(n.cloud_id, sizeof(n.cloud_id), "i-0abc");
    snprintf(n.accel, sizeof(n.accel), "H100-SXM");
    n.accel_count = 8;
    n.accel_mem_mib = 81920;
    assert_int_equal(sp_state_node_put(st, &n, &err), SP_OK);
    sp_state_close(st);
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT accel, accel_count, accel_mem_mib,"
                                            " (SELECT user_version FROM pragma_user_version)"
                                            " FROM nodes", -1, &q, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(q, 0), "H100-SXM");
    assert_int_equal(sqlite3_column_int(q, 1), 8);
    assert_int_equal(sqlite3_column_int(q, 2), 81920);
    assert_int_equal(sqlite3_column_int(q, 3), SP_STATE_SCHEMA);
    sqlite3_finalize(q);
    sqlite3_close(db);
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
        cmocka_unit_test_setup_teardown(test_checks, setup, teardown),
        cmocka_unit_test_setup_teardown(test_upgrade_from_v1, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
