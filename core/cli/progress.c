/*
 * Progress of up and down: on a terminal, one live line per node (state, provider, zone,
 * instance type, price, elapsed); otherwise one plain line per event; with --json, one JSON
 * object per event.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LIVE_MAX 256

static const char *const kind_names[] = {"info",    "launching",  "launched", "failover",
                                         "running", "failed",     "terminated", "adopted",
                                         "checking", "checked",   "replacing"};

/* What a node's line says: the event, or for a check its verdict. */
static const char *what(const sp_event *ev)
{
    return ev->kind == SP_EV_CHECKED && ev->row && ev->row->check[0] ? ev->row->check
                                                                     : kind_names[ev->kind];
}

void cli_progress_init(cli_progress *p, bool json, unsigned nodes)
{
    memset(p, 0, sizeof(*p));
    p->json = json;
    p->live = !json && isatty(STDOUT_FILENO) && nodes <= LIVE_MAX;
    p->nodes = nodes;
    p->started = time(NULL);
    if (p->live)
        p->lines = calloc(nodes, sizeof(*p->lines));
    p->live = p->live && p->lines;
}

void cli_progress_done(cli_progress *p)
{
    free(p->lines);
    p->lines = NULL;
}

static void json_event(const sp_event *ev)
{
    json_t *j = json_pack("{s:s, s:I}", "event", kind_names[ev->kind], "node",
                          (json_int_t)ev->node);
    const sp_node_row *r = ev->row;
    if (r)
        json_object_update_new(j, json_pack("{s:s, s:s, s:s, s:s, s:s, s:f, s:s, s:s, s:I}",
                                            "state", r->state, "provider", r->provider,
                                            "region", r->region, "zone", r->zone,
                                            "instance_type", r->instance_type, "price",
                                            r->price, "market", r->market, "instance_id",
                                            r->cloud_id, "attempt", (json_int_t)r->attempt));
    if (r && ev->kind == SP_EV_CHECKED)
        json_object_set_new(j, "check", json_string(r->check));
    if (ev->text)
        json_object_set_new(j, "message", json_string(ev->text));
    cli_print_json_line(j);
}

static void plain_event(const sp_event *ev)
{
    const sp_node_row *r = ev->row;
    if (ev->node < 0) {
        printf("%s\n", ev->text ? ev->text : "");
    } else if (ev->kind == SP_EV_LAUNCHING && r) {
        printf("node %d: launching %s (%s) in %s %s %s at $%.2f/h\n", ev->node,
               r->instance_type, r->market, r->provider, r->region, r->zone, r->price);
    } else {
        printf("node %d: %s%s%s%s%s\n", ev->node, what(ev), r && r->cloud_id[0] ? " " : "",
               r ? r->cloud_id : "", ev->text ? ": " : "", ev->text ? ev->text : "");
    }
    fflush(stdout);
}

/* Redraws every node's line in place. */
static void live_event(cli_progress *p, const sp_event *ev)
{
    if (ev->node < 0 || (unsigned)ev->node >= p->nodes) {
        if (p->drawn)
            printf("\033[%uA\033[J", p->nodes);
        plain_event(ev);
        p->drawn = false;
    } else {
        cli_live_line *l = &p->lines[ev->node];
        if (!l->since)
            l->since = time(NULL);
        snprintf(l->text, sizeof(l->text), "%-10.10s %-12.12s %-14.14s %-14.14s %-16.16s %-9.9s $%7.2f/h",
                 what(ev), ev->row ? ev->row->provider : "",
                 ev->row ? ev->row->region : "", ev->row ? ev->row->zone : "",
                 ev->row ? ev->row->instance_type : "", ev->row ? ev->row->market : "",
                 ev->row ? ev->row->price : 0.0);
        if (p->drawn)
            printf("\033[%uA", p->nodes);
    }
    time_t now = time(NULL);
    for (unsigned i = 0; i < p->nodes; i++)
        printf("\033[2Knode %-4u %s %4lds\n", i, p->lines[i].text[0] ? p->lines[i].text : "waiting",
               (long)(p->lines[i].since ? now - p->lines[i].since : now - p->started));
    p->drawn = true;
    fflush(stdout);
}

void cli_progress_event(void *ctx, const sp_event *ev)
{
    cli_progress *p = ctx;
    if (p->json)
        json_event(ev);
    else if (p->live)
        live_event(p, ev);
    else
        plain_event(ev);
}

bool cli_confirm(const char *question, bool yes)
{
    if (yes)
        return true;
    if (!isatty(STDIN_FILENO)) {
        fprintf(stderr, "skypool: %s: not confirmed (no terminal to ask on); pass --yes to "
                        "confirm in scripts\n",
                question);
        return false;
    }
    fprintf(stderr, "%s [y/N] ", question);
    char answer[16] = "";
    if (!fgets(answer, sizeof(answer), stdin))
        return false;
    return answer[0] == 'y' || answer[0] == 'Y';
}
