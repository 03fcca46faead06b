/*
 * EC2's answers as a tree, built from expat's streaming events.
 *
 * Nodes, names and texts live in a few large blocks that are freed together: a
 * DescribeInstanceTypes page is about 1 MB with tens of thousands of elements, and one malloc
 * per node would cost more than the parse. Expat runs without namespace processing (EC2 uses a
 * default namespace, and an undeclared prefix should not cost us an answer); names are cut at
 * their last ':' instead. A DOCTYPE stops the parser at once, so entity declarations, and with
 * them entity expansion and external entities, never happen.
 */
#include "xml.h"

#include <expat.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK_MIN (16u << 10)
#define BLOCK_MAX (4u << 20)
/* A tree takes a few times the bytes of its text (an empty element is 4 bytes of XML and
 * about 40 of tree); this bounds the worst a hostile answer can make us hold. */
#define ARENA_MAX (256u << 20)

struct aws_xml_node {
    const char *name;
    const char *text;
    aws_xml_node *first;
    aws_xml_node *next;
};

typedef struct block {
    struct block *next;
    size_t used, cap;
    max_align_t data[];
} block;

struct aws_xml_doc {
    block *blocks; /* newest first: the one allocations come from */
    size_t total;
    aws_xml_node *root;
};

typedef struct frame {
    aws_xml_node *node;
    aws_xml_node *last;  /* its last child so far, to append in document order */
    size_t text_start;   /* where its text starts in the builder's scratch */
} frame;

/* The open elements' texts are a stack in one scratch buffer: a child's text follows its
 * parent's and is cut off when the child ends, so a parent's text stays contiguous. */
typedef struct builder {
    XML_Parser parser;
    aws_xml_doc *doc;
    frame stack[AWS_XML_MAX_DEPTH];
    size_t depth;
    char *text;
    size_t text_len, text_cap;
    bool failed;
} builder;

/* ---- The arena ------------------------------------------------------------------------------ */

static block *new_block(aws_xml_doc *doc, size_t need)
{
    size_t cap = doc->blocks ? doc->blocks->cap * 2 : BLOCK_MIN;
    if (cap > BLOCK_MAX)
        cap = BLOCK_MAX;
    if (cap < need)
        cap = need;
    if (cap > ARENA_MAX - doc->total)
        return NULL;
    block *b = malloc(offsetof(block, data) + cap);
    if (!b)
        return NULL;
    *b = (block){doc->blocks, 0, cap};
    doc->blocks = b;
    doc->total += cap;
    return b;
}

static void *arena_alloc(aws_xml_doc *doc, size_t size, size_t align)
{
    block *b = doc->blocks;
    size_t at = b ? (b->used + align - 1) & ~(align - 1) : 0;
    if (!b || at > b->cap || size > b->cap - at) {
        b = new_block(doc, size);
        if (!b)
            return NULL;
        at = 0;
    }
    b->used = at + size;
    return (unsigned char *)b->data + at;
}

static const char *arena_strndup(aws_xml_doc *doc, const char *s, size_t n)
{
    char *d = arena_alloc(doc, n + 1, 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

/* ---- Expat's events ------------------------------------------------------------------------- */

/* Expat may still deliver an event or two after a stop (the end of an empty element whose
 * start failed), so every handler checks failed first. */
static void fail(builder *b)
{
    if (!b->failed) {
        b->failed = true;
        XML_StopParser(b->parser, XML_FALSE);
    }
}

static void link_node(builder *b, aws_xml_node *n)
{
    if (b->depth == 0) {
        b->doc->root = n;
        return;
    }
    frame *parent = &b->stack[b->depth - 1];
    if (parent->last)
        parent->last->next = n;
    else
        parent->node->first = n;
    parent->last = n;
}

static void XMLCALL on_start(void *user, const XML_Char *name, const XML_Char **attrs)
{
    builder *b = user;
    (void)attrs;
    if (b->failed)
        return;
    if (b->depth == AWS_XML_MAX_DEPTH) {
        fail(b);
        return;
    }
    const char *colon = strrchr(name, ':');
    const char *local = colon ? colon + 1 : name;
    aws_xml_node *n = arena_alloc(b->doc, sizeof(*n), alignof(aws_xml_node));
    const char *copy = n ? arena_strndup(b->doc, local, strlen(local)) : NULL;
    if (!copy) {
        fail(b);
        return;
    }
    *n = (aws_xml_node){copy, "", NULL, NULL};
    link_node(b, n);
    b->stack[b->depth++] = (frame){n, NULL, b->text_len};
}

static void XMLCALL on_end(void *user, const XML_Char *name)
{
    builder *b = user;
    (void)name;
    if (b->failed || b->depth == 0)
        return;
    frame *f = &b->stack[--b->depth];
    size_t n = b->text_len - f->text_start;
    if (n) {
        const char *text = arena_strndup(b->doc, b->text + f->text_start, n);
        if (!text) {
            fail(b);
            return;
        }
        f->node->text = text;
    }
    b->text_len = f->text_start;
}

static void XMLCALL on_text(void *user, const XML_Char *s, int len)
{
    builder *b = user;
    if (b->failed || b->depth == 0 || len <= 0)
        return;
    size_t n = (size_t)len;
    if (n > b->text_cap - b->text_len) {
        size_t cap = b->text_cap ? b->text_cap : 256;
        while (cap - b->text_len < n)
            cap *= 2;
        char *text = realloc(b->text, cap);
        if (!text) {
            fail(b);
            return;
        }
        b->text = text;
        b->text_cap = cap;
    }
    memcpy(b->text + b->text_len, s, n);
    b->text_len += n;
}

static void XMLCALL on_doctype(void *user, const XML_Char *name, const XML_Char *sysid,
                               const XML_Char *pubid, int has_internal_subset)
{
    (void)name, (void)sysid, (void)pubid, (void)has_internal_subset;
    fail(user);
}

/* Unreachable while on_doctype stops every DTD; kept so that no later change to that rule
 * can let an entity declaration through. */
static void XMLCALL on_entity(void *user, const XML_Char *name, int is_param,
                              const XML_Char *value, int value_len, const XML_Char *base,
                              const XML_Char *sysid, const XML_Char *pubid,
                              const XML_Char *notation)
{
    (void)name, (void)is_param, (void)value, (void)value_len, (void)base, (void)sysid;
    (void)pubid, (void)notation;
    fail(user);
}

/* ---- The API -------------------------------------------------------------------------------- */

static bool run_parser(builder *b, const char *buf, size_t len)
{
    b->parser = XML_ParserCreate(NULL);
    if (!b->parser)
        return false;
    XML_SetUserData(b->parser, b);
    XML_SetElementHandler(b->parser, on_start, on_end);
    XML_SetCharacterDataHandler(b->parser, on_text);
    XML_SetStartDoctypeDeclHandler(b->parser, on_doctype);
    XML_SetEntityDeclHandler(b->parser, on_entity);
    XML_SetParamEntityParsing(b->parser, XML_PARAM_ENTITY_PARSING_NEVER);
    bool ok = XML_Parse(b->parser, buf, (int)len, XML_TRUE) == XML_STATUS_OK;
    XML_ParserFree(b->parser);
    return ok && !b->failed && b->doc->root;
}

aws_xml_doc *aws_xml_parse(const char *buf, size_t len)
{
    if (!buf || len > AWS_XML_MAX_BYTES)
        return NULL;
    aws_xml_doc *doc = calloc(1, sizeof(*doc));
    builder *b = doc ? calloc(1, sizeof(*b)) : NULL;
    if (!b) {
        free(doc);
        return NULL;
    }
    b->doc = doc;
    bool ok = run_parser(b, buf, len);
    free(b->text);
    free(b);
    if (!ok) {
        aws_xml_free(doc);
        return NULL;
    }
    return doc;
}

void aws_xml_free(aws_xml_doc *doc)
{
    if (!doc)
        return;
    for (block *b = doc->blocks, *next; b; b = next) {
        next = b->next;
        free(b);
    }
    free(doc);
}

aws_xml_node *aws_xml_root(const aws_xml_doc *doc)
{
    return doc ? doc->root : NULL;
}

const char *aws_xml_name(const aws_xml_node *node)
{
    return node ? node->name : "";
}

const char *aws_xml_content(const aws_xml_node *node)
{
    return node ? node->text : "";
}

aws_xml_node *aws_xml_first(const aws_xml_node *node)
{
    return node ? node->first : NULL;
}

aws_xml_node *aws_xml_next(const aws_xml_node *node)
{
    return node ? node->next : NULL;
}
