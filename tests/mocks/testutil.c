#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

const char *tu_source_dir(void)
{
    const char *d = getenv("SKYPOOL_SOURCE_DIR");
    return d && *d ? d : ".";
}

const char *tu_source_path(const char *rel)
{
    static char buf[4096];
    snprintf(buf, sizeof(buf), "%s/%s", tu_source_dir(), rel);
    return buf;
}

char *tu_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (cap - n - 1 == 0) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = bigger;
            cap *= 2;
        }
    }
    fclose(f);
    if (!buf)
        return NULL;
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

int tu_run(const char *cmd, char **out, int merge_stderr)
{
    char full[8192];
    snprintf(full, sizeof(full), "%s%s", cmd, merge_stderr ? " 2>&1" : "");
    FILE *p = popen(full, "r");
    if (!p)
        return -1;
    size_t cap = 8192, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += got;
        if (cap - n - 1 == 0) {
            char *bigger = realloc(buf, cap * 2);
            if (!bigger)
                break;
            buf = bigger;
            cap *= 2;
        }
    }
    int status = pclose(p);
    if (buf)
        buf[n] = '\0';
    if (out)
        *out = buf;
    else
        free(buf);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

char *tu_mkdtemp(void)
{
    char tmpl[] = "/tmp/skypool-test-XXXXXX";
    char *d = mkdtemp(tmpl);
    return d ? strdup(d) : NULL;
}

void tu_rmtree(const char *dir)
{
    char cmd[4200];
    if (!dir || strncmp(dir, "/tmp/skypool-test-", 18) != 0)
        return;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
}
