#include <skypool/skypool.h>

static const char *const messages[] = {
    [SP_OK] = "success",
    [SP_E_INVALID] = "invalid input",
    [SP_E_NOMEM] = "out of memory",
    [SP_E_IO] = "input/output error",
    [SP_E_NOTFOUND] = "not found",
    [SP_E_UNSUPPORTED] = "not supported by this provider",
    [SP_E_ABI] = "incompatible plugin",
    [SP_E_PERM] = "permission denied",
    [SP_E_AUTH] = "no usable credentials",
    [SP_E_NETWORK] = "network error",
    [SP_E_CAPACITY] = "no capacity",
    [SP_E_QUOTA] = "quota exceeded",
    [SP_E_THROTTLED] = "rate limited",
    [SP_E_BUDGET] = "over budget",
    [SP_E_PROTOCOL] = "unexpected answer from the provider",
    [SP_E_INTERNAL] = "internal error",
    [SP_E_CANCELLED] = "cancelled",
};

const char *sp_strerror(int status)
{
    if (status < 0 || (size_t)status >= sizeof(messages) / sizeof(messages[0]) ||
        !messages[status])
        return "unknown error";
    return messages[status];
}

const char *sp_version(void)
{
    return SKYPOOL_VERSION;
}
