/* Interned strings: offers repeat the same few region, zone and type names many times. */
#include "strpool.h"

#include "util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct sp_strpool {
    char **slots;
    size_t cap;
    size_t n;
};

static uint64_t hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

sp_strpool *sp_strpool_new(void)
{
    sp_strpool *p = calloc(1, sizeof(*p));
    if (p && !(p->slots = calloc(p->cap = 256, sizeof(char *)))) {
        free(p);
        p = NULL;
    }
    return p;
}

static bool grow(sp_strpool *p)
{
    size_t cap = p->cap * 2;
    char **slots = calloc(cap, sizeof(char *));
    if (!slots)
        return false;
    for (size_t i = 0; i < p->cap; i++) {
        if (!p->slots[i])
            continue;
        size_t j = hash(p->slots[i]) & (cap - 1);
        while (slots[j])
            j = (j + 1) & (cap - 1);
        slots[j] = p->slots[i];
    }
    free(p->slots);
    p->slots = slots;
    p->cap = cap;
    return true;
}

const char *sp_strpool_intern(sp_strpool *p, const char *s)
{
    if (!s)
        return NULL;
    if (p->n * 2 >= p->cap && !grow(p))
        return NULL;
    size_t i = hash(s) & (p->cap - 1);
    while (p->slots[i]) {
        if (strcmp(p->slots[i], s) == 0)
            return p->slots[i];
        i = (i + 1) & (p->cap - 1);
    }
    if (!(p->slots[i] = sp_strdup(s)))
        return NULL;
    p->n++;
    return p->slots[i];
}

void sp_strpool_free(sp_strpool *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->cap; i++)
        free(p->slots[i]);
    free(p->slots);
    free(p);
}
