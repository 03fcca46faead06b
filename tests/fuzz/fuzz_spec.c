/* libFuzzer target: the accelerator spec grammar, printing and matching. */
#include <skypool/skypool.h>

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    sp_spec spec;
    sp_err err;
    if (sp_spec_parse(text, &spec, &err) == SP_OK) {
        char out[2048];
        sp_spec_format(&spec, out, sizeof(out));
        sp_offer o = {.struct_size = sizeof(o), .accelerator = "H100-SXM", .accel_count = 8};
        for (unsigned i = 0; i < spec.n_terms; i++)
            (void)sp_spec_term_matches(&spec.terms[i], &o);
    }
    sp_spec_term term;
    (void)sp_spec_term_parse(text, &term, &err);
    free(text);
    return 0;
}
