/*
 * libFuzzer target: the AWS shared credentials and config files (INI as botocore reads them).
 * The input is split at the first "\n==\n" into the credentials file and the config file;
 * both are loaded for the profile "dev", then for the default one.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char creds_path[64], config_path[64];
static const char *profile;

static const char *fake_getenv(const sp_host *host, const char *name)
{
    (void)host;
    if (!strcmp(name, "AWS_SHARED_CREDENTIALS_FILE"))
        return creds_path;
    if (!strcmp(name, "AWS_CONFIG_FILE"))
        return config_path;
    if (!strcmp(name, "AWS_PROFILE"))
        return profile;
    if (!strcmp(name, "HOME"))
        return "/nonexistent";
    return NULL;
}

static void write_file(const char *path, const uint8_t *data, size_t size)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    if (size && fwrite(data, 1, size, f) != size)
        abort();
    fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!creds_path[0]) {
        snprintf(creds_path, sizeof(creds_path), "/tmp/skypool-fuzz-creds-%d", (int)getpid());
        snprintf(config_path, sizeof(config_path), "/tmp/skypool-fuzz-config-%d", (int)getpid());
    }
    size_t split = size;
    for (size_t i = 0; i + 4 <= size; i++)
        if (memcmp(data + i, "\n==\n", 4) == 0) {
            split = i;
            break;
        }
    write_file(creds_path, data, split);
    write_file(config_path, data + (split < size ? split + 4 : size),
               split < size ? size - split - 4 : 0);
    sp_host host = {.abi_major = SP_PROVIDER_ABI_MAJOR, .struct_size = sizeof(host),
                    .getenv = fake_getenv};
    const char *profiles[] = {"dev", NULL};
    for (size_t i = 0; i < 2; i++) {
        aws_config cfg;
        sp_err err;
        profile = profiles[i];
        aws_config_load(&host, &cfg, &err);
        aws_config_wipe(&cfg);
    }
    unlink(creds_path);
    unlink(config_path);
    return 0;
}
