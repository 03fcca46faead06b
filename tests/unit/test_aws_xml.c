/* The AWS provider's XML tree (xml.c) and ec2.h's helpers over it, on the shapes EC2 answers
 * with, and on what a hostile or broken answer could hold. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "ec2.h"
#include "xml.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static aws_xml_doc *parse(const char *s)
{
    return aws_xml_parse(s, strlen(s));
}

static const char *text_of(const aws_xml_node *n, const char *path)
{
    static char buf[512];
    return aws_xml_text(n, path, buf, sizeof(buf));
}

/* ---- EC2's shapes ---------------------------------------------------------------------------- */

static void test_aws_error_document(void **state)
{
    (void)state;
    aws_xml_doc *doc = parse(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        "<Response><Errors><Error><Code>InsufficientInstanceCapacity</Code><Message>We currently "
        "do not have sufficient p5.48xlarge capacity in the Availability Zone you requested "
        "(us-east-1a).</Message></Error></Errors><RequestID>9f1c-77</RequestID></Response>\n");
    assert_non_null(doc);
    aws_xml_node *root = aws_xml_root(doc);
    assert_string_equal(aws_xml_name(root), "Response");
    aws_xml_node *error = aws_xml_path(root, "Errors/Error");
    assert_non_null(error);
    assert_string_equal(text_of(error, "Code"), "InsufficientInstanceCapacity");
    assert_string_equal(text_of(error, "Message"),
                        "We currently do not have sufficient p5.48xlarge capacity in the "
                        "Availability Zone you requested (us-east-1a).");
    assert_string_equal(text_of(root, "RequestID"), "9f1c-77");
    aws_xml_free(doc);
}

static const char instance_types[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<DescribeInstanceTypesResponse xmlns=\"http://ec2.amazonaws.com/doc/2016-11-15/\">\n"
    "    <requestId>1b0f-aa</requestId>\n"
    "    <instanceTypeSet>\n"
    "        <item>\n"
    "            <instanceType>p5.48xlarge</instanceType>\n"
    "            <vCpuInfo><defaultVCpus>192</defaultVCpus></vCpuInfo>\n"
    "            <memoryInfo><sizeInMiB>2097152</sizeInMiB></memoryInfo>\n"
    "            <gpuInfo>\n"
    "                <gpus>\n"
    "                    <item>\n"
    "                        <name>H100</name>\n"
    "                        <manufacturer>NVIDIA</manufacturer>\n"
    "                        <count>8</count>\n"
    "                        <memoryInfo><sizeInMiB>81920</sizeInMiB></memoryInfo>\n"
    "                    </item>\n"
    "                </gpus>\n"
    "                <totalGpuMemoryInMiB>655360</totalGpuMemoryInMiB>\n"
    "            </gpuInfo>\n"
    "        </item>\n"
    "        <item>\n"
    "            <instanceType>g6.xlarge</instanceType>\n"
    "            <vCpuInfo><defaultVCpus>4</defaultVCpus></vCpuInfo>\n"
    "            <gpuInfo><gpus><item><name>L4</name><count>1</count></item></gpus></gpuInfo>\n"
    "        </item>\n"
    "    </instanceTypeSet>\n"
    "    <nextToken>AAEAAdGVzdA==</nextToken>\n"
    "</DescribeInstanceTypesResponse>\n";

static void test_aws_instance_types(void **state)
{
    (void)state;
    aws_xml_doc *doc = parse(instance_types);
    assert_non_null(doc);
    aws_xml_node *root = aws_xml_root(doc);
    assert_string_equal(aws_xml_name(root), "DescribeInstanceTypesResponse");
    aws_xml_node *it = aws_xml_item(aws_xml_child(root, "instanceTypeSet"), NULL);
    assert_non_null(it);
    assert_string_equal(text_of(it, "instanceType"), "p5.48xlarge");
    assert_int_equal(aws_xml_ull(it, "vCpuInfo/defaultVCpus"), 192);
    assert_int_equal(aws_xml_ull(it, "memoryInfo/sizeInMiB"), 2097152);
    aws_xml_node *gpu = aws_xml_item(aws_xml_path(it, "gpuInfo/gpus"), NULL);
    assert_string_equal(text_of(gpu, "name"), "H100");
    assert_string_equal(text_of(gpu, "manufacturer"), "NVIDIA");
    assert_int_equal(aws_xml_ull(gpu, "count"), 8);
    assert_int_equal(aws_xml_ull(gpu, "memoryInfo/sizeInMiB"), 81920);
    assert_string_equal(text_of(it, "gpuInfo/gpus/item/name"), "H100");
    assert_int_equal(aws_xml_ull(it, "gpuInfo/totalGpuMemoryInMiB"), 655360);
    assert_null(aws_xml_item(NULL, gpu));

    it = aws_xml_item(NULL, it);
    assert_string_equal(text_of(it, "instanceType"), "g6.xlarge");
    assert_string_equal(text_of(it, "gpuInfo/gpus/item/name"), "L4");
    assert_null(aws_xml_item(NULL, it));
    assert_string_equal(text_of(root, "nextToken"), "AAEAAdGVzdA==");
    aws_xml_free(doc);
}

static void test_aws_prefixed_names(void **state)
{
    (void)state;
    aws_xml_doc *doc = parse("<ec2:Response xmlns:ec2=\"http://ec2.amazonaws.com/doc/2016-11-15/\">"
                             "<ec2:Errors><ec2:Error><ec2:Code>AuthFailure</ec2:Code></ec2:Error>"
                             "</ec2:Errors></ec2:Response>");
    assert_non_null(doc);
    assert_string_equal(aws_xml_name(aws_xml_root(doc)), "Response");
    assert_string_equal(text_of(aws_xml_root(doc), "Errors/Error/Code"), "AuthFailure");
    aws_xml_free(doc);
}

/* ---- Text ------------------------------------------------------------------------------------ */

static void test_aws_leaf_text(void **state)
{
    (void)state;
    aws_xml_doc *doc = parse("<r><esc>a&amp;b&lt;c&gt;&quot;&apos;&#x41;&#66;</esc>"
                             "<cdata><![CDATA[<not a tag> & ]]>tail</cdata>"
                             "<ws>  spaced\n out  </ws><empty/><also></also>"
                             "<utf8>Zürich \xe2\x9c\x93</utf8>"
                             "<mixed>one<child>inner</child>two<!-- no -->three</mixed></r>");
    assert_non_null(doc);
    aws_xml_node *r = aws_xml_root(doc);
    assert_string_equal(text_of(r, "esc"), "a&b<c>\"'AB");
    assert_string_equal(text_of(r, "cdata"), "<not a tag> & tail");
    assert_string_equal(text_of(r, "ws"), "  spaced\n out  ");
    assert_string_equal(text_of(r, "empty"), "");
    assert_string_equal(text_of(r, "also"), "");
    assert_string_equal(text_of(r, "utf8"), "Zürich \xe2\x9c\x93");
    assert_string_equal(text_of(r, "mixed"), "onetwothree");
    assert_string_equal(text_of(r, "mixed/child"), "inner");
    char small[4];
    assert_string_equal(aws_xml_text(r, "esc", small, sizeof(small)), "a&b");
    aws_xml_free(doc);
}

/* GetConsoleOutput's text runs to 64 KiB and more: longer than an arena block. */
static void test_aws_long_text(void **state)
{
    (void)state;
    size_t n = 300000;
    char *xml = malloc(n + 64);
    assert_non_null(xml);
    size_t len = (size_t)sprintf(xml, "<r><a>x</a><output>");
    for (size_t i = 0; i < n; i++)
        xml[len++] = (char)('A' + i % 26);
    len += (size_t)sprintf(xml + len, "</output><b>y</b></r>");
    aws_xml_doc *doc = aws_xml_parse(xml, len);
    assert_non_null(doc);
    const char *out = aws_xml_content(aws_xml_child(aws_xml_root(doc), "output"));
    assert_int_equal(strlen(out), n);
    assert_memory_equal(out, xml + strlen("<r><a>x</a><output>"), n);
    assert_string_equal(text_of(aws_xml_root(doc), "a"), "x");
    assert_string_equal(text_of(aws_xml_root(doc), "b"), "y");
    aws_xml_free(doc);
    free(xml);
}

/* ---- Paths and items ------------------------------------------------------------------------- */

static void test_aws_missing_paths(void **state)
{
    (void)state;
    aws_xml_doc *doc = parse(instance_types);
    aws_xml_node *root = aws_xml_root(doc);
    assert_null(aws_xml_child(root, "nope"));
    assert_null(aws_xml_path(root, "instanceTypeSet/item/nope"));
    assert_null(aws_xml_path(root, "nope/instanceType"));
    assert_string_equal(text_of(root, "instanceTypeSet/item/gpuInfo/nope"), "");
    assert_int_equal(aws_xml_ull(root, "nope"), 0);
    char long_part[200];
    memset(long_part, 'a', sizeof(long_part) - 1);
    long_part[sizeof(long_part) - 1] = '\0';
    assert_null(aws_xml_path(root, long_part));
    assert_null(aws_xml_child(NULL, "item"));
    assert_null(aws_xml_path(NULL, "a/b"));
    assert_string_equal(text_of(NULL, "a"), "");
    assert_null(aws_xml_item(NULL, NULL));
    assert_null(aws_xml_item(aws_xml_child(root, "requestId"), NULL));
    assert_null(aws_xml_root(NULL));
    assert_null(aws_xml_first(NULL));
    assert_null(aws_xml_next(NULL));
    aws_xml_free(doc);
    aws_xml_free(NULL);
}

static void test_aws_item_iteration(void **state)
{
    (void)state;
    aws_xml_doc *doc = parse("<r><set> <item>1</item><other>x</other>\n<item>2</item>"
                             "<!-- c --><item>3</item><itemx>4</itemx></set></r>");
    assert_non_null(doc);
    const char *want[] = {"1", "2", "3"};
    size_t n = 0;
    for (aws_xml_node *it = aws_xml_item(aws_xml_child(aws_xml_root(doc), "set"), NULL); it;
         it = aws_xml_item(NULL, it)) {
        assert_true(n < 3);
        assert_string_equal(aws_xml_content(it), want[n++]);
    }
    assert_int_equal(n, 3);
    aws_xml_free(doc);
}

/* ---- What is refused ------------------------------------------------------------------------- */

static void test_aws_malformed_refused(void **state)
{
    (void)state;
    const char *bad[] = {"", "   ", "not xml", "<r>", "<r></s>", "<r/><s/>", "<r>text",
                         "<r a=1/>", "<r>&undefined;</r>", "<r>&#0;</r>", "<1r/>",
                         "<r><a></r></a>", "</r>", "<?xml version=\"1.0\"?>"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        aws_xml_doc *doc = parse(bad[i]);
        if (doc)
            fail_msg("accepted: %s", bad[i]);
    }
    assert_null(aws_xml_parse("<r>a\0b</r>", 10));
    assert_null(aws_xml_parse(NULL, 0));
    /* The host never hands over more than 64 MiB; more is refused before it is read. */
    char *huge = calloc(1, AWS_XML_MAX_BYTES + 1u);
    assert_non_null(huge);
    memcpy(huge, "<r>", 3);
    memset(huge + 3, ' ', AWS_XML_MAX_BYTES - 7u);
    memcpy(huge + AWS_XML_MAX_BYTES - 4u, "</r>", 5);
    assert_null(aws_xml_parse(huge, AWS_XML_MAX_BYTES + 1u));
    aws_xml_doc *doc = aws_xml_parse(huge, AWS_XML_MAX_BYTES);
    assert_non_null(doc); /* exactly the limit is fine */
    aws_xml_free(doc);
    free(huge);
}

static void test_aws_doctype_refused(void **state)
{
    (void)state;
    const char *bad[] = {
        "<!DOCTYPE r><r/>",
        "<!DOCTYPE r SYSTEM \"http://example.com/r.dtd\"><r/>",
        "<!DOCTYPE r [<!ENTITY x SYSTEM \"file:///etc/passwd\">]><r>&x;</r>",
        ("<!DOCTYPE r [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\">"
         "<!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\"><!ENTITY d \"&c;&c;&c;&c;&c;&c;&c;&c;"
         "&c;&c;\">]><r>&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;</r>"),
        "<!DOCTYPE r [<!ENTITY % p SYSTEM \"http://example.com/p\"> %p;]><r/>",
        ("<?xml version=\"1.0\"?>\n<!DOCTYPE Response [<!ENTITY code \"AuthFailure\">]>"
         "<Response><Errors><Error><Code>&code;</Code></Error></Errors></Response>"),
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        aws_xml_doc *doc = parse(bad[i]);
        if (doc)
            fail_msg("accepted: %s", bad[i]);
    }
}

static char *nested(size_t depth)
{
    char *s = malloc(depth * 7 + 1), *p = s;
    assert_non_null(s);
    for (size_t i = 0; i < depth; i++)
        p += sprintf(p, "<a>");
    for (size_t i = 0; i < depth; i++)
        p += sprintf(p, "</a>");
    return s;
}

static void test_aws_deep_nesting_refused(void **state)
{
    (void)state;
    char *ok = nested(AWS_XML_MAX_DEPTH);
    aws_xml_doc *doc = parse(ok);
    assert_non_null(doc);
    const aws_xml_node *n = aws_xml_root(doc);
    size_t depth = 0;
    for (; n; n = aws_xml_first(n))
        depth++;
    assert_int_equal(depth, AWS_XML_MAX_DEPTH);
    aws_xml_free(doc);
    free(ok);
    size_t sizes[] = {AWS_XML_MAX_DEPTH + 1, 100000};
    for (size_t i = 0; i < 2; i++) {
        char *deep = nested(sizes[i]);
        assert_null(parse(deep));
        free(deep);
    }
    /* An empty element at the limit: expat reports its end even after the start was refused. */
    char *s = malloc(AWS_XML_MAX_DEPTH * 7 + 8), *p = s;
    for (size_t i = 0; i < AWS_XML_MAX_DEPTH; i++)
        p += sprintf(p, "<a>");
    p += sprintf(p, "<b/>");
    for (size_t i = 0; i < AWS_XML_MAX_DEPTH; i++)
        p += sprintf(p, "</a>");
    assert_null(parse(s));
    free(s);
}

/* ---- Size ------------------------------------------------------------------------------------ */

#define LARGE_ITEMS 20000

static char *large_document(size_t *len)
{
    size_t cap = 256 + (size_t)LARGE_ITEMS * 256;
    char *s = malloc(cap);
    assert_non_null(s);
    size_t n = (size_t)snprintf(s, cap, "<DescribeInstanceTypesResponse xmlns=\"http://ec2."
                                        "amazonaws.com/doc/2016-11-15/\"><instanceTypeSet>");
    for (unsigned i = 0; i < LARGE_ITEMS; i++)
        n += (size_t)snprintf(s + n, cap - n,
                              "<item><instanceType>t%u.xlarge</instanceType><vCpuInfo>"
                              "<defaultVCpus>%u</defaultVCpus></vCpuInfo><gpuInfo><gpus><item>"
                              "<name>G%u</name><count>%u</count></item></gpus></gpuInfo></item>\n",
                              i, i * 4, i % 7, i % 9);
    n += (size_t)snprintf(s + n, cap - n, "</instanceTypeSet><nextToken>end</nextToken>"
                                          "</DescribeInstanceTypesResponse>");
    assert_true(n < cap);
    *len = n;
    return s;
}

static void test_aws_large_document(void **state)
{
    (void)state;
    size_t len;
    char *xml = large_document(&len);
    aws_xml_doc *doc = aws_xml_parse(xml, len);
    assert_non_null(doc);
    aws_xml_node *root = aws_xml_root(doc);
    unsigned i = 0;
    for (aws_xml_node *it = aws_xml_item(aws_xml_child(root, "instanceTypeSet"), NULL); it;
         it = aws_xml_item(NULL, it), i++) {
        char want[32];
        snprintf(want, sizeof(want), "t%u.xlarge", i);
        assert_string_equal(text_of(it, "instanceType"), want);
        assert_int_equal(aws_xml_ull(it, "vCpuInfo/defaultVCpus"), i * 4);
        snprintf(want, sizeof(want), "G%u", i % 7);
        assert_string_equal(text_of(it, "gpuInfo/gpus/item/name"), want);
        assert_int_equal(aws_xml_ull(it, "gpuInfo/gpus/item/count"), i % 9);
    }
    assert_int_equal(i, LARGE_ITEMS);
    assert_string_equal(text_of(root, "nextToken"), "end");
    aws_xml_free(doc);
    free(xml);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_aws_error_document),
        cmocka_unit_test(test_aws_instance_types),
        cmocka_unit_test(test_aws_prefixed_names),
        cmocka_unit_test(test_aws_leaf_text),
        cmocka_unit_test(test_aws_long_text),
        cmocka_unit_test(test_aws_missing_paths),
        cmocka_unit_test(test_aws_item_iteration),
        cmocka_unit_test(test_aws_malformed_refused),
        cmocka_unit_test(test_aws_doctype_refused),
        cmocka_unit_test(test_aws_deep_nesting_refused),
        cmocka_unit_test(test_aws_large_document),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
