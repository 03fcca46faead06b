/*
 * libFuzzer target for the pool file reader: any input is either a pool or an error that says
 * where it went wrong. Crashes, leaks (LSan) and undefined behaviour (UBSan) are the findings;
 * the checks below add what a user relies on.
 */
#include <skypool/skypool.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A parsed pool keeps the promises of its fields. */
static void check_pool(const sp_pool *p)
{
    if (!p->name || !p->path || p->nodes < 1 || p->nodes > 1024 || p->accelerators.n_terms < 1)
        abort();
    for (unsigned i = 0; i < p->accelerators.n_terms; i++)
        if (p->accelerators.terms[i].n_models < 1)
            abort();
    if (p->max_hourly_usd < 0 || (p->n_mig > 0 && !p->mig[0]))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sp_pool *pool = NULL;
    sp_err err = {0};
    int rc = sp_pool_parse((const char *)data, size, "fuzz.yaml", &pool, &err);
    if (rc == SP_OK) {
        check_pool(pool);
        sp_pool_free(pool);
    } else if (pool || err.code != rc || strncmp(err.msg, "fuzz.yaml:", 10) != 0) {
        /* Every refusal names the file (and, but for size and memory, the place). */
        abort();
    }
    return 0;
}
