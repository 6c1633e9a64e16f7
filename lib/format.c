/* Formatted printing (see format.h). C11 7.21.6.1 is the model for the
   flags, width, precision and length modifiers we accept. */
#include "format.h"

#include <stdbool.h>
#include <stdint.h>

struct out {
    char *buf;
    size_t size;
    size_t len;
};

static void put(struct out *o, char c)
{
    if (o->len + 1 < o->size)
        o->buf[o->len] = c;
    o->len++;
}

struct spec {
    bool left, zero, plus, space;
    int width;
    int precision; /* -1: not given */
};

/* Emits sign/prefix, padding and digits in the order C specifies. */
static void emit_number(struct out *o, const struct spec *s, const char *prefix, const char *digits, int ndigits)
{
    int plen = 0;
    while (prefix[plen])
        plen++;
    int zeros = 0;
    if (s->precision >= 0 && ndigits < s->precision)
        zeros = s->precision - ndigits;
    int body = plen + zeros + ndigits;
    int pad = s->width > body ? s->width - body : 0;
    bool zero_pad = s->zero && !s->left && s->precision < 0;
    if (zero_pad) {
        zeros += pad;
        pad = 0;
    }
    if (!s->left)
        while (pad-- > 0)
            put(o, ' ');
    for (int i = 0; i < plen; i++)
        put(o, prefix[i]);
    while (zeros-- > 0)
        put(o, '0');
    for (int i = 0; i < ndigits; i++)
        put(o, digits[i]);
    if (s->left)
        while (pad-- > 0)
            put(o, ' ');
}

static int utoa_rev(uint64_t v, unsigned base, bool upper, char *tmp)
{
    const char *set = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    int n = 0;
    do {
        tmp[n++] = set[v % base];
        v /= base;
    } while (v);
    return n;
}

static void emit_integer(struct out *o, const struct spec *s, uint64_t mag, bool negative, unsigned base, bool upper)
{
    char rev[24], digits[24];
    int n = 0;
    /* C: precision 0 with value 0 prints no digits. */
    if (!(s->precision == 0 && mag == 0))
        n = utoa_rev(mag, base, upper, rev);
    for (int i = 0; i < n; i++)
        digits[i] = rev[n - 1 - i];
    const char *prefix = negative ? "-" : s->plus ? "+" : s->space ? " " : "";
    emit_number(o, s, prefix, digits, n);
}

int fmt_vformat(char *buf, size_t size, const char *fmt, va_list ap)
{
    struct out o = {buf, size, 0};
    for (const char *p = fmt; *p; p++) {
        if (*p != '%') {
            put(&o, *p);
            continue;
        }
        p++;
        struct spec s = {false, false, false, false, 0, -1};
        for (;; p++) {
            if (*p == '-')
                s.left = true;
            else if (*p == '0')
                s.zero = true;
            else if (*p == '+')
                s.plus = true;
            else if (*p == ' ')
                s.space = true;
            else
                break;
        }
        if (*p == '*') {
            s.width = va_arg(ap, int);
            if (s.width < 0) {
                s.left = true;
                s.width = -s.width;
            }
            p++;
        } else {
            while (*p >= '0' && *p <= '9')
                s.width = s.width * 10 + (*p++ - '0');
        }
        if (*p == '.') {
            p++;
            s.precision = 0;
            if (*p == '*') {
                s.precision = va_arg(ap, int);
                if (s.precision < 0)
                    s.precision = -1;
                p++;
            } else {
                while (*p >= '0' && *p <= '9')
                    s.precision = s.precision * 10 + (*p++ - '0');
            }
        }
        int length = 0; /* -2 hh, -1 h, 0 int, 1 long, 2 long long, 3 size_t/intmax */
        if (*p == 'h') {
            length = -1;
            if (*++p == 'h') {
                length = -2;
                p++;
            }
        } else if (*p == 'l') {
            length = 1;
            if (*++p == 'l') {
                length = 2;
                p++;
            }
        } else if (*p == 'z' || *p == 'j') {
            length = 3;
            p++;
        }
        switch (*p) {
        case 'd':
        case 'i': {
            int64_t v;
            if (length >= 1)
                v = length == 1 ? va_arg(ap, long) : va_arg(ap, long long);
            else
                v = va_arg(ap, int);
            if (length == -1)
                v = (short)v;
            else if (length == -2)
                v = (signed char)v;
            uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
            emit_integer(&o, &s, mag, v < 0, 10, false);
            break;
        }
        case 'u':
        case 'x':
        case 'X': {
            uint64_t v;
            if (length >= 1)
                v = length == 1 ? va_arg(ap, unsigned long) : va_arg(ap, unsigned long long);
            else
                v = va_arg(ap, unsigned int);
            if (length == -1)
                v = (unsigned short)v;
            else if (length == -2)
                v = (unsigned char)v;
            emit_integer(&o, &s, v, false, *p == 'u' ? 10 : 16, *p == 'X');
            break;
        }
        case 'p': {
            uint64_t v = (uint64_t)(uintptr_t)va_arg(ap, void *);
            char rev[24], digits[24];
            int n = utoa_rev(v, 16, false, rev);
            for (int i = 0; i < n; i++)
                digits[i] = rev[n - 1 - i];
            s.precision = -1;
            emit_number(&o, &s, "0x", digits, n);
            break;
        }
        case 'c': {
            char c = (char)va_arg(ap, int);
            s.precision = -1;
            s.zero = false;
            emit_number(&o, &s, "", &c, 1);
            break;
        }
        case 's': {
            const char *str = va_arg(ap, const char *);
            if (!str)
                str = "(null)";
            int n = 0;
            while (str[n] && (s.precision < 0 || n < s.precision))
                n++;
            s.precision = -1;
            s.zero = false;
            emit_number(&o, &s, "", str, n);
            break;
        }
        case '%':
            put(&o, '%');
            break;
        case '\0':
            p--; /* a lone trailing '%' */
            break;
        default:
            put(&o, '%');
            put(&o, *p);
            break;
        }
    }
    if (o.size)
        o.buf[o.len < o.size ? o.len : o.size - 1] = '\0';
    return (int)o.len;
}

int fmt_format(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = fmt_vformat(buf, size, fmt, ap);
    va_end(ap);
    return n;
}

const char *fmt_fixed(char buf[FMT_FIXED_CHARS], int64_t value, unsigned scale_digits, unsigned show_digits)
{
    if (scale_digits > 18)
        scale_digits = 18;
    if (show_digits > scale_digits)
        show_digits = scale_digits;
    uint64_t scale = 1, drop = 1;
    for (unsigned i = 0; i < scale_digits; i++)
        scale *= 10;
    for (unsigned i = show_digits; i < scale_digits; i++)
        drop *= 10;
    bool negative = value < 0;
    uint64_t mag = negative ? (uint64_t)0 - (uint64_t)value : (uint64_t)value;
    /* round half away from zero to the digits shown */
    uint64_t rounded = mag / drop + (mag % drop >= (drop + 1) / 2 && drop > 1 ? 1 : 0);
    uint64_t shown_scale = scale / drop;
    uint64_t ipart = rounded / shown_scale, fpart = rounded % shown_scale;
    if (rounded == 0)
        negative = false;
    if (show_digits == 0)
        fmt_format(buf, FMT_FIXED_CHARS, "%s%llu", negative ? "-" : "", (unsigned long long)ipart);
    else
        fmt_format(buf, FMT_FIXED_CHARS, "%s%llu.%0*llu", negative ? "-" : "", (unsigned long long)ipart,
                   (int)show_digits, (unsigned long long)fpart);
    return buf;
}
