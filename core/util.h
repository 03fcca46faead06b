/* Internal helpers shared by the core's modules. Not part of any public interface. */
#ifndef SKYPOOL_UTIL_H
#define SKYPOOL_UTIL_H

#include <stdbool.h>
#include <stddef.h>

/* The closest candidate to word by edit distance (case-insensitive, adjacent transpositions
 * count as one edit), if it is close enough to be a plausible typo; else NULL. */
const char *sp_suggest(const char *word, const char *const *candidates, size_t n);
size_t sp_edit_distance(const char *a, const char *b);

/* Copies at most size-1 bytes and always terminates; returns strlen(src). */
size_t sp_strlcpy(char *dst, const char *src, size_t size);
bool sp_streq_nocase(const char *a, const char *b);
/* Runs fn(arg) on n threads at once (at most 64) and waits for them all; where no thread can be
 * made, runs it once on this one. fn takes its own work from arg until none is left. */
void sp_run_threads(unsigned n, void *(*fn)(void *), void *arg);
char *sp_strdup(const char *s);   /* NULL on NULL or out of memory */
char *sp_strndup(const char *s, size_t n);

/* A growable NUL-terminated string. A failed allocation sets oom and later appends do nothing. */
typedef struct sp_buf {
    char *data;
    size_t len;
    size_t cap;
    bool oom;
} sp_buf;

void sp_buf_init(sp_buf *b);
void sp_buf_free(sp_buf *b);
void sp_buf_append(sp_buf *b, const char *s, size_t n);
void sp_buf_puts(sp_buf *b, const char *s);
__attribute__((format(printf, 2, 3))) void sp_buf_printf(sp_buf *b, const char *fmt, ...);
/* Hands the string over to the caller (who frees it); b is left empty. NULL after oom. */
char *sp_buf_take(sp_buf *b);

#endif
