/*
 * Makes, through the AWS provider's own code paths, the calls that botocore_calls.py makes with
 * botocore, so that aws.sh can compare the parameters both sent through the fault proxy.
 */
#include "aws.h"
#include "registry.h"

#include <stdio.h>
#include <string.h>

static int ignore_node(sp_node_sink *sink, const sp_node *n)
{
    (void)sink;
    (void)n;
    return SP_OK;
}

int main(void)
{
    sp_registry reg;
    sp_err err = {0};
    if (sp_registry_open(&reg, &err) != SP_OK || !sp_registry_find(&reg, "aws")) {
        fprintf(stderr, "cannot load the aws provider: %s\n", err.msg);
        return 1;
    }
    const sp_plugin *aws = sp_registry_find(&reg, "aws");
    sp_offer o = {.struct_size = sizeof(o), .region = "us-east-1", .zone = "use1-az4",
                  .instance_type = "p5.48xlarge", .accelerator = "H100-SXM", .arch = "x86_64"};
    int failures = aws->table.availability(aws->ctx, &o, SP_MARKET_ON_DEMAND, &err) != SP_OK;
    sp_tag tags[] = {{"skypool:pool", "cmp"}};
    const char *regions[] = {"us-east-1"};
    sp_node_filter f = {sizeof(f), tags, 1, regions, 1};
    sp_node_sink sink = {sizeof(sink), NULL, ignore_node};
    failures += aws->table.describe_nodes(aws->ctx, &f, &sink, &err) != SP_OK;
    char source[256], ami[64];
    failures += aws->table.check_credentials(aws->ctx, source, sizeof(source), &err) != SP_OK;
    aws_find_image(aws->ctx, "us-east-1", "x86_64", false, ami, sizeof(ami), &err);
    failures += aws_ensure_key_pair(aws->ctx, "us-east-1", "cmp-key",
                                    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPjkfFsWTqeJvMyCiUEkhZ/0f1zERSCrQqPfHoJZp5qi itest", &err) != SP_OK;
    if (failures)
        fprintf(stderr, "%d calls failed; last: %s\n", failures, err.msg);
    sp_registry_close(&reg);
    return failures != 0;
}
