/* Small helpers shared by the unit tests. */
#ifndef SKYPOOL_TESTUTIL_H
#define SKYPOOL_TESTUTIL_H

#include <stddef.h>

/* $SKYPOOL_SOURCE_DIR (set by CTest), or "." when run by hand from the source root. */
const char *tu_source_dir(void);
/* "<source dir>/<rel>" in a static buffer that the next call overwrites. */
const char *tu_source_path(const char *rel);
/* Reads a whole file into a NUL-terminated malloc'd buffer, or NULL. */
char *tu_read_file(const char *path, size_t *len);
/* Runs a shell command, captures stdout (and stderr when merge is set) into a malloc'd buffer;
 * returns the exit status (or -1). */
int tu_run(const char *cmd, char **out, int merge_stderr);
/* A fresh private temporary directory; removed by tu_rmtree. */
char *tu_mkdtemp(void);
void tu_rmtree(const char *dir);

#endif
