/*
 * AWS credentials, region and endpoints, found where the AWS SDKs and CLI find them
 * (internal to the AWS provider). Everything is read through the host (host->getenv) and the
 * shared files; nothing here talks to the network.
 */
#ifndef SKYPOOL_AWS_CONFIG_H
#define SKYPOOL_AWS_CONFIG_H

#include "sigv4.h"

#include <skypool/provider.h>

#define AWS_CONFIG_FILE_MAX (1024 * 1024) /* larger shared files are refused */

typedef struct aws_config {
    aws_credentials creds;      /* creds.access_key_id[0] == 0 when none were found */
    char region[64];            /* "" when none */
    char region_source[256];
    char profile[128];          /* the profile in use ("default" when none is named) */
    char why_no_creds[512];     /* when none were found: what was looked at, and what to do */
    /* Additions. */
    char credentials_file[1024]; /* the shared credentials file looked at ("" without HOME) */
    char config_file[1024];     /* the shared config file looked at */
    char warning[512];          /* "" or a note for `skypool check`: a credentials file that
                                   group or others can read */
} aws_config;

/*
 * Credentials, in the AWS SDKs' order: AWS_ACCESS_KEY_ID + AWS_SECRET_ACCESS_KEY (+
 * AWS_SECURITY_TOKEN or AWS_SESSION_TOKEN); then the profile (AWS_PROFILE, else
 * AWS_DEFAULT_PROFILE, else "default"): static keys in the shared credentials file
 * (AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials), then in the config file
 * (AWS_CONFIG_FILE, else ~/.aws/config; "[profile NAME]" sections, "[default]").
 * Profiles that get credentials another way (role_arn, web identity, SSO, credential_process)
 * and container or instance metadata credentials are not supported: why_no_creds says so.
 * Region: AWS_REGION > AWS_DEFAULT_REGION > the profile's region.
 *
 * SP_OK when the files could be read, with or without credentials. Errors: SP_E_AUTH for a
 * named profile that neither file has, or half a key pair (environment or file); SP_E_IO for a
 * file that exists but cannot be read; SP_E_INVALID for a file botocore would refuse to parse
 * (duplicate sections or keys, lines that are neither "[section]" nor "key = value"), a file
 * over 1 MiB, or a malformed value. No message ever carries a secret or a token.
 */
int aws_config_load(const sp_host *host, aws_config *cfg, sp_err *err);

/*
 * Endpoint for a service in a region, as the SDKs resolve it: AWS_ENDPOINT_URL_<SERVICE_ID>
 * (EC2, SERVICE_QUOTAS, STS) > AWS_ENDPOINT_URL > https://<prefix>.<region>.amazonaws.com
 * (prefix: ec2, servicequotas, sts; amazonaws.com.cn in cn- regions). The variables are
 * ignored when AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is "true". service is "ec2",
 * "servicequotas" or "sts". Writes into buf, without a trailing '/'.
 */
int aws_endpoint(const sp_host *host, const char *service, const char *region, char *buf,
                 size_t size, sp_err *err);

/* Wipes the secrets (and everything else) in *cfg. */
void aws_config_wipe(aws_config *cfg);

#endif
