/* How offers and provider notes are shown, as text and as JSON (offers and plan share it). */
#include "cli.h"

#include <stdio.h>
#include <string.h>

const char *const cli_cand_headers[CLI_CAND_COLUMNS] = {
    "PROVIDER", "REGION", "ZONE", "INSTANCE", "ACCELERATORS", "MARKET", "$/H NODE", "$/H TOTAL",
    "BUDGET"};

static const char *market_name(sp_market m)
{
    return m == SP_MARKET_SPOT ? "spot" : "on-demand";
}

static const char *dash(const char *s)
{
    return s && *s && strcmp(s, "-") != 0 ? s : "-";
}

void cli_cand_cells(const sp_cand *c, char cells[][64])
{
    const sp_offer *o = &c->offer;
    snprintf(cells[0], 64, "%s", o->provider);
    snprintf(cells[1], 64, "%s", dash(o->region));
    snprintf(cells[2], 64, "%s", dash(o->zone));
    snprintf(cells[3], 64, "%s", o->instance_type);
    const sp_accel_model *m = sp_accel_by_key(o->accelerator);
    if (m && m->neuron_cores)
        snprintf(cells[4], 64, "%ux %s %uGB (%u NeuronCores)", o->accel_count, o->accelerator,
                 (o->accel_mem_mib + 512) / 1024, o->accel_count * m->neuron_cores);
    else
        snprintf(cells[4], 64, "%ux %s %uGB", o->accel_count, o->accelerator,
                 (o->accel_mem_mib + 512) / 1024);
    snprintf(cells[5], 64, "%s", market_name(c->market));
    snprintf(cells[6], 64, "%.2f", c->node_price);
    snprintf(cells[7], 64, "%.2f", c->pool_price);
    snprintf(cells[8], 64, "%s", c->over_budget ? "over" : "ok");
}

static json_t *price_or_null(double p)
{
    return p < 0 ? json_null() : json_real(p);
}

json_t *cli_cand_json(const sp_cand *c, size_t rank)
{
    const sp_offer *o = &c->offer;
    const sp_accel_model *m = sp_accel_by_key(o->accelerator);
    json_t *j = json_pack("{s:I, s:s, s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:o, s:o, s:s, s:s, "
                     "s:f, s:f, s:b, s:I}",
                     "rank", (json_int_t)rank, "provider", o->provider, "region", o->region,
                     "zone", o->zone, "instance_type", o->instance_type, "accelerator",
                     o->accelerator, "accelerator_count", (json_int_t)o->accel_count,
                     "accelerator_memory_mib", (json_int_t)o->accel_mem_mib, "vcpus",
                     (json_int_t)o->vcpus, "memory_mib", (json_int_t)o->mem_mib,
                     "price_on_demand", price_or_null(o->price_on_demand), "price_spot",
                     price_or_null(o->price_spot), "arch", o->arch, "market",
                     market_name(c->market), "node_price", c->node_price, "total_price",
                     c->pool_price, "within_budget", !c->over_budget, "term",
                     (json_int_t)c->term);
    if (j && m && m->neuron_cores)
        json_object_set_new(j, "neuron_cores_per_device", json_integer(m->neuron_cores));
    return j;
}

void cli_print_notes(const sp_offer_set *set, FILE *out)
{
    for (size_t i = 0; i < set->n_notes; i++)
        fprintf(out, "note: %s\n", set->notes[i]);
    if (set->unpriced)
        fprintf(out, "note: %zu offers have no price in this market and were left out\n",
                set->unpriced);
    if (set->too_small)
        fprintf(out, "note: %zu offers have fewer vCPUs or less memory than asked and were left out\n",
                set->too_small);
    if (set->no_mig)
        fprintf(out, "note: %zu offers have GPUs that cannot take the MIG layout and were left out\n",
                set->no_mig);
}

json_t *cli_notes_json(const sp_offer_set *set)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < set->n_notes; i++)
        json_array_append_new(a, json_string(set->notes[i]));
    return a;
}

void cli_print_cands(const sp_offer_set *set, size_t shown, const char *rank_header,
                     bool with_budget, FILE *out)
{
    size_t columns = with_budget ? CLI_CAND_COLUMNS + 1 : CLI_CAND_COLUMNS;
    const char *headers[CLI_CAND_COLUMNS + 1] = {rank_header};
    memcpy(headers + 1, cli_cand_headers, (columns - 1) * sizeof(char *));
    cli_table *t = cli_table_new(columns, headers);
    for (size_t i = 0; i < set->n && i < shown; i++) {
        char cells[CLI_CAND_COLUMNS + 1][64];
        /* A candidate over budget is never tried, so it has no place in the order. */
        if (set->items[i].over_budget)
            snprintf(cells[0], 64, "-");
        else
            snprintf(cells[0], 64, "%zu", i + 1);
        cli_cand_cells(&set->items[i], cells + 1);
        const char *row[CLI_CAND_COLUMNS + 1];
        for (size_t c = 0; c < columns; c++)
            row[c] = cells[c];
        cli_table_add(t, row);
    }
    if (set->n)
        cli_table_print(t, out);
    cli_table_free(t);
    if (set->n > shown)
        fprintf(out, "... %zu more (--all shows them)\n", set->n - shown);
}
