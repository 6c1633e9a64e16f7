/* JSON record builder (RFC 8259). */
#include "record.h"

#include "format.h"

#define RECORD_RESERVE 24 /* room kept for ,"truncated":true}\n */

/* Members keep RECORD_RESERVE bytes free so the closing text always fits.
   A member that does not fit is taken back whole, key and all, from where
   it began: a reader must never see half a string or half an array, since
   a short array reads as a short series rather than a cut one. */
static void raw(struct record *r, const char *s, size_t n)
{
    if (r->overflow)
        return;
    if (r->len + n + RECORD_RESERVE >= sizeof r->buf) {
        r->overflow = true;
        r->len = r->member_start;
        r->buf[r->len] = '\0';
        return;
    }
    for (size_t i = 0; i < n; i++)
        r->buf[r->len++] = s[i];
    r->buf[r->len] = '\0';
}

/* The closing text goes into the room raw() kept free. */
static void raw_closing(struct record *r, const char *s)
{
    while (*s && r->len + 1 < sizeof r->buf)
        r->buf[r->len++] = *s++;
    r->buf[r->len] = '\0';
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

/* Every member starts here; inside an array there are no keys, so this is
   always a member of the object itself, the unit an overflow takes back. */
static void key(struct record *r, const char *k)
{
    if (!r->depth)
        r->member_start = r->len;
    if (!r->first)
        raw(r, ",", 1);
    r->first = false;
    quoted(r, k, (size_t)-1);
    raw(r, ":", 1);
}

void record_begin(struct record *r, const char *type)
{
    r->len = 0;
    r->member_start = 0;
    r->depth = 0;
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

void record_object_begin(struct record *r, const char *k)
{
    key(r, k);
    raw(r, "{", 1);
    r->first = true;
    r->depth++;
}

void record_object_end(struct record *r)
{
    if (r->depth)
        r->depth--;
    raw(r, "}", 1);
    r->first = false;
}

void record_array_fixed(struct record *r, int64_t value, unsigned scale_digits)
{
    char tmp[FMT_FIXED_CHARS];
    if (!r->first)
        raw(r, ",", 1);
    r->first = false;
    raw_str(r, fmt_fixed(tmp, value, scale_digits, scale_digits));
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

bool record_truncated(const struct record *r) { return r->overflow; }

size_t record_room(const struct record *r)
{
    if (r->overflow || r->len + RECORD_RESERVE + 1 >= sizeof r->buf)
        return 0;
    return sizeof r->buf - r->len - RECORD_RESERVE - 1;
}

const char *record_end(struct record *r)
{
    if (r->overflow) {
        /* Every member left is whole (raw() took back the one that did not
           fit), so closing the object is all it takes to be valid JSON. */
        raw_closing(r, r->buf[r->len - 1] == '{' ? "\"truncated\":true" : ",\"truncated\":true");
    }
    raw_closing(r, "}\n");
    return r->buf;
}
