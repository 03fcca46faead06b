/* Canonical printed form of accelerator specs, and matching offers against a term. */
#include "accel.h"
#include "util.h"

#include <stdio.h>
#include <string.h>

static const char *vendor_name(sp_vendor v)
{
    switch (v) {
    case SP_VENDOR_NVIDIA: return "NVIDIA";
    case SP_VENDOR_AMD: return "AMD";
    case SP_VENDOR_AWS: return "AWS";
    case SP_VENDOR_HABANA: return "Habana";
    }
    return "";
}

static bool one_family(const sp_spec_term *t)
{
    for (unsigned i = 1; i < t->n_models; i++)
        if (strcmp(t->models[i]->family, t->models[0]->family) != 0)
            return false;
    return true;
}

/* "NVIDIA H100 (80GB SXM5 | 80GB PCIe | NVL 94GB)": the display names less the shared prefix. */
static void print_family(sp_buf *b, const sp_spec_term *t)
{
    const sp_accel_model *m0 = t->models[0];
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "%s %s ", vendor_name(m0->vendor), m0->family);
    sp_buf_printf(b, "%s %s (", vendor_name(m0->vendor), m0->family);
    for (unsigned i = 0; i < t->n_models; i++) {
        const char *d = t->models[i]->display;
        if (strncmp(d, prefix, strlen(prefix)) == 0)
            d += strlen(prefix);
        sp_buf_printf(b, "%s%s", i ? " | " : "", d);
    }
    sp_buf_puts(b, ")");
}

static void print_models(sp_buf *b, const sp_spec_term *t)
{
    /* A name-less term ("24GB+") has no alias: it stands for its memory constraint. */
    bool named = sp_accel_alias_find(t->name) != NULL;
    if (t->n_models == 1)
        sp_buf_puts(b, t->models[0]->display);
    else if (named && one_family(t))
        print_family(b, t);
    else
        sp_buf_printf(b, "NVIDIA GPU with %s%uGB", t->mem_at_least ? ">=" : "", t->mem_gib);
}

static void print_term(sp_buf *b, const sp_spec_term *t)
{
    print_models(b, t);
    if (t->count_min == t->count_max)
        sp_buf_printf(b, " x%u", t->count_min);
    else
        sp_buf_printf(b, " x%u..%u", t->count_min, t->count_max);
    if (t->exact)
        sp_buf_puts(b, " (exact)");
}

static int finish(sp_buf *b, char *buf, size_t size)
{
    if (b->oom) {
        sp_buf_free(b);
        return -1;
    }
    int n = (int)b->len;
    if (size)
        sp_strlcpy(buf, b->data ? b->data : "", size);
    sp_buf_free(b);
    return n;
}

int sp_spec_term_format(const sp_spec_term *term, char *buf, size_t size)
{
    sp_buf b;
    sp_buf_init(&b);
    print_term(&b, term);
    return finish(&b, buf, size);
}

int sp_spec_format(const sp_spec *spec, char *buf, size_t size)
{
    sp_buf b;
    sp_buf_init(&b);
    const char *open = spec->kind == SP_SPEC_ANY_OF ? "{" : "[";
    const char *close = spec->kind == SP_SPEC_ANY_OF ? "}" : "]";
    if (spec->kind != SP_SPEC_ONE)
        sp_buf_puts(&b, open);
    for (unsigned i = 0; i < spec->n_terms; i++) {
        if (i)
            sp_buf_puts(&b, ", ");
        print_term(&b, &spec->terms[i]);
    }
    if (spec->kind != SP_SPEC_ONE)
        sp_buf_puts(&b, close);
    return finish(&b, buf, size);
}

bool sp_spec_term_matches(const sp_spec_term *term, const sp_offer *offer)
{
    if (!offer->accelerator || offer->accel_count < term->count_min ||
        offer->accel_count > term->count_max)
        return false;
    for (unsigned i = 0; i < term->n_models; i++)
        if (sp_streq_nocase(term->models[i]->key, offer->accelerator))
            return true;
    return false;
}
