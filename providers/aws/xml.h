/*
 * A small read-only XML tree for EC2's answers, built from expat's events (internal to the
 * provider). Elements only: attributes, comments and processing instructions are dropped, names
 * lose their namespace prefix, and an element's text is its own character data, concatenated.
 * Documents with a DTD are refused, so no entity is ever declared or expanded.
 */
#ifndef SKYPOOL_AWS_XML_H
#define SKYPOOL_AWS_XML_H

#include <stddef.h>

#define AWS_XML_MAX_BYTES (64u << 20) /* the host's cap on a response body */
#define AWS_XML_MAX_DEPTH 64          /* EC2's answers nest about ten deep */

typedef struct aws_xml_node aws_xml_node;
typedef struct aws_xml_doc aws_xml_doc;

/* The tree of buf[0..len), or NULL when it is not well-formed XML, has a DTD, nests deeper
 * than AWS_XML_MAX_DEPTH, is larger than AWS_XML_MAX_BYTES, or memory ran out. */
aws_xml_doc *aws_xml_parse(const char *buf, size_t len);
void aws_xml_free(aws_xml_doc *doc);

aws_xml_node *aws_xml_root(const aws_xml_doc *doc);
/* The element's name without prefix; its text ("" when none, or when node is NULL). */
const char *aws_xml_name(const aws_xml_node *node);
const char *aws_xml_content(const aws_xml_node *node);
/* The first child element, and the next sibling element; NULL when none. */
aws_xml_node *aws_xml_first(const aws_xml_node *node);
aws_xml_node *aws_xml_next(const aws_xml_node *node);

#endif
