/* A host services table for provider unit tests, scripted with cmocka's expect/will_return. */
#ifndef SKYPOOL_FAKE_HOST_H
#define SKYPOOL_FAKE_HOST_H

#include "registry.h"

/*
 * catalog_query checks expected "provider", "count_min", "count_max" and "want_spot" values and
 * emits will_return(fake_catalog_query, N) offers (an H100-SXM x count_min offer each).
 */
void fake_host_init(sp_registry *reg);
/* Loads build/providers/<name>.so against the fake host. */
void fake_host_load(sp_registry *reg, const char *name, sp_plugin *plugin);

/* Collects what a provider emits. */
typedef struct fake_sink {
    sp_offer_sink sink;
    int offers;
    char notes[8][SP_ERR_MSG_MAX];
    int n_notes;
} fake_sink;

void fake_sink_init(fake_sink *s);

#endif
