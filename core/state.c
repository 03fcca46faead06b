/* The state store on SQLite. Every write is its own transaction: small, and durable at once. */
#include "state.h"

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STATE_SCHEMA_VERSION 1
#define BUSY_TIMEOUT_MS 5000

struct sp_state {
    sqlite3 *db;
    char path[PATH_MAX];
};

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS pools ("
    " id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, path TEXT NOT NULL DEFAULT '',"
    " state TEXT NOT NULL, nodes_wanted INTEGER NOT NULL,"
    " created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS nodes ("
    " pool_id TEXT NOT NULL REFERENCES pools(id) ON DELETE CASCADE, idx INTEGER NOT NULL,"
    " attempt INTEGER NOT NULL DEFAULT 0, state TEXT NOT NULL,"
    " provider TEXT NOT NULL DEFAULT '', region TEXT NOT NULL DEFAULT '',"
    " zone TEXT NOT NULL DEFAULT '', instance_type TEXT NOT NULL DEFAULT '',"
    " market TEXT NOT NULL DEFAULT '', price REAL NOT NULL DEFAULT 0,"
    " cloud_id TEXT NOT NULL DEFAULT '', public_ip TEXT NOT NULL DEFAULT '',"
    " private_ip TEXT NOT NULL DEFAULT '', check_verdict TEXT NOT NULL DEFAULT '',"
    " accel TEXT NOT NULL DEFAULT '', accel_count INTEGER NOT NULL DEFAULT 0,"
    " accel_mem_mib INTEGER NOT NULL DEFAULT 0,"
    " updated_at INTEGER NOT NULL, PRIMARY KEY (pool_id, idx));"
    "CREATE TABLE IF NOT EXISTS checks ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " pool_id TEXT NOT NULL REFERENCES pools(id) ON DELETE CASCADE, idx INTEGER NOT NULL,"
    " cloud_id TEXT NOT NULL DEFAULT '', checked_at INTEGER NOT NULL, verdict TEXT NOT NULL,"
    " summary TEXT NOT NULL DEFAULT '', workers TEXT NOT NULL DEFAULT '',"
    " report TEXT NOT NULL DEFAULT '');"
    "CREATE INDEX IF NOT EXISTS checks_node ON checks (pool_id, idx, id);"
    "CREATE TABLE IF NOT EXISTS ops ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, pool_id TEXT NOT NULL, node_idx INTEGER NOT NULL,"
    " kind TEXT NOT NULL, provider TEXT NOT NULL, region TEXT NOT NULL,"
    " token TEXT NOT NULL DEFAULT '', cloud_id TEXT NOT NULL DEFAULT '',"
    " started_at INTEGER NOT NULL, finished_at INTEGER NOT NULL DEFAULT 0,"
    " outcome TEXT NOT NULL DEFAULT '', detail TEXT NOT NULL DEFAULT '');"
    "CREATE INDEX IF NOT EXISTS ops_open ON ops (pool_id, finished_at);";

static long long now_s(void)
{
    return (long long)time(NULL);
}

/* How long a write waits for another skypool's: SKYPOOL_STATE_BUSY_MS, else 5 s. */
static int busy_ms(void)
{
    const char *v = getenv("SKYPOOL_STATE_BUSY_MS");
    long ms = v && *v ? strtol(v, NULL, 10) : 0;
    return ms > 0 && ms <= 600000 ? (int)ms : BUSY_TIMEOUT_MS;
}

/* A failed SQLite call, in words a user can act on. */
static int db_fail(sp_state *st, int rc, const char *what, sp_err *err)
{
    int base = rc & 0xff;
    if (base == SQLITE_BUSY || base == SQLITE_LOCKED)
        return sp_err_set(err, SP_E_IO,
                          "state database %s is locked by another skypool process (waited %.1f "
                          "s while %s); let it finish, or stop it, and run this again",
                          st->path, busy_ms() / 1000.0, what);
    if (base == SQLITE_CORRUPT || base == SQLITE_NOTADB)
        return sp_err_set(err, SP_E_IO,
                          "state database %s is damaged (%s while %s); nothing was changed: "
                          "move it aside and run `skypool status --refresh`, which finds the "
                          "pools' instances again by their tags",
                          st->path, sqlite3_errstr(rc), what);
    return sp_err_set(err, SP_E_IO, "state database %s: %s while %s", st->path,
                      sqlite3_errmsg(st->db), what);
}

static int state_dir(const char *dir, char *buf, size_t size, sp_err *err)
{
    const char *env = getenv("SKYPOOL_STATE_DIR"), *xdg = getenv("XDG_STATE_HOME");
    const char *home = getenv("HOME");
    int n;
    if (dir)
        n = snprintf(buf, size, "%s", dir);
    else if (env && *env)
        n = snprintf(buf, size, "%s", env);
    else if (xdg && *xdg == '/')
        n = snprintf(buf, size, "%s/skypool", xdg);
    else if (home && *home)
        n = snprintf(buf, size, "%s/.local/state/skypool", home);
    else
        return sp_err_set(err, SP_E_IO, "no state directory: set XDG_STATE_HOME or HOME");
    if (n < 0 || (size_t)n >= size)
        return sp_err_set(err, SP_E_IO, "state directory path too long");
    return SP_OK;
}

static int make_dirs(char *path, sp_err *err)
{
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        int rc = mkdir(path, 0700);
        *p = '/';
        if (rc != 0 && errno != EEXIST)
            return sp_err_set(err, SP_E_IO, "cannot create %s: %s", path, strerror(errno));
    }
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
        return sp_err_set(err, SP_E_IO, "cannot create %s: %s", path, strerror(errno));
    return SP_OK;
}

/* The file is created 0600 before SQLite opens it: the state names instances and addresses. */
static int create_private(const char *path, sp_err *err)
{
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return sp_err_set(err, SP_E_IO, "cannot open %s: %s", path, strerror(errno));
    fchmod(fd, 0600);
    close(fd);
    return SP_OK;
}

static int exec(sp_state *st, const char *sql, const char *what, sp_err *err)
{
    int rc = sqlite3_exec(st->db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? SP_OK : db_fail(st, rc, what, err);
}

/* Version 2 added what a node carries (for its check) to nodes; the checks table is new in 2
 * and made by the schema itself. */
static int migrate(sp_state *st, sp_err *err)
{
    sqlite3_stmt *s = NULL;
    int version = 0;
    if (sqlite3_prepare_v2(st->db, "PRAGMA user_version;", -1, &s, NULL) == SQLITE_OK &&
        sqlite3_step(s) == SQLITE_ROW)
        version = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    if (version >= SP_STATE_SCHEMA)
        return SP_OK;
    int rc = SP_OK;
    if (version >= 1)
        rc = exec(st,
                  "ALTER TABLE nodes ADD COLUMN accel TEXT NOT NULL DEFAULT '';"
                  "ALTER TABLE nodes ADD COLUMN accel_count INTEGER NOT NULL DEFAULT 0;"
                  "ALTER TABLE nodes ADD COLUMN accel_mem_mib INTEGER NOT NULL DEFAULT 0;",
                  "upgrading the state database to version 2", err);
    if (!rc)
        rc = exec(st, "PRAGMA user_version=2;", "recording the schema version", err);
    return rc;
}

static int setup_db(sp_state *st, sp_err *err)
{
    sqlite3_busy_timeout(st->db, busy_ms());
    int rc = exec(st, "PRAGMA journal_mode=WAL;", "switching to WAL", err);
    if (!rc)
        rc = exec(st, "PRAGMA foreign_keys=ON; PRAGMA synchronous=FULL;", "setting pragmas",
                  err);
    if (!rc)
        rc = exec(st, schema, "creating the tables", err);
    if (!rc)
        rc = migrate(st, err);
    return rc;
}

int sp_state_open(const char *dir, sp_state **out, sp_err *err)
{
    *out = NULL;
    sp_state *st = calloc(1, sizeof(*st));
    if (!st)
        return sp_err_set(err, SP_E_NOMEM, "out of memory");
    char d[PATH_MAX - 16];
    int rc = state_dir(dir, d, sizeof(d), err);
    if (!rc)
        rc = make_dirs(d, err);
    if (!rc) {
        snprintf(st->path, sizeof(st->path), "%s/state.db", d);
        rc = create_private(st->path, err);
    }
    if (!rc && sqlite3_open_v2(st->path, &st->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX,
                               NULL) != SQLITE_OK)
        rc = db_fail(st, sqlite3_errcode(st->db), "opening it", err);
    if (!rc)
        rc = setup_db(st, err);
    if (rc) {
        sp_state_close(st);
        return rc;
    }
    *out = st;
    return SP_OK;
}

void sp_state_close(sp_state *st)
{
    if (!st)
        return;
    sqlite3_close_v2(st->db);
    free(st);
}

const char *sp_state_path(const sp_state *st)
{
    return st->path;
}

void sp_state_client_token(const char *pool_id, unsigned idx, unsigned attempt, char *buf,
                           size_t size)
{
    snprintf(buf, size, "skypool-%s-%u-%u", pool_id, idx, attempt);
}

/* ---- Statements ---------------------------------------------------------------------------- */

typedef struct stmt {
    sp_state *st;
    sqlite3_stmt *s;
    const char *what;
} stmt;

static int prepare(sp_state *st, stmt *q, const char *sql, const char *what, sp_err *err)
{
    q->st = st;
    q->what = what;
    int rc = sqlite3_prepare_v2(st->db, sql, -1, &q->s, NULL);
    return rc == SQLITE_OK ? SP_OK : db_fail(st, rc, what, err);
}

static void bind_text(stmt *q, int i, const char *v)
{
    sqlite3_bind_text(q->s, i, v ? v : "", -1, SQLITE_TRANSIENT);
}

/* Steps a statement that returns no rows, and finalizes it. */
static int run(stmt *q, sp_err *err)
{
    int rc = sqlite3_step(q->s);
    int out = rc == SQLITE_DONE ? SP_OK : db_fail(q->st, rc, q->what, err);
    sqlite3_finalize(q->s);
    return out;
}

static void col_text(sqlite3_stmt *s, int i, char *buf, size_t size)
{
    const unsigned char *t = sqlite3_column_text(s, i);
    snprintf(buf, size, "%s", t ? (const char *)t : "");
}

/* Steps a query, hands each row to read (into a scratch row of row_size) and then to fn, and
 * finalizes the statement. */
typedef void (*read_fn)(sqlite3_stmt *s, void *row);
typedef int (*row_fn)(void *ctx, const void *row);

static int each_row(stmt *q, read_fn read, size_t row_size, row_fn fn, void *ctx, sp_err *err)
{
    void *row = malloc(row_size);
    int rc = row ? SP_OK : sp_err_set(err, SP_E_NOMEM, "out of memory");
    int step = SQLITE_DONE;
    while (!rc && (step = sqlite3_step(q->s)) == SQLITE_ROW) {
        read(q->s, row);
        rc = fn(ctx, row);
    }
    if (!rc && step != SQLITE_DONE)
        rc = db_fail(q->st, step, q->what, err);
    free(row);
    sqlite3_finalize(q->s);
    return rc;
}

/* Each public callback type, called through a typed adapter rather than a cast. */
struct pool_cb {
    sp_pool_fn fn;
    void *ctx;
};
struct node_cb {
    sp_node_fn fn;
    void *ctx;
};
struct op_cb {
    sp_op_fn fn;
    void *ctx;
};

static int deliver_pool(void *c, const void *row)
{
    return ((struct pool_cb *)c)->fn(((struct pool_cb *)c)->ctx, row);
}

static int deliver_node(void *c, const void *row)
{
    return ((struct node_cb *)c)->fn(((struct node_cb *)c)->ctx, row);
}

static int deliver_op(void *c, const void *row)
{
    return ((struct op_cb *)c)->fn(((struct op_cb *)c)->ctx, row);
}

/* ---- Pools --------------------------------------------------------------------------------- */

static void new_pool_id(char id[SP_POOL_ID_LEN + 1])
{
    unsigned char raw[SP_POOL_ID_LEN / 2];
    sqlite3_randomness((int)sizeof(raw), raw);
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(id + 2 * i, 3, "%02x", raw[i]);
}

int sp_state_pool_create(sp_state *st, const char *name, const char *path, unsigned nodes,
                         sp_pool_row *row, sp_err *err)
{
    stmt q;
    memset(row, 0, sizeof(*row));
    new_pool_id(row->id);
    snprintf(row->name, sizeof(row->name), "%s", name);
    snprintf(row->path, sizeof(row->path), "%s", path ? path : "");
    snprintf(row->state, sizeof(row->state), "planning");
    row->nodes_wanted = nodes;
    row->created_at = row->updated_at = now_s();
    int rc = prepare(st, &q,
                     "INSERT INTO pools (id, name, path, state, nodes_wanted, created_at,"
                     " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                     "recording a new pool", err);
    if (rc)
        return rc;
    bind_text(&q, 1, row->id);
    bind_text(&q, 2, row->name);
    bind_text(&q, 3, row->path);
    bind_text(&q, 4, row->state);
    sqlite3_bind_int(q.s, 5, (int)nodes);
    sqlite3_bind_int64(q.s, 6, row->created_at);
    sqlite3_bind_int64(q.s, 7, row->updated_at);
    return run(&q, err);
}

static void read_pool(sqlite3_stmt *s, void *row)
{
    sp_pool_row *r = row;
    memset(r, 0, sizeof(*r));
    col_text(s, 0, r->id, sizeof(r->id));
    col_text(s, 1, r->name, sizeof(r->name));
    col_text(s, 2, r->path, sizeof(r->path));
    col_text(s, 3, r->state, sizeof(r->state));
    r->nodes_wanted = (unsigned)sqlite3_column_int(s, 4);
    r->created_at = sqlite3_column_int64(s, 5);
    r->updated_at = sqlite3_column_int64(s, 6);
}

#define POOL_COLUMNS "id, name, path, state, nodes_wanted, created_at, updated_at"

int sp_state_pool_find(sp_state *st, const char *name, sp_pool_row *row, sp_err *err)
{
    stmt q;
    int rc = prepare(st, &q, "SELECT " POOL_COLUMNS " FROM pools WHERE name = ?",
                     "looking up a pool", err);
    if (rc)
        return rc;
    bind_text(&q, 1, name);
    int step = sqlite3_step(q.s);
    if (step == SQLITE_ROW)
        read_pool(q.s, row);
    else if (step == SQLITE_DONE)
        rc = sp_err_set(err, SP_E_NOTFOUND, "no pool named '%s' here; `skypool ls` lists them",
                        name);
    else
        rc = db_fail(st, step, q.what, err);
    sqlite3_finalize(q.s);
    return rc;
}

int sp_state_pool_set(sp_state *st, const char *pool_id, const char *state, sp_err *err)
{
    stmt q;
    int rc = prepare(st, &q, "UPDATE pools SET state = ?, updated_at = ? WHERE id = ?",
                     "updating a pool", err);
    if (rc)
        return rc;
    bind_text(&q, 1, state);
    sqlite3_bind_int64(q.s, 2, now_s());
    bind_text(&q, 3, pool_id);
    return run(&q, err);
}

int sp_state_pool_delete(sp_state *st, const char *pool_id, sp_err *err)
{
    stmt q;
    int rc = prepare(st, &q, "DELETE FROM pools WHERE id = ?", "forgetting a pool", err);
    if (rc)
        return rc;
    bind_text(&q, 1, pool_id);
    return run(&q, err);
}

int sp_state_pools(sp_state *st, sp_pool_fn fn, void *ctx, sp_err *err)
{
    stmt q;
    int rc = prepare(st, &q, "SELECT " POOL_COLUMNS " FROM pools ORDER BY name",
                     "listing pools", err);
    struct pool_cb cb = {fn, ctx};
    return rc ? rc : each_row(&q, read_pool, sizeof(sp_pool_row), deliver_pool, &cb, err);
}

/* ---- Nodes --------------------------------------------------------------------------------- */

#define NODE_COLUMNS                                                                            \
    "pool_id, idx, attempt, state, provider, region, zone, instance_type, market, price,"       \
    " cloud_id, public_ip, private_ip, check_verdict, updated_at, accel, accel_count,"     \
    " accel_mem_mib"

int sp_state_node_put(sp_state *st, const sp_node_row *r, sp_err *err)
{
    stmt q;
    int rc = prepare(st, &q,
                     "INSERT OR REPLACE INTO nodes (" NODE_COLUMNS ")"
                     " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     "recording a node", err);
    if (rc)
        return rc;
    const char *texts[] = {r->state,  r->provider,  r->region,    r->zone,
                           r->instance_type, r->market};
    bind_text(&q, 1, r->pool_id);
    sqlite3_bind_int(q.s, 2, (int)r->idx);
    sqlite3_bind_int(q.s, 3, (int)r->attempt);
    for (int i = 0; i < 6; i++)
        bind_text(&q, 4 + i, texts[i]);
    sqlite3_bind_double(q.s, 10, r->price);
    bind_text(&q, 11, r->cloud_id);
    bind_text(&q, 12, r->public_ip);
    bind_text(&q, 13, r->private_ip);
    bind_text(&q, 14, r->check);
    sqlite3_bind_int64(q.s, 15, now_s());
    bind_text(&q, 16, r->accel);
    sqlite3_bind_int(q.s, 17, (int)r->accel_count);
    sqlite3_bind_int(q.s, 18, (int)r->accel_mem_mib);
    return run(&q, err);
}

static void read_node(sqlite3_stmt *s, void *row)
{
    sp_node_row *r = row;
    memset(r, 0, sizeof(*r));
    col_text(s, 0, r->pool_id, sizeof(r->pool_id));
    r->idx = (unsigned)sqlite3_column_int(s, 1);
    r->attempt = (unsigned)sqlite3_column_int(s, 2);
    col_text(s, 3, r->state, sizeof(r->state));
    col_text(s, 4, r->provider, sizeof(r->provider));
    col_text(s, 5, r->region, sizeof(r->region));
    col_text(s, 6, r->zone, sizeof(r->zone));
    col_text(s, 7, r->instance_type, sizeof(r->instance_type));
    col_text(s, 8, r->market, sizeof(r->market));
    r->price = sqlite3_column_double(s, 9);
    col_text(s, 10, r->cloud_id, sizeof(r->cloud_id));
    col_text(s, 11, r->public_ip, sizeof(r->public_ip));
    col_text(s, 12, r->private_ip, sizeof(r->private_ip));
    col_text(s, 13, r->check, sizeof(r->check));
    r->updated_at = sqlite3_column_int64(s, 14);
    col_text(s, 15, r->accel, sizeof(r->accel));
    r->accel_count = (unsigned)sqlite3_column_int(s, 16);
    r->accel_mem_mib = (unsigned)sqlite3_column_int(s, 17);
}

int sp_state_nodes(sp_state *st, const char *pool_id, sp_node_fn fn, void *ctx, sp_err *err)
{
    stmt q;
    int rc = prepare(st, &q, "SELECT " NODE_COLUMNS " FROM nodes WHERE pool_id = ? ORDER BY idx",
                     "listing nodes", err);
    if (rc)
        return rc;
    bind_text(&q, 1, pool_id);
    struct node_cb cb = {fn, ctx};
    return each_row(&q, read_node, sizeof(sp_node_row), deliver_node, &cb, err);
}

/* ---- Node checks --------------------------------------------------------------------------- */

int sp_state_check_put(sp_state *st, const sp_check_row *c, sp_err *err)
{
    stmt q;
    int rc = prepare(st, &q,
                     "INSERT INTO checks (pool_id, idx, cloud_id, checked_at, verdict, summary,"
                     " workers, report) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                     "recording a node check", err);
    if (rc)
        return rc;
    bind_text(&q, 1, c->pool_id);
    sqlite3_bind_int(q.s, 2, (int)c->idx);
    bind_text(&q, 3, c->cloud_id);
    sqlite3_bind_int64(q.s, 4, c->checked_at ? c->checked_at : now_s());
    bind_text(&q, 5, c->verdict);
    bind_text(&q, 6, c->summary);
    bind_text(&q, 7, c->workers ? c->workers : "");
    bind_text(&q, 8, c->report ? c->report : "");
    return run(&q, err);
}

int sp_state_check_last(sp_state *st, const char *pool_id, unsigned idx, sp_check_row *c,
                        char **report, sp_err *err)
{
    memset(c, 0, sizeof(*c));
    if (report)
        *report = NULL;
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(st->db,
                           "SELECT cloud_id, checked_at, verdict, summary, workers, report"
                           " FROM checks WHERE pool_id = ? AND idx = ? ORDER BY id DESC LIMIT 1",
                           -1, &s, NULL) != SQLITE_OK)
        return db_fail(st, sqlite3_errcode(st->db), "reading node checks", err);
    sqlite3_bind_text(s, 1, pool_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(s, 2, (int)idx);
    int step = sqlite3_step(s), rc = SP_OK;
    if (step == SQLITE_ROW) {
        snprintf(c->pool_id, sizeof(c->pool_id), "%s", pool_id);
        c->idx = idx;
        col_text(s, 0, c->cloud_id, sizeof(c->cloud_id));
        c->checked_at = sqlite3_column_int64(s, 1);
        col_text(s, 2, c->verdict, sizeof(c->verdict));
        col_text(s, 3, c->summary, sizeof(c->summary));
        const unsigned char *w = sqlite3_column_text(s, 4);
        const unsigned char *r = sqlite3_column_text(s, 5);
        c->workers_copy = w && *w ? strdup((const char *)w) : NULL;
        if (report && r && *r)
            *report = strdup((const char *)r);
    } else if (step == SQLITE_DONE)
        rc = sp_err_set(err, SP_E_NOTFOUND, "node %u of the pool has not been checked", idx);
    else
        rc = db_fail(st, step, "reading node checks", err);
    sqlite3_finalize(s);
    return rc;
}

/* ---- Journal ------------------------------------------------------------------------------- */

int sp_state_op_begin(sp_state *st, const sp_op_row *in, int64_t *id, sp_err *err)
{
    stmt q;
    int rc = prepare(st, &q,
                     "INSERT INTO ops (pool_id, node_idx, kind, provider, region, token,"
                     " cloud_id, started_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                     "journaling an intent", err);
    if (rc)
        return rc;
    bind_text(&q, 1, in->pool_id);
    sqlite3_bind_int(q.s, 2, in->node_idx);
    bind_text(&q, 3, in->kind);
    bind_text(&q, 4, in->provider);
    bind_text(&q, 5, in->region);
    bind_text(&q, 6, in->token);
    bind_text(&q, 7, in->cloud_id);
    sqlite3_bind_int64(q.s, 8, now_s());
    rc = run(&q, err);
    *id = rc ? 0 : sqlite3_last_insert_rowid(st->db);
    return rc;
}

int sp_state_op_end(sp_state *st, int64_t id, const char *outcome, const char *cloud_id,
                    const char *detail, sp_err *err)
{
    stmt q;
    int rc = prepare(st, &q,
                     "UPDATE ops SET finished_at = ?, outcome = ?,"
                     " cloud_id = CASE WHEN ? = '' THEN cloud_id ELSE ? END, detail = ?"
                     " WHERE id = ?",
                     "journaling an outcome", err);
    if (rc)
        return rc;
    sqlite3_bind_int64(q.s, 1, now_s());
    bind_text(&q, 2, outcome);
    bind_text(&q, 3, cloud_id);
    bind_text(&q, 4, cloud_id);
    bind_text(&q, 5, detail);
    sqlite3_bind_int64(q.s, 6, id);
    return run(&q, err);
}

static void read_op(sqlite3_stmt *s, void *row)
{
    sp_op_row *r = row;
    memset(r, 0, sizeof(*r));
    r->id = sqlite3_column_int64(s, 0);
    col_text(s, 1, r->pool_id, sizeof(r->pool_id));
    r->node_idx = sqlite3_column_int(s, 2);
    col_text(s, 3, r->kind, sizeof(r->kind));
    col_text(s, 4, r->provider, sizeof(r->provider));
    col_text(s, 5, r->region, sizeof(r->region));
    col_text(s, 6, r->token, sizeof(r->token));
    col_text(s, 7, r->cloud_id, sizeof(r->cloud_id));
    r->started_at = sqlite3_column_int64(s, 8);
    r->finished_at = sqlite3_column_int64(s, 9);
    col_text(s, 10, r->outcome, sizeof(r->outcome));
    col_text(s, 11, r->detail, sizeof(r->detail));
}

int sp_state_ops_unfinished(sp_state *st, const char *pool_id, sp_op_fn fn, void *ctx,
                            sp_err *err)
{
    stmt q;
    int rc = prepare(st, &q,
                     "SELECT id, pool_id, node_idx, kind, provider, region, token, cloud_id,"
                     " started_at, finished_at, outcome, detail FROM ops"
                     " WHERE pool_id = ? AND finished_at = 0 ORDER BY id",
                     "reading the journal", err);
    if (rc)
        return rc;
    bind_text(&q, 1, pool_id);
    struct op_cb cb = {fn, ctx};
    return each_row(&q, read_op, sizeof(sp_op_row), deliver_op, &cb, err);
}
