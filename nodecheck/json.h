/*
 * A small JSON writer (RFC 8259) into a growable buffer.
 *
 * Why not Jansson (which the core uses): skypool-nodecheck is copied alone onto GPU nodes that
 * have a driver and libc and nothing else, so it links nothing but libc. What it writes is a
 * fixed report, which needs no DOM. Numbers are formatted here, digit by digit, never through
 * printf's %f or %g: those honour LC_NUMERIC, and under de_DE.UTF-8 would print 12,5.
 */
#ifndef SKYPOOL_NODECHECK_JSON_H
#define SKYPOOL_NODECHECK_JSON_H

#include <stdbool.h>
#include <stddef.h>

#define NC_JSON_MAX_DEPTH 16

typedef struct nc_json {
    char *data; /* NUL-terminated; NULL until the first write */
    size_t len;
    size_t cap;
    bool pretty;
    bool failed; /* out of memory, or nesting misused: the text is not to be trusted */
    int depth;
    bool first[NC_JSON_MAX_DEPTH]; /* nothing written yet at that level */
} nc_json;

void nc_json_init(nc_json *w, bool pretty);
void nc_json_free(nc_json *w);

/* key is NULL for values inside an array, and for the top-level value. */
void nc_json_object_begin(nc_json *w, const char *key);
void nc_json_object_end(nc_json *w);
void nc_json_array_begin(nc_json *w, const char *key);
void nc_json_array_end(nc_json *w);
void nc_json_string(nc_json *w, const char *key, const char *s); /* NULL -> null */
void nc_json_int(nc_json *w, const char *key, long long v);
void nc_json_uint(nc_json *w, const char *key, unsigned long long v);
/* v rounded to at most decimals (0..9) places, trailing zeros dropped; non-finite or beyond
 * +-1e15 -> null. */
void nc_json_fixed(nc_json *w, const char *key, double v, int decimals);
void nc_json_bool(nc_json *w, const char *key, bool v);
void nc_json_null(nc_json *w, const char *key);

/* Appends s as a JSON string literal: quotes, escapes per RFC 8259, and each byte that is not
 * part of well-formed UTF-8 replaced by U+FFFD, so the result is always valid JSON text. */
void nc_json_append_quoted(nc_json *w, const char *s);

/* Ends the document (a newline); false if anything failed or a container is still open. */
bool nc_json_finish(nc_json *w);

#endif
