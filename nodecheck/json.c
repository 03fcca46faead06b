/* The JSON writer: see json.h for why it exists. */
#include "json.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void put(nc_json *w, const char *s, size_t n)
{
    if (w->failed)
        return;
    if (w->len + n + 1 > w->cap) {
        size_t cap = w->cap ? w->cap : 4096;
        while (w->len + n + 1 > cap)
            cap *= 2;
        char *data = realloc(w->data, cap);
        if (!data) {
            w->failed = true;
            return;
        }
        w->data = data;
        w->cap = cap;
    }
    memcpy(w->data + w->len, s, n);
    w->len += n;
    w->data[w->len] = '\0';
}

static void puts_(nc_json *w, const char *s)
{
    put(w, s, strlen(s));
}

void nc_json_init(nc_json *w, bool pretty)
{
    memset(w, 0, sizeof(*w));
    w->pretty = pretty;
    w->first[0] = true;
}

void nc_json_free(nc_json *w)
{
    free(w->data);
    memset(w, 0, sizeof(*w));
}

static void newline_indent(nc_json *w)
{
    if (!w->pretty)
        return;
    put(w, "\n", 1);
    for (int i = 0; i < w->depth; i++)
        put(w, "  ", 2);
}

/* The comma, line break and key that come before every value. */
static void before_value(nc_json *w, const char *key)
{
    if (w->depth > 0) {
        if (!w->first[w->depth])
            put(w, ",", 1);
        newline_indent(w);
    }
    w->first[w->depth] = false;
    if (key) {
        nc_json_append_quoted(w, key);
        puts_(w, w->pretty ? ": " : ":");
    }
}

static void open_(nc_json *w, const char *key, char c)
{
    before_value(w, key);
    put(w, &c, 1);
    if (w->depth + 1 >= NC_JSON_MAX_DEPTH) {
        w->failed = true;
        return;
    }
    w->first[++w->depth] = true;
}

static void close_(nc_json *w, char c)
{
    if (w->depth <= 0) {
        w->failed = true;
        return;
    }
    bool empty = w->first[w->depth];
    w->depth--;
    if (!empty)
        newline_indent(w);
    put(w, &c, 1);
}

void nc_json_object_begin(nc_json *w, const char *key)
{
    open_(w, key, '{');
}

void nc_json_object_end(nc_json *w)
{
    close_(w, '}');
}

void nc_json_array_begin(nc_json *w, const char *key)
{
    open_(w, key, '[');
}

void nc_json_array_end(nc_json *w)
{
    close_(w, ']');
}

/* Length of the well-formed UTF-8 sequence at s (RFC 3629: no overlong forms, no surrogates,
 * nothing above U+10FFFF), or 0 if the byte at s does not start one. */
static size_t utf8_len(const unsigned char *s)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return n;
}

void nc_json_append_quoted(nc_json *w, const char *str)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    put(w, "\"", 1);
    while (*s) {
        unsigned char c = *s;
        const char *esc = NULL;
        switch (c) {
        case '"':
            esc = "\\\"";
            break;
        case '\\':
            esc = "\\\\";
            break;
        case '\b':
            esc = "\\b";
            break;
        case '\f':
            esc = "\\f";
            break;
        case '\n':
            esc = "\\n";
            break;
        case '\r':
            esc = "\\r";
            break;
        case '\t':
            esc = "\\t";
            break;
        default:
            break;
        }
        if (esc) {
            puts_(w, esc);
            s++;
        } else if (c < 0x20 || c == 0x7F) {
            char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            put(w, u, sizeof(u));
            s++;
        } else {
            size_t n = utf8_len(s);
            if (n == 0) {
                puts_(w, "\\ufffd");
                s++;
            } else {
                put(w, (const char *)s, n);
                s += n;
            }
        }
    }
    put(w, "\"", 1);
}

void nc_json_string(nc_json *w, const char *key, const char *s)
{
    before_value(w, key);
    if (s)
        nc_json_append_quoted(w, s);
    else
        puts_(w, "null");
}

/* Decimal digits of v, most significant first, into the end of buf; returns the first. */
static char *digits(char *end, unsigned long long v)
{
    *end = '\0';
    do {
        *--end = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return end;
}

static void put_uint(nc_json *w, bool negative, unsigned long long v)
{
    char buf[24];
    if (negative)
        put(w, "-", 1);
    puts_(w, digits(buf + sizeof(buf) - 1, v));
}

void nc_json_int(nc_json *w, const char *key, long long v)
{
    before_value(w, key);
    /* The magnitude of LLONG_MIN is not a long long: negate in unsigned arithmetic. */
    unsigned long long mag = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    put_uint(w, v < 0, mag);
}

void nc_json_uint(nc_json *w, const char *key, unsigned long long v)
{
    before_value(w, key);
    put_uint(w, false, v);
}

void nc_json_fixed(nc_json *w, const char *key, double v, int decimals)
{
    before_value(w, key);
    if (decimals < 0)
        decimals = 0;
    if (decimals > 9)
        decimals = 9;
    if (!isfinite(v) || fabs(v) >= 1e15) {
        puts_(w, "null");
        return;
    }
    unsigned long long scale = 1;
    for (int i = 0; i < decimals; i++)
        scale *= 10;
    /* 1e15 * 1e9 would overflow; shed decimals until the scaled value fits in 2^63. */
    while (decimals > 0 && fabs(v) * (double)scale >= 9.0e18) {
        scale /= 10;
        decimals--;
    }
    unsigned long long r = (unsigned long long)llround(fabs(v) * (double)scale);
    unsigned long long ip = r / scale, fp = r % scale;
    put_uint(w, v < 0 && r != 0, ip);
    if (fp == 0)
        return;
    char frac[12];
    int n = decimals;
    for (int i = n - 1; i >= 0; i--) {
        frac[i] = (char)('0' + fp % 10);
        fp /= 10;
    }
    while (n > 0 && frac[n - 1] == '0')
        n--;
    put(w, ".", 1);
    put(w, frac, (size_t)n);
}

void nc_json_bool(nc_json *w, const char *key, bool v)
{
    before_value(w, key);
    puts_(w, v ? "true" : "false");
}

void nc_json_null(nc_json *w, const char *key)
{
    before_value(w, key);
    puts_(w, "null");
}

bool nc_json_finish(nc_json *w)
{
    put(w, "\n", 1);
    return !w->failed && w->depth == 0 && w->data;
}
