/* JSON record builder (RFC 8259). */
#include "record.h"

#include "format.h"

#define RECORD_RESERVE 24 /* room kept for ,"truncated":true}\n */

/* Members keep RECORD_RESERVE bytes free so the closing text always fits. */
static void raw_reserving(struct record *r, const char *s, size_t n, size_t reserve)
{
    if (r->overflow)
        return;
    if (r->len + n + reserve >= sizeof r->buf) {
        r->overflow = true;
        return;
    }
    for (size_t i = 0; i < n; i++)
        r->buf[r->len++] = s[i];
    r->buf[r->len] = '\0';
}

static void raw(struct record *r, const char *s, size_t n) { raw_reserving(r, s, n, RECORD_RESERVE); }

static void raw_closing(struct record *r, const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    raw_reserving(r, s, n, 0);
}

static void raw_str(struct record *r, const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    raw(r, s, n);
}

static void quoted(struct record *r, const char *s, size_t max)
{
    raw(r, "\"", 1);
    for (size_t i = 0; i < max && s[i]; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            raw(r, esc, 2);
        } else if (c < 0x20 || c >= 0x7F) {
            /* firmware strings are not UTF-8: escape every byte outside ASCII */
            int n = fmt_format(esc, sizeof esc, "\\u%04x", c);
            raw(r, esc, (size_t)n);
        } else {
            raw(r, (const char *)&c, 1);
        }
    }
    raw(r, "\"", 1);
}

static void key(struct record *r, const char *k)
{
    if (!r->first)
        raw(r, ",", 1);
    r->first = false;
    quoted(r, k, (size_t)-1);
    raw(r, ":", 1);
}

void record_begin(struct record *r, const char *type)
{
    r->len = 0;
    r->overflow = false;
    r->first = true;
    r->buf[0] = '\0';
    raw_str(r, RECORD_PREFIX "{");
    record_str(r, "type", type);
}

void record_str(struct record *r, const char *k, const char *value) { record_strn(r, k, value, (size_t)-1); }

void record_strn(struct record *r, const char *k, const char *value, size_t n)
{
    key(r, k);
    if (value)
        quoted(r, value, n);
    else
        raw_str(r, "null");
}

void record_u64(struct record *r, const char *k, uint64_t value)
{
    char tmp[24];
    key(r, k);
    raw(r, tmp, (size_t)fmt_format(tmp, sizeof tmp, "%llu", (unsigned long long)value));
}

void record_i64(struct record *r, const char *k, int64_t value)
{
    char tmp[24];
    key(r, k);
    raw(r, tmp, (size_t)fmt_format(tmp, sizeof tmp, "%lld", (long long)value));
}

void record_hex(struct record *r, const char *k, uint64_t value)
{
    char tmp[24];
    fmt_format(tmp, sizeof tmp, "0x%llx", (unsigned long long)value);
    record_str(r, k, tmp);
}

void record_fixed(struct record *r, const char *k, int64_t value, unsigned scale_digits)
{
    char tmp[FMT_FIXED_CHARS];
    key(r, k);
    raw_str(r, fmt_fixed(tmp, value, scale_digits, scale_digits));
}

void record_bool(struct record *r, const char *k, bool value)
{
    key(r, k);
    raw_str(r, value ? "true" : "false");
}

void record_null(struct record *r, const char *k)
{
    key(r, k);
    raw_str(r, "null");
}

void record_array_begin(struct record *r, const char *k)
{
    key(r, k);
    raw(r, "[", 1);
    r->first = true;
}

void record_array_u64(struct record *r, uint64_t value)
{
    /* digits by hand: histograms write thousands of these */
    char tmp[24];
    int n = sizeof tmp;
    do {
        tmp[--n] = (char)('0' + value % 10);
        value /= 10;
    } while (value);
    if (!r->first)
        raw(r, ",", 1);
    r->first = false;
    raw(r, tmp + n, sizeof tmp - (size_t)n);
}

void record_array_i64(struct record *r, int64_t value)
{
    if (value < 0) {
        if (!r->first)
            raw(r, ",", 1);
        r->first = true; /* the sign, then the digits without a second comma */
        raw(r, "-", 1);
        record_array_u64(r, (uint64_t)0 - (uint64_t)value);
        return;
    }
    record_array_u64(r, (uint64_t)value);
}

void record_array_end(struct record *r)
{
    raw(r, "]", 1);
    r->first = false;
}

const char *record_end(struct record *r)
{
    if (r->overflow) {
        /* Cut at the last complete member (the last ',' outside a string),
           close any open array, mark it: always valid JSON. */
        bool in_str = false;
        int depth = 0, depth_at_cut = 0;
        size_t cut = 0;
        for (size_t i = 0; i < r->len; i++) {
            char c = r->buf[i];
            if (in_str) {
                if (c == '\\')
                    i++;
                else if (c == '"')
                    in_str = false;
            } else if (c == '"') {
                in_str = true;
            } else if (c == '[') {
                depth++;
            } else if (c == ']') {
                depth--;
            } else if (c == ',') {
                cut = i;
                depth_at_cut = depth;
            }
        }
        r->len = cut;
        r->overflow = false;
        while (depth_at_cut-- > 0)
            raw_closing(r, "]");
        raw_closing(r, ",\"truncated\":true");
    }
    raw_closing(r, "}\n");
    return r->buf;
}
