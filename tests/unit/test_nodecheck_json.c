/*
 * nodecheck/json.c, the report's JSON writer: RFC 8259 string escaping, well-formed UTF-8 out
 * of any bytes in, and numbers that do not change with the locale.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "json.h"

#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* The text of one string value, without the trailing newline of nc_json_finish. */
static void written_as(const char *in, const char *want)
{
    nc_json w;
    nc_json_init(&w, false);
    nc_json_string(&w, NULL, in);
    assert_true(nc_json_finish(&w));
    w.data[w.len - 1] = '\0';
    if (strcmp(w.data, want) != 0)
        fail_msg("string \"%s\" written as %s, expected %s", in, w.data, want);
    nc_json_free(&w);
}

static void fixed_as(double v, int decimals, const char *want)
{
    nc_json w;
    nc_json_init(&w, false);
    nc_json_fixed(&w, NULL, v, decimals);
    assert_true(nc_json_finish(&w));
    w.data[w.len - 1] = '\0';
    if (strcmp(w.data, want) != 0)
        fail_msg("%.17g (%d decimals) written as %s, expected %s", v, decimals, w.data, want);
    nc_json_free(&w);
}

static void strings_are_escaped_per_rfc_8259(void **state)
{
    (void)state;
    written_as("plain", "\"plain\"");
    written_as("", "\"\"");
    written_as("say \"hi\"\\", "\"say \\\"hi\\\"\\\\\"");
    written_as("a\nb\tc\rd\be\ff", "\"a\\nb\\tc\\rd\\be\\ff\"");
    written_as("\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\"");
    written_as("/", "\"/\"");
}

static void utf8_passes_and_bad_bytes_become_replacement_characters(void **state)
{
    (void)state;
    written_as("Grüße ✓ 𝄞", "\"Grüße ✓ 𝄞\"");
    written_as("\xff", "\"\\ufffd\"");                 /* never valid */
    written_as("a\xc3", "\"a\\ufffd\"");               /* truncated sequence */
    written_as("\xc0\xaf", "\"\\ufffd\\ufffd\"");      /* overlong "/" */
    written_as("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""); /* a UTF-16 surrogate */
    written_as("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""); /* > U+10FFFF */
    written_as("\xe2\x82x", "\"\\ufffd\\ufffdx\"");
}

static void null_string_is_null(void **state)
{
    (void)state;
    written_as(NULL, "null");
}

static void fixed_point_numbers(void **state)
{
    (void)state;
    fixed_as(12.5, 2, "12.5");
    fixed_as(12.0, 2, "12");
    fixed_as(0.0, 3, "0");
    fixed_as(-0.0, 3, "0");
    fixed_as(-3.25, 1, "-3.3"); /* llround: half away from zero */
    fixed_as(-0.004, 2, "0");
    fixed_as(2874.9876, 1, "2875");
    fixed_as(1.05, 1, "1.1");
    fixed_as(0.000001, 6, "0.000001");
    fixed_as(123456789.123, 6, "123456789.123");
    fixed_as(NAN, 2, "null");
    fixed_as(INFINITY, 2, "null");
    fixed_as(1e16, 2, "null");
}

static void integers_at_the_limits(void **state)
{
    (void)state;
    nc_json w;
    nc_json_init(&w, false);
    nc_json_array_begin(&w, NULL);
    nc_json_int(&w, NULL, INT64_MIN);
    nc_json_int(&w, NULL, INT64_MAX);
    nc_json_int(&w, NULL, 0);
    nc_json_uint(&w, NULL, UINT64_MAX);
    nc_json_array_end(&w);
    assert_true(nc_json_finish(&w));
    assert_string_equal(w.data, "[-9223372036854775808,9223372036854775807,0,"
                                "18446744073709551615]\n");
    nc_json_free(&w);
}

/* printf("%.1f") would write 12,5 here; the writer must not. */
static void numbers_ignore_the_locale(void **state)
{
    (void)state;
    if (!setlocale(LC_ALL, "de_DE.UTF-8")) {
        print_message("de_DE.UTF-8 is not installed (scripts/setup-debian.sh makes it): "
                      "checking under the C locale only\n");
    } else {
        char probe[16];
        snprintf(probe, sizeof(probe), "%.1f", 12.5);
        assert_string_equal(probe, "12,5"); /* the locale is really in force */
    }
    fixed_as(12.5, 1, "12.5");
    fixed_as(-1234567.25, 2, "-1234567.25");
    setlocale(LC_ALL, "C");
}

static void documents_nest_with_commas_and_keys(void **state)
{
    (void)state;
    nc_json w;
    nc_json_init(&w, false);
    nc_json_object_begin(&w, NULL);
    nc_json_string(&w, "a", "x");
    nc_json_array_begin(&w, "list");
    nc_json_bool(&w, NULL, true);
    nc_json_null(&w, NULL);
    nc_json_object_begin(&w, NULL);
    nc_json_object_end(&w);
    nc_json_array_end(&w);
    nc_json_array_begin(&w, "empty");
    nc_json_array_end(&w);
    nc_json_string(&w, "k\"ey", "v");
    nc_json_object_end(&w);
    assert_true(nc_json_finish(&w));
    assert_string_equal(w.data,
                        "{\"a\":\"x\",\"list\":[true,null,{}],\"empty\":[],\"k\\\"ey\":\"v\"}\n");
    nc_json_free(&w);
}

static void pretty_output_indents(void **state)
{
    (void)state;
    nc_json w;
    nc_json_init(&w, true);
    nc_json_object_begin(&w, NULL);
    nc_json_int(&w, "n", 1);
    nc_json_array_begin(&w, "l");
    nc_json_int(&w, NULL, 2);
    nc_json_array_end(&w);
    nc_json_object_end(&w);
    assert_true(nc_json_finish(&w));
    assert_string_equal(w.data, "{\n  \"n\": 1,\n  \"l\": [\n    2\n  ]\n}\n");
    nc_json_free(&w);
}

static void unbalanced_documents_are_refused(void **state)
{
    (void)state;
    nc_json w;
    nc_json_init(&w, false);
    nc_json_object_begin(&w, NULL);
    assert_false(nc_json_finish(&w)); /* still open */
    nc_json_free(&w);
    nc_json_init(&w, false);
    nc_json_array_end(&w); /* nothing to close */
    assert_false(nc_json_finish(&w));
    nc_json_free(&w);
    nc_json_init(&w, false);
    for (int i = 0; i < NC_JSON_MAX_DEPTH + 1; i++)
        nc_json_array_begin(&w, NULL);
    assert_true(w.failed);
    nc_json_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(strings_are_escaped_per_rfc_8259),
        cmocka_unit_test(utf8_passes_and_bad_bytes_become_replacement_characters),
        cmocka_unit_test(null_string_is_null),
        cmocka_unit_test(fixed_point_numbers),
        cmocka_unit_test(integers_at_the_limits),
        cmocka_unit_test(numbers_ignore_the_locale),
        cmocka_unit_test(documents_nest_with_commas_and_keys),
        cmocka_unit_test(pretty_output_indents),
        cmocka_unit_test(unbalanced_documents_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
