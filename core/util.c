#include "util.h"

#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SUGGEST_MAX_LEN 64

size_t sp_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > SUGGEST_MAX_LEN || lb > SUGGEST_MAX_LEN)
        return (size_t)-1;
    /* Optimal string alignment distance: three rows of the DP table are enough. */
    size_t rows[3][SUGGEST_MAX_LEN + 1];
    size_t *prev2 = rows[0], *prev = rows[1], *cur = rows[2];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            int ca = tolower((unsigned char)a[i - 1]), cb = tolower((unsigned char)b[j - 1]);
            size_t cost = ca != cb;
            size_t best = prev[j] + 1;
            if (cur[j - 1] + 1 < best)
                best = cur[j - 1] + 1;
            if (prev[j - 1] + cost < best)
                best = prev[j - 1] + cost;
            if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == cb && prev2[j - 2] + 1 < best)
                best = prev2[j - 2] + 1;
            cur[j] = best;
        }
        size_t *t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    return prev[lb];
}

static bool is_prefix_nocase(const char *prefix, const char *s)
{
    for (; *prefix; prefix++, s++)
        if (tolower((unsigned char)*prefix) != tolower((unsigned char)*s))
            return false;
    return true;
}

const char *sp_suggest(const char *word, const char *const *candidates, size_t n)
{
    size_t wl = strlen(word);
    /* A typo is at most a third of the word, and at least one edit. */
    size_t limit = wl / 3 > 0 ? wl / 3 : 1;
    if (limit > 3)
        limit = 3;
    const char *best = NULL;
    size_t best_score = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        size_t d = sp_edit_distance(word, candidates[i]);
        bool prefix = wl >= 2 && is_prefix_nocase(word, candidates[i]);
        if (d > limit && !prefix)
            continue;
        /* Among equally close names, one that the word begins ("H10" of "H100") wins. */
        size_t score = (d > limit ? limit : d) * 2 + (prefix ? 0 : 1);
        if (score < best_score) {
            best_score = score;
            best = candidates[i];
        }
    }
    return best;
}

size_t sp_strlcpy(char *dst, const char *src, size_t size)
{
    size_t n = strlen(src);
    if (size > 0) {
        size_t c = n < size - 1 ? n : size - 1;
        memcpy(dst, src, c);
        dst[c] = '\0';
    }
    return n;
}

bool sp_streq_nocase(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return false;
    return *a == *b;
}

char *sp_strndup(const char *s, size_t n)
{
    if (!s)
        return NULL;
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

char *sp_strdup(const char *s)
{
    return s ? sp_strndup(s, strlen(s)) : NULL;
}

void sp_buf_init(sp_buf *b)
{
    memset(b, 0, sizeof(*b));
}

void sp_buf_free(sp_buf *b)
{
    free(b->data);
    sp_buf_init(b);
}

static bool buf_reserve(sp_buf *b, size_t extra)
{
    if (b->oom)
        return false;
    if (b->len + extra + 1 <= b->cap)
        return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1)
        cap *= 2;
    char *d = realloc(b->data, cap);
    if (!d) {
        b->oom = true;
        return false;
    }
    b->data = d;
    b->cap = cap;
    return true;
}

void sp_buf_append(sp_buf *b, const char *s, size_t n)
{
    if (!buf_reserve(b, n))
        return;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void sp_buf_puts(sp_buf *b, const char *s)
{
    sp_buf_append(b, s, strlen(s));
}

void sp_buf_printf(sp_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !buf_reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

char *sp_buf_take(sp_buf *b)
{
    char *d = b->oom ? NULL : b->data;
    if (b->oom)
        free(b->data);
    else if (!d)
        d = sp_strdup("");
    sp_buf_init(b);
    return d;
}

void sp_run_threads(unsigned n, void *(*fn)(void *), void *arg)
{
    pthread_t threads[64];
    bool started[64] = {false};
    n = n > 64 ? 64 : n;
    for (unsigned i = 0; i < n; i++)
        started[i] = pthread_create(&threads[i], NULL, fn, arg) == 0;
    if (n && !started[0])
        fn(arg);
    for (unsigned i = 0; i < n; i++)
        if (started[i])
            pthread_join(threads[i], NULL);
}
